/**
 * The one injectable clock (and timers): tests drive durations, caches, leases, due times and timers
 * by hand instead of sleeping. Every class that reads the time takes a `Clock` (default
 * `systemClock`); code that stamps records reads Dates from it through `dateReader`.
 */

/** Time source. */
export interface Clock {
  /** Monotonic milliseconds, for durations and cache ages. */
  monotonic(): number;
  /** Wall-clock milliseconds since the epoch, for timestamps shown to people. */
  now(): number;
}

/** Opaque timer handle. */
export type TimerHandle = unknown;

/** Timer functions; the real ones are unref'ed so monitoring never keeps a process alive. */
export interface Timers {
  setTimeout(fn: () => void, ms: number): TimerHandle;
  clearTimeout(handle: TimerHandle): void;
  setInterval(fn: () => void, ms: number): TimerHandle;
  clearInterval(handle: TimerHandle): void;
}

/** The process clock. */
export const systemClock: Clock = {
  monotonic: () => performance.now(),
  now: () => Date.now(),
};

/** Node timers, unref'ed. */
export const systemTimers: Timers = {
  setTimeout(fn, ms) {
    const t = setTimeout(fn, ms);
    t.unref();
    return t;
  },
  clearTimeout(handle) {
    clearTimeout(handle as NodeJS.Timeout);
  },
  setInterval(fn, ms) {
    const t = setInterval(fn, ms);
    t.unref();
    return t;
  },
  clearInterval(handle) {
    clearInterval(handle as NodeJS.Timeout);
  },
};

/**
 * Reads `clock`'s wall time as a Date, for code that stamps records (the system clock when none is
 * given). Every class that takes a clock takes a {@link Clock}; this is how it reads dates from it.
 */
export function dateReader(clock: Clock = systemClock): () => Date {
  return () => new Date(clock.now());
}

/**
 * The instants a time may hold where it is kept or answered: 0001-01-01T00:00:00Z to
 * 9999-12-31T23:59:59.999Z, the range of google.protobuf.Timestamp (and of RFC 3339's four-digit
 * years). A time beyond it cannot be written back to a caller (`toISOString` throws on a time past
 * year 275760, protobuf refuses to encode a Timestamp past 9999), so it is refused where it arrives.
 */
export const TIME_RANGE_MS = { min: -62_135_596_800_000, max: 253_402_300_799_999 } as const;

/** Whether `ms` is an instant within {@link TIME_RANGE_MS} (NaN and infinities are not). */
export function inTimeRange(ms: number): boolean {
  return ms >= TIME_RANGE_MS.min && ms <= TIME_RANGE_MS.max;
}
