import { isUuid, newId } from '../../../shared/runtime/ids';

describe('ids', () => {
  it('newId() makes a canonical (lower-case, hyphenated) version 4 UUID, a new one per call', () => {
    const ids = new Set(Array.from({ length: 1000 }, () => newId()));
    expect(ids.size).toBe(1000);
    for (const id of ids)
      expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });

  it('isUuid accepts a canonical UUID and its upper-case spelling', () => {
    const id = newId();
    expect(isUuid(id)).toBe(true);
    expect(isUuid(id.toUpperCase())).toBe(true);
    expect(isUuid('00000000-0000-0000-0000-000000000000')).toBe(true);
  });

  it.each([
    ['empty', ''],
    ['no hyphens', '0123456789abcdef0123456789abcdef'],
    ['braces', '{01234567-89ab-cdef-0123-456789abcdef}'],
    ['a non-hex digit', '01234567-89ab-cdef-0123-456789abcdeg'],
    ['one digit short', '01234567-89ab-cdef-0123-456789abcde'],
    ['trailing newline', '01234567-89ab-cdef-0123-456789abcdef\n'],
    ['leading space', ' 01234567-89ab-cdef-0123-456789abcdef'],
    ['SQL', "' OR 1=1 --"],
    ['emoji', '01234567-89ab-cdef-0123-456789abcd😀'],
  ])('isUuid rejects %s', (_name, value) => {
    expect(isUuid(value)).toBe(false);
  });

  it('isUuid rejects what is not a string', () => {
    expect(isUuid(undefined)).toBe(false);
    expect(isUuid(null)).toBe(false);
    expect(isUuid(42)).toBe(false);
    expect(isUuid({ toString: () => newId() })).toBe(false);
  });
});
