/**
 * The period of an SLO's error budget: a rolling window ("the last 30 days") or a calendar month
 * ("this month", starting again at local midnight on the 1st in a time zone). Rule windows are scaled
 * to the period's nominal length, and Sloth's `error_budget_percent` refers to it.
 */
import { InvalidSLOError } from '../errors';
import { isValidTimeZone, localInstant, wallTime } from '../../time/zone';

/** A rolling window of `seconds`, or a calendar month in `timeZone` (IANA). */
export type SloPeriod = { kind: 'rolling'; seconds: number } | { kind: 'calendar_month'; timeZone: string };

const HOUR = 3600;
const DAY = 24 * HOUR;
/** Shortest rolling period the library takes (the wire asks for a day at least). */
export const MIN_ROLLING_PERIOD_SECONDS = HOUR;
/** Longest rolling period: bounds the hour buckets of an SLO at 2,161. */
export const MAX_ROLLING_PERIOD_SECONDS = 90 * DAY;
/** Rolling 30 days: the SRE workbook's period, and the one its alert table is written for. */
export const DEFAULT_SLO_PERIOD: SloPeriod = Object.freeze({ kind: 'rolling', seconds: 30 * DAY });
/** The nominal length of a calendar month: rules do not change between a February and a March. */
export const CALENDAR_MONTH_NOMINAL_SECONDS = 30 * DAY;

/** Throws InvalidSLOError (the message starts with `label`) on a malformed period or an unknown zone. */
export function validatePeriod(period: SloPeriod, label: string): void {
  if (period.kind === 'rolling') {
    const s = period.seconds;
    if (!(Number.isFinite(s) && s >= MIN_ROLLING_PERIOD_SECONDS && s <= MAX_ROLLING_PERIOD_SECONDS))
      throw new InvalidSLOError(`${label}: a rolling period must be between 1 hour and 90 days`);
    return;
  }
  if (period.kind === 'calendar_month') {
    if (!isValidTimeZone(period.timeZone))
      throw new InvalidSLOError(
        `${label}: time_zone must be an IANA time zone such as Europe/Berlin, got ${JSON.stringify(period.timeZone)}`,
      );
    return;
  }
  throw new InvalidSLOError(`${label}: unknown period`);
}

/** Start of the period containing `nowMs`: rolling, now minus the period; calendar, 00:00 on the 1st, local time. */
export function periodStartMs(period: SloPeriod, nowMs: number): number {
  if (period.kind === 'rolling') return nowMs - period.seconds * 1000;
  const w = wallTime(period.timeZone, nowMs);
  return localInstant(w.year, w.month, 1, 0, 0, period.timeZone).getTime();
}

/** Seconds the default rule windows are scaled to: rolling, its length; calendar month, 30 days. */
export function periodNominalSeconds(period: SloPeriod): number {
  return period.kind === 'rolling' ? period.seconds : CALENDAR_MONTH_NOMINAL_SECONDS;
}

/** The longest span of events an evaluation reads: rolling, its length; calendar month, 31 days and an hour. */
export function periodSpanSeconds(period: SloPeriod): number {
  return period.kind === 'rolling' ? period.seconds : 31 * DAY + HOUR;
}

/** `30d`, `28d`, `calendar month (Europe/Berlin)`. */
export function formatPeriod(period: SloPeriod): string {
  return period.kind === 'rolling' ? formatWindow(period.seconds) : `calendar month (${period.timeZone})`;
}

/** A duration as rule names write it: 3600 -> `1h`, 300 -> `5m`, 259200 -> `3d`, 5400 -> `1h30m`, 90 -> `1m30s`. */
export function formatWindow(seconds: number): string {
  let rest = Math.round(seconds);
  let out = '';
  for (const [unit, size] of [
    ['d', DAY],
    ['h', HOUR],
    ['m', 60],
    ['s', 1],
  ] as const) {
    const n = Math.floor(rest / size);
    if (n > 0) out += `${n}${unit}`;
    rest -= n * size;
  }
  return out === '' ? '0s' : out;
}
