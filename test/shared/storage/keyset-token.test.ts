import { InvalidArgumentError } from '../../../shared/errors';
import { newId } from '../../../shared/runtime/ids';
import { decodeKeysetToken, encodeKeysetToken } from '../../../shared/storage/keyset-token';

/** The token of `key` with its body changed by `change`. */
function reshaped(
  binding: string,
  key: { createdAt: string; id: string },
  change: (body: Record<string, unknown>) => void,
) {
  const body = JSON.parse(Buffer.from(encodeKeysetToken(binding, key), 'base64url').toString('utf8'));
  change(body);
  return Buffer.from(JSON.stringify(body)).toString('base64url');
}

describe('keyset token ids (the one UUID validator)', () => {
  const key = { createdAt: '2026-11-26T12:00:00.000Z', id: newId() };

  it('a token round-trips its position', () => {
    expect(decodeKeysetToken('b', encodeKeysetToken('b', key))).toEqual(key);
  });

  it('an upper-case id in a token is read as the canonical lower-case id', () => {
    const token = reshaped('b', key, (body) => (body.i = key.id.toUpperCase()));
    expect(decodeKeysetToken('b', token)).toEqual(key);
  });

  it.each(['not-a-uuid', '', `${key.id}\n`, 42])('a token whose id is %p is INVALID_ARGUMENT', (id) => {
    const token = reshaped('b', key, (body) => (body.i = id));
    expect(() => decodeKeysetToken('b', token)).toThrow(InvalidArgumentError);
  });
});
