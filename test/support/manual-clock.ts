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
