import { InvalidArgumentError } from '../../../shared/errors';
import { pageSize, pageSizeParam } from '../../../shared/storage/page-size';

const limits = { default: 50, max: 500 };

/** The error `run` throws (undefined when it does not). */
function errorOf(run: () => unknown): InvalidArgumentError | undefined {
  try {
    run();
  } catch (err) {
    return err as InvalidArgumentError;
  }
  return undefined;
}

describe('pageSize (the page_size of every list RPC)', () => {
  it.each([
    [0, 50],
    [undefined, 50],
    [1, 1],
    [50, 50],
    [499, 499],
    [500, 500],
    [501, 500],
    [2_147_483_647, 500],
  ])('when %p is asked for, the page holds up to %p', (requested, expected) => {
    expect(pageSize(requested, limits)).toBe(expected);
  });

  it('when the default is the maximum (the inbox), 0 means the maximum', () => {
    expect(pageSize(0, { default: 3, max: 3 })).toBe(3);
    expect(pageSize(4, { default: 3, max: 3 })).toBe(3);
  });

  it.each([-1, 1.5, Number.NaN, Number.POSITIVE_INFINITY])(
    'when %p is asked for, the call is INVALID_ARGUMENT on page_size',
    (requested) => {
      const error = errorOf(() => pageSize(requested, limits));
      expect(error).toBeInstanceOf(InvalidArgumentError);
      expect(error?.message).toBe('page_size must be a non-negative integer');
      expect(error?.field).toBe('page_size');
    },
  );

  it('rejects limits that cannot make a page', () => {
    expect(() => pageSize(1, { default: 0, max: 10 })).toThrow(RangeError);
    expect(() => pageSize(1, { default: 20, max: 10 })).toThrow(RangeError);
  });
});

describe('pageSizeParam (the `limit` query parameter of a list route)', () => {
  it.each([
    [undefined, 50],
    ['1', 1],
    ['500', 500],
  ])('when limit is %p, the page holds up to %p', (raw, expected) => {
    expect(pageSizeParam(raw, limits)).toBe(expected);
  });

  it.each(['0', '501', '-1', '2.5', 'abc', '', '1e3', ' 5', '٣', '0x10', '9999999999'])(
    'when limit is %p, the request is INVALID_ARGUMENT on limit',
    (raw) => {
      const error = errorOf(() => pageSizeParam(raw, limits));
      expect(error).toBeInstanceOf(InvalidArgumentError);
      expect(error?.message).toBe('limit must be an integer from 1 to 500');
      expect(error?.field).toBe('limit');
    },
  );
});
