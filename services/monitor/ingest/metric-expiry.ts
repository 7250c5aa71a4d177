/**
 * When the ingested series store sweeps expired series: lazily, with no timer, at most once a
 * second unforced, and visiting the series only when the oldest one kept has expired (so a flood of
 * refused samples does not turn into a flood of sweeps). The store does the visiting.
 */
import type { Clock } from '../../../shared/runtime/clock';

export class SeriesExpiry {
  private readonly sweepEveryMs: number;
  private nextSweepAt: number;
  /** Update time of the oldest series kept, or earlier (Infinity: none). */
  private oldestKept = Infinity;

  constructor(
    private readonly clock: Clock,
    private readonly ttlMs: number,
  ) {
    // A sweep visits every series: at most this often unforced.
    this.sweepEveryMs = Math.min(1000, ttlMs);
    this.nextSweepAt = clock.monotonic() + this.sweepEveryMs;
  }

  /** The update time of a series written now (update times only grow: the oldest kept stays a bound). */
  touch(): number {
    const now = this.clock.monotonic();
    if (now < this.oldestKept) this.oldestKept = now;
    return now;
  }

  /**
   * When a sweep should visit the series now: the update time at or before which a series has
   * expired; undefined when not due (unforced within the interval) or when nothing kept has expired.
   */
  expiredAt(force: boolean): number | undefined {
    const now = this.clock.monotonic();
    if (!force && now < this.nextSweepAt) return undefined;
    this.nextSweepAt = now + this.sweepEveryMs;
    const expiredAt = now - this.ttlMs;
    return this.oldestKept > expiredAt ? undefined : expiredAt;
  }

  /** Records the update time of the oldest series a visit kept (Infinity: none). */
  swept(oldestKept: number): void {
    this.oldestKept = oldestKept;
  }
}
