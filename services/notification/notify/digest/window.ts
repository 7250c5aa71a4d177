/**
 * The digest window (issue 26), pure: which digest an event goes to, by the event's own time.
 *
 * A digest's window is `[start, end)`:
 * - `window` (rolling, seconds W): `[t, t + W)` from the event that opens it;
 * - `daily_at` ("09:00"): from the previous `daily_at` to the next one, in the user's time zone
 *   (`''`: UTC), so across DST a window is 23 or 25 hours long. A `daily_at` that does not exist
 *   that day (the spring-forward gap) is the first instant after the gap; one that exists twice
 *   (the autumn repeat) is its first occurrence (the rules of quiet hours; the zone arithmetic is
 *   `shared/time/zone.ts`).
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
import { localInstant, parseClockTime, wallTime } from '../../../../shared/time/zone';
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
  const minutes = parseClockTime(config.daily_at);
  if (minutes === undefined) throw new InvalidArgumentError('a digest daily_at must be a local time "HH:MM"');
  const zone = timeZone || 'UTC';
  const t = at.getTime();
  const { year, month, day } = wallTime(zone, t);
  // `daily_at` of the local day `n` days after `at`'s (days and minutes roll over as in Date.UTC).
  const boundary = (n: number) => localInstant(year, month, day + n, 0, minutes, zone);
  // The day's boundary; when it is not after `at` (past, or the repeat hour's second pass), the next day's.
  const endDay = boundary(0).getTime() > t ? 0 : 1;
  return { start: boundary(endDay - 1), end: boundary(endDay) };
}
