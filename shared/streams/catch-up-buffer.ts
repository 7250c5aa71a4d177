/**
 * The per-reader buffer of a live stream that can always catch up from a store (WatchInbox, the
 * admin event stream, WatchDeliveries): events are numbered and kept in a log, so the buffer may drop
 * them. It holds at most `capacity` events; when more arrive, it empties and marks the reader
 * `behind`, and the reader reads the store after its last seq, with no gap and no duplicate, then
 * carries on live. So a burst never closes a reader that keeps up. Only a reader that has really
 * stopped (events waiting and no request for one for `stallMs`) fails, with ResourceExhaustedError
 * carrying `stalledMessage`, and resumes later from its last cursor.
 *
 * The stall check runs when events arrive, so an idle stream is never closed.
 *
 * A stream may choose the strict rule instead (`overflow: 'close'`, WatchAlerts): a reader whose
 * buffer is full when one more arrives is closed at once, with `stalledMessage`; while it catches up
 * from the store (a resume), what arrives is dropped and read from the store as above.
 */
import { ResourceExhaustedError } from '../errors';

/** What `next()` gives when the reader must read the store after its last seq. */
export const BEHIND: unique symbol = Symbol('behind');

/** What a full buffer does: make its reader catch up from the store, or close it (see the file comment). */
export type OverflowRule = 'catch-up' | 'close';

/** One reader's bounded buffer (see the file comment). */
export class CatchUpBuffer<E> {
  buffer: E[] = [];
  /** Events were dropped (or never read): the reader must read the store after its last seq. */
  behind = false;
  closed = false;
  failure: Error | null = null;
  /** The last time the reader asked for an event (or was given one). */
  lastDemandAt: number;
  private wake: (() => void) | null = null;

  constructor(
    private readonly capacity: number,
    now: number,
    private readonly stalledMessage: string,
    private readonly overflow: OverflowRule = 'catch-up',
  ) {
    this.lastDemandAt = now;
  }

  /** Free buffer slots (0 while behind: the reader is reading the store). */
  get room(): number {
    return this.behind || this.closed ? 0 : this.capacity - this.buffer.length;
  }

  /** Offers an event; returns false when the reader has stalled (the buffer just failed). */
  push(event: E, now: number, stallMs: number): boolean {
    if (this.closed) return true;
    // A reader parked in next() is demanding events right now.
    if (this.wake) this.lastDemandAt = now;
    if (this.behind || this.buffer.length >= this.capacity) {
      const stalled = this.overflow === 'close' ? !this.behind : now - this.lastDemandAt >= stallMs;
      if (stalled) {
        this.fail(new ResourceExhaustedError(this.stalledMessage));
        return false;
      }
      // Everything dropped here is in the store; the reader reads it again.
      this.buffer = [];
      this.behind = true;
      this.signal();
      return true;
    }
    this.buffer.push(event);
    this.signal();
    return true;
  }

  fail(err: Error): void {
    this.failure = err;
    this.close();
  }

  close(): void {
    this.closed = true;
    this.buffer = [];
    this.signal();
  }

  private signal(): void {
    const wake = this.wake;
    this.wake = null;
    wake?.();
  }

  /** The next buffered event, BEHIND when the reader must read the store, null once closed. */
  async next(now: () => number): Promise<E | typeof BEHIND | null> {
    for (;;) {
      if (this.failure) throw this.failure;
      if (this.closed) return null;
      this.lastDemandAt = now();
      if (this.behind) return BEHIND;
      const event = this.buffer.shift();
      if (event) return event;
      await new Promise<void>((resolve) => (this.wake = resolve));
    }
  }
}
