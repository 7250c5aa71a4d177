/**
 * The digest window (issue 26), pure: which digest an event goes to, by the event's own time.
 *
 * A digest's window is `[start, end)`:
 * - `window` (rolling, seconds W): `[t, t + W)` from the event that opens it;
 * - `daily_at` ("09:00"): from the previous `daily_at` to the next one, in the user's time zone
 *   (`''`: UTC), so across DST a window is 23 or 25 hours long. A `daily_at` that does not exist
 *   that day (the spring-forward gap) is the first instant after the gap; one that exists twice
 *   (the autumn repeat) is its first occurrence (the rules of quiet hours).
 *
 * Placement of an event at `t` among the key's accepting digests (open, not full, not deferred):
 * 1. the one whose window holds `t`;
 * 2. else the earliest one whose window starts after `t` (an event older than every accepting digest:
 *    its own digest was already sent, or it arrived out of order before the first);
 * 3. else a new digest with the event's own window, or, when that window has already ended
 *    (`end <= now`: the event arrived after its window, its digest perhaps already sent), the window of
 *    `now`: a late event joins the next digest instead of going out alone at once.
 */
import { InvalidArgumentError } from '../../../../shared/errors';
import { cutText } from '../../../../shared/text/cut';
import type { DigestConfig } from '../config';

/** A digest window, `[start, end)`. */
export interface DigestWindow {
  start: Date;
  end: Date;
}

/** One accepting digest of the key, as placement sees it. */
export interface AcceptingDigest extends DigestWindow {
  id: string;
}

/** Where an event goes: into an accepting digest, or a new one with this window. */
export type Placement = { join: string } | { open: DigestWindow };

/** The part of a DigestConfig the window reads. */
export type WindowConfig = Pick<DigestConfig, 'window' | 'daily_at'>;

const MINUTE = 60_000;
const DAY = 24 * 60 * MINUTE;

/** Places an event at `at` (see the module comment); `now` decides whether its own window is over. */
export function placeEvent(
  at: Date,
  now: Date,
  accepting: readonly AcceptingDigest[],
  config: WindowConfig,
  timeZone = '',
): Placement {
  const t = at.getTime();
  const holding = accepting.find((d) => d.start.getTime() <= t && t < d.end.getTime());
  if (holding) return { join: holding.id };
  let next: AcceptingDigest | undefined;
  for (const d of accepting) {
    if (d.start.getTime() > t && (!next || d.start.getTime() < next.start.getTime())) next = d;
  }
  if (next) return { join: next.id };
  const own = windowOf(at, config, timeZone);
  return { open: own.end.getTime() <= now.getTime() ? windowOf(now, config, timeZone) : own };
}

/** The event's own window: `[at, at + window)`, or the day of `daily_at` that holds `at`. */
export function windowOf(at: Date, config: WindowConfig, timeZone = ''): DigestWindow {
  if (config.daily_at === undefined) {
    const seconds = config.window ?? 0;
    if (!(seconds > 0)) throw new InvalidArgumentError('a digest needs a window or daily_at');
    return { start: new Date(at.getTime()), end: new Date(at.getTime() + seconds * 1000) };
  }
  const [hour, minute] = config.daily_at.split(':').map(Number) as [number, number];
  const zone = timeZone || 'UTC';
  const t = at.getTime();
  const local = wallTime(t, zone);
  // The day's boundary; when it is not after `at` (past, or the repeat hour's second pass), the next day's.
  let end = localInstant(local.year, local.month, local.day, hour, minute, zone).getTime();
  let endDay = { year: local.year, month: local.month, day: local.day };
  if (end <= t) {
    endDay = addDays(endDay, 1);
    end = localInstant(endDay.year, endDay.month, endDay.day, hour, minute, zone).getTime();
  }
  const startDay = addDays(endDay, -1);
  const start = localInstant(startDay.year, startDay.month, startDay.day, hour, minute, zone).getTime();
  return { start: new Date(start), end: new Date(end) };
}

interface CivilDay {
  year: number;
  month: number;
  day: number;
}

function addDays(d: CivilDay, n: number): CivilDay {
  const u = new Date(Date.UTC(d.year, d.month - 1, d.day + n));
  return { year: u.getUTCFullYear(), month: u.getUTCMonth() + 1, day: u.getUTCDate() };
}

/**
 * The instant of a local wall time in `timeZone`: the first occurrence when it exists twice, the
 * first instant after the gap when it does not exist.
 */
export function localInstant(
  year: number,
  month: number,
  day: number,
  hour: number,
  minute: number,
  timeZone: string,
): Date {
  const naive = Date.UTC(year, month - 1, day, hour, minute);
  // Offsets a day either side cover both sides of any transition near the wall time.
  const offsets = [...new Set([offsetAt(naive - DAY, timeZone), offsetAt(naive + DAY, timeZone)])];
  const candidates = offsets.map((o) => naive - o).filter((c) => c + offsetAt(c, timeZone) === naive);
  if (candidates.length > 0) return new Date(Math.min(...candidates));
  // In the gap: the transition lies between the two readings; find its first instant (to the ms).
  const readings = offsets.map((o) => naive - o);
  let lo = Math.min(...readings);
  let hi = Math.max(...readings);
  const after = offsetAt(hi, timeZone);
  while (hi - lo > 1) {
    const mid = Math.floor((lo + hi) / 2);
    if (offsetAt(mid, timeZone) === after) hi = mid;
    else lo = mid;
  }
  return new Date(hi);
}

const formats = new Map<string, Intl.DateTimeFormat>();
/** Bound of the formatter cache (one per zone; there are about 600). */
const MAX_FORMATS = 1_000;

function formatOf(timeZone: string): Intl.DateTimeFormat {
  let format = formats.get(timeZone);
  if (!format) {
    try {
      format = new Intl.DateTimeFormat('en-US', {
        timeZone,
        hourCycle: 'h23',
        year: 'numeric',
        month: 'numeric',
        day: 'numeric',
        hour: 'numeric',
        minute: 'numeric',
        second: 'numeric',
      });
    } catch {
      throw new InvalidArgumentError(
        `time_zone must be an IANA time zone such as Europe/Madrid: ${JSON.stringify(cutText(timeZone, 64))}`,
        'time_zone',
      );
    }
    if (formats.size >= MAX_FORMATS) formats.clear();
    formats.set(timeZone, format);
  }
  return format;
}

interface WallTime extends CivilDay {
  hour: number;
  minute: number;
  second: number;
}

function wallTime(ms: number, timeZone: string): WallTime {
  const parts: Record<string, number> = {};
  for (const p of formatOf(timeZone).formatToParts(new Date(ms))) {
    if (p.type !== 'literal') parts[p.type] = Number(p.value);
  }
  return {
    year: parts.year!,
    month: parts.month!,
    day: parts.day!,
    hour: parts.hour! % 24,
    minute: parts.minute!,
    second: parts.second!,
  };
}

/** The zone's offset from UTC at `ms` (local minus UTC, ms; whole seconds). */
function offsetAt(ms: number, timeZone: string): number {
  const w = wallTime(ms, timeZone);
  const asUtc = Date.UTC(w.year, w.month - 1, w.day, w.hour, w.minute, w.second);
  return asUtc - Math.floor(ms / 1000) * 1000;
}
