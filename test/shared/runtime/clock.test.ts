import { type Clock, dateReader, systemClock, systemTimers } from '../../../shared/runtime/clock';
import { ManualClock } from '../../support/manual-clock';

describe('the one clock', () => {
  it('systemClock.now() is wall-clock milliseconds since the epoch', () => {
    const before = Date.now();
    const now = systemClock.now();
    const after = Date.now();
    expect(now).toBeGreaterThanOrEqual(before);
    expect(now).toBeLessThanOrEqual(after);
  });

  it('systemClock.monotonic() never goes backwards', () => {
    let last = systemClock.monotonic();
    for (let i = 0; i < 1000; i++) {
      const next = systemClock.monotonic();
      expect(next).toBeGreaterThanOrEqual(last);
      last = next;
    }
  });

  it('dateReader reads the injected clock as a new Date each call', () => {
    let wall = Date.parse('2030-05-06T07:08:09.010Z');
    const clock: Clock = { now: () => wall, monotonic: () => 0 };
    const read = dateReader(clock);
    const first = read();
    expect(first.toISOString()).toBe('2030-05-06T07:08:09.010Z');
    wall += 1500;
    expect(read().toISOString()).toBe('2030-05-06T07:08:10.510Z');
    expect(first.toISOString()).toBe('2030-05-06T07:08:09.010Z');
  });

  it('dateReader without a clock reads the system clock', () => {
    const before = Date.now();
    const date = dateReader()();
    expect(date.getTime()).toBeGreaterThanOrEqual(before);
    expect(date.getTime()).toBeLessThanOrEqual(Date.now());
  });

  it("the tests' ManualClock is a Clock that moves only when told, wall and monotonic together", () => {
    const clock = new ManualClock(new Date('2026-01-01T00:00:00.000Z'));
    const read = dateReader(clock);
    expect(read().toISOString()).toBe('2026-01-01T00:00:00.000Z');
    clock.advance(60_000);
    expect(read().toISOString()).toBe('2026-01-01T00:01:00.000Z');
    expect(clock.monotonic()).toBe(clock.now());
    expect(clock.date()).not.toBe(clock.date());
  });

  it('systemTimers run a callback and cancel one', async () => {
    let fired = 0;
    const cancelled = systemTimers.setTimeout(() => fired--, 0);
    systemTimers.clearTimeout(cancelled);
    await new Promise<void>((resolve) => systemTimers.setTimeout(() => (fired++, resolve()), 1));
    expect(fired).toBe(1);
  });
});
