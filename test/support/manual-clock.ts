/** The clock tests move by hand: one {@link Clock} for every area's tests. */
import type { Clock } from '../../shared/runtime/clock';

/** A clock the test moves by hand; wall and monotonic time move together. */
export class ManualClock implements Clock {
  constructor(public current = new Date('2026-11-01T12:00:00.000Z')) {}
  now(): number {
    return this.current.getTime();
  }
  monotonic(): number {
    return this.current.getTime();
  }
  /** The current time as a Date (a new object each call). */
  date(): Date {
    return new Date(this.current.getTime());
  }
  advance(ms: number): void {
    this.current = new Date(this.current.getTime() + ms);
  }
}

/**
 * A clock at the epoch. A memory event log dates its first seq by its clock (`epochFirstSeq`, past
 * every seq an earlier process handed out); one made at the epoch numbers from 1, as a database's
 * log does, so a contract shared with the database stores can name seqs 1, 2, 3.
 */
export function epochClock(): ManualClock {
  return new ManualClock(new Date(0));
}
