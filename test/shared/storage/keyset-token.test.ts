import { InvalidArgumentError } from '../../../shared/errors';
import { newId } from '../../../shared/runtime/ids';
import {
  decodeKeysetToken,
  decodeTextKeyToken,
  encodeKeysetToken,
  encodeTextKeyToken,
} from '../../../shared/storage/keyset-token';

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

describe('text key tokens (a listing ordered by one text key)', () => {
  // The longest user id (128 code points) of the widest characters: 512 UTF-8 bytes.
  const longest = '😀'.repeat(128);

  it('when a token is decoded under its own binding, the key comes back whole, emoji, CJK and RTL included', () => {
    for (const key of ['user-1', longest, '中文-עברית-مرحبا']) {
      expect(decodeTextKeyToken('topic:a', encodeTextKeyToken('topic:a', key))).toBe(key);
    }
  });

  it('when a token is decoded under another binding, or is damaged or oversized, it is INVALID_ARGUMENT on the field', () => {
    const token = encodeTextKeyToken('topic:a', 'user-1');
    expect(() => decodeTextKeyToken('topic:b', token)).toThrow(InvalidArgumentError);
    expect(() => decodeTextKeyToken('topic:a', token.slice(0, -3))).toThrow(
      /page_token is not a valid page token/,
    );
    expect(() => decodeTextKeyToken('topic:a', 'x'.repeat(1025))).toThrow(InvalidArgumentError);
    // A time-and-id token is not a text key token.
    const other = encodeKeysetToken('topic:a', { createdAt: '2026-01-01T00:00:00.000Z', id: newId() });
    expect(() => decodeTextKeyToken('topic:a', other)).toThrow(InvalidArgumentError);
  });
});
