/** The fan-out's own bounds: line error text and delivery idempotency keys. */
import {
  digestDeliveryKey,
  digestKey,
  fanOutKey,
  lineError,
  MAX_LINE_ERROR,
} from '../../../services/notification/notify/fan-out';
import { textLength, wellFormed } from '../../../shared/text/cut';

describe('fan-out bounds', () => {
  it('a line error longer than the bound is cut on code points with an ellipsis, never inside a surrogate pair', () => {
    const long = '😀字ש'.repeat(400);
    const cut = lineError(long);
    expect(textLength(cut, 'code_point')).toBe(MAX_LINE_ERROR);
    expect(cut.endsWith('…')).toBe(true);
    expect(wellFormed(cut)).toBe(cut);
    const exact = '😀'.repeat(MAX_LINE_ERROR);
    expect(lineError(exact)).toBe(exact);
  });

  it('a delivery key stays within the pipeline’s key bound whatever the contact point, and differs per contact point', () => {
    const id = '2b1e4f0e-8a7c-4d8e-9f10-1234567890ab';
    const longAddress = `${'a'.repeat(64)}@${'b'.repeat(185)}.com`;
    const key = fanOutKey(id, 'email', longAddress);
    expect(key.length).toBeLessThanOrEqual(96);
    expect(fanOutKey(id, 'email', 'a@example.com')).not.toBe(fanOutKey(id, 'email', 'b@example.com'));
    expect(fanOutKey(id, 'email', 'a@example.com')).toBe(fanOutKey(id, 'email', 'a@example.com'));
  });
});

describe('digest bounds', () => {
  it('a digest key from a data field is kept whole (the book hashes a long one, so threads sharing 256 code points stay apart); absent or null fields key by the category', () => {
    const long = '😀字ש'.repeat(200);
    expect(digestKey('thread', { thread: `${long}a` }, 'comments')).toBe(`${long}a`);
    expect(digestKey('thread', { thread: `${long}b` }, 'comments')).toBe(`${long}b`);
    expect(digestKey('thread', { thread: 12 }, 'comments')).toBe('12');
    expect(digestKey('thread', { thread: { a: 'ש' } }, 'comments')).toBe('{"a":"ש"}');
    expect(digestKey('thread', {}, 'comments')).toBe('comments');
    expect(digestKey('thread', { thread: null }, 'comments')).toBe('comments');
    expect(digestKey('', { thread: 'x' }, 'comments')).toBe('comments');
  });

  it('a digest delivery key is derived from the digest id, within the pipeline’s key bound, one per contact point', () => {
    const id = '2b1e4f0e-8a7c-4d8e-9f10-1234567890ab';
    const key = digestDeliveryKey(id, 'email', `${'a'.repeat(64)}@${'b'.repeat(185)}.com`);
    expect(key.length).toBeLessThanOrEqual(96);
    expect(digestDeliveryKey(id, 'email', 'a@example.com')).toBe(
      digestDeliveryKey(id, 'email', 'a@example.com'),
    );
    expect(digestDeliveryKey(id, 'email', 'a@example.com')).not.toBe(
      digestDeliveryKey(id, 'email', 'b@example.com'),
    );
    // Ids longer than a UUID are hashed, never cut into one another.
    const long = `${'d'.repeat(40)}-1`;
    const other = `${'d'.repeat(40)}-2`;
    expect(digestDeliveryKey(long, 'email', 'a@example.com').length).toBeLessThanOrEqual(96);
    expect(digestDeliveryKey(long, 'email', 'a@example.com')).not.toBe(
      digestDeliveryKey(other, 'email', 'a@example.com'),
    );
  });
});
