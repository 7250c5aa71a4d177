/** The fan-out's own bounds: line error text and delivery idempotency keys. */
import { fanOutKey, lineError, MAX_LINE_ERROR } from '../../../services/notification/notify/fan-out';
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
