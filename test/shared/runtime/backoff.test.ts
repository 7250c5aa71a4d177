import { Backoff } from '../../../shared/runtime/backoff';

describe('Backoff', () => {
  it('without jitter, the delay starts at baseMs and doubles per retry up to maxMs', () => {
    const backoff = new Backoff({ baseMs: 100, maxMs: 2000 });
    expect([1, 2, 3, 4, 5, 6, 7].map((n) => backoff.delayMs(n))).toEqual([
      100, 200, 400, 800, 1600, 2000, 2000,
    ]);
  });

  it('when the retry number is huge, the delay stays at maxMs instead of overflowing', () => {
    expect(new Backoff({ baseMs: 200, maxMs: 5000 }).delayMs(100_000)).toBe(5000);
  });

  it('a retry number below 1 is treated as the first retry', () => {
    const backoff = new Backoff({ baseMs: 100, maxMs: 2000 });
    expect(backoff.delayMs(0)).toBe(100);
    expect(backoff.delayMs(-3)).toBe(100);
  });

  it('with full jitter, the delay is uniform in [0, ceiling): random() scales the ceiling', () => {
    const top = new Backoff({ baseMs: 1000, maxMs: 10000, jitter: 'full', random: () => 0.999999 });
    expect([1, 2, 3, 4, 5].map((n) => top.delayMs(n))).toEqual([999, 1999, 3999, 7999, 9999]);
    expect(new Backoff({ baseMs: 1000, maxMs: 10000, jitter: 'full', random: () => 0 }).delayMs(4)).toBe(0);
    expect(new Backoff({ baseMs: 1000, maxMs: 10000, jitter: 'full', random: () => 0.25 }).delayMs(2)).toBe(
      500,
    );
  });

  it('a Retry-After replaces the backoff, rounded up to a whole ms and capped at maxMs', () => {
    const backoff = new Backoff({ baseMs: 1000, maxMs: 10000, jitter: 'full', random: () => 0.5 });
    expect(backoff.delayMs(1, 2500.2)).toBe(2501);
    expect(backoff.delayMs(1, 0)).toBe(0);
    expect(backoff.delayMs(1, 86_400_000)).toBe(10000);
  });

  it('a Retry-After that is negative or not finite is ignored', () => {
    const backoff = new Backoff({ baseMs: 1000, maxMs: 10000, jitter: 'full', random: () => 0.5 });
    expect(backoff.delayMs(2, -5)).toBe(1000);
    expect(backoff.delayMs(2, Number.NaN)).toBe(1000);
    expect(backoff.delayMs(2, Number.POSITIVE_INFINITY)).toBe(1000);
  });

  it('when baseMs is above maxMs, every delay is maxMs', () => {
    expect(new Backoff({ baseMs: 10, maxMs: 5 }).delayMs(1)).toBe(5);
  });

  it('rejects settings that cannot make a delay', () => {
    expect(() => new Backoff({ baseMs: -1, maxMs: 10 })).toThrow(RangeError);
    expect(() => new Backoff({ baseMs: 10, maxMs: -5 })).toThrow(RangeError);
    expect(() => new Backoff({ baseMs: Number.NaN, maxMs: 5 })).toThrow(RangeError);
  });

  it('sleep(retry) waits the delay and can be cut short by an aborted signal', async () => {
    const backoff = new Backoff({ baseMs: 60_000, maxMs: 60_000 });
    const controller = new AbortController();
    const waiting = backoff.sleep(1, controller.signal);
    controller.abort();
    await expect(waiting).resolves.toBeUndefined();
    await expect(new Backoff({ baseMs: 0, maxMs: 0 }).sleep(3)).resolves.toBeUndefined();
  });
});
