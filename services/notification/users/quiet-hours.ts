/**
 * Quiet hours (issue 26): the input rule of a user's windows (`normaliseQuietHours`) and
 * `quietHoursEnd`, the instant the quiet period covering an instant ends in the user's zone.
 *
 * Pure: the zone arithmetic (local wall time, and a local time back to an instant with the zone's
 * offsets around the instant asked about, cached per zone) is `shared/time/zone.ts`. The rules (see
 * README.md, "Quiet hours"):
 * - a window starts on its listed ISO days (1 Monday ... 7 Sunday, of the local start date; empty:
 *   every day) at `start`, and ends at `end` the same day, or the next day when `end` is before
 *   `start` (an overnight window);
 * - windows that touch or overlap chain into one period, released when the last one ends;
 * - a local time that does not exist (the spring-forward gap) is the first instant after the gap; one
 *   that exists twice (the autumn repeat) is its first occurrence; a window whose start and end both
 *   fall in the gap does not exist that night;
 * - a period is never longer than {@link MAX_QUIET_PERIOD_MS} after the instant asked about
 *   (validation already refuses windows that cover the whole week).
 */
import { InvalidArgumentError } from '../../../shared/errors';
import { isoWeekday, parseClockTime, zoneOffsets } from '../../../shared/time/zone';
import { MAX_QUIET_WINDOWS, type QuietHours, type QuietHoursEnd, type QuietWindow } from './types';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
const WEEK_MINUTES = 7 * 24 * 60;

/** The longest a quiet period holds anything, counted from the instant asked about (8 days). */
export const MAX_QUIET_PERIOD_MS = 8 * DAY;

/** "HH:MM" to minutes after local midnight (the format is checked by validation). */
function minutesOf(hhmm: string): number {
  const minutes = parseClockTime(hhmm);
  if (minutes === undefined)
    throw new InvalidArgumentError(`not a local time "HH:MM": ${JSON.stringify(hhmm)}`);
  return minutes;
}

/** Window length in minutes: `end` after `start` the same day, else the next day. */
function lengthOf(start: number, end: number): number {
  return end > start ? end - start : end + 24 * 60 - start;
}

/** The ISO days a window starts on (empty: every day). */
function startDays(window: QuietWindow): number[] {
  return window.days.length === 0 ? [1, 2, 3, 4, 5, 6, 7] : window.days;
}

/**
 * Checks and normalises UpsertUser's `quiet_hours` (undefined: none). Every refusal is
 * InvalidArgumentError naming the field (`quiet_hours.windows[2].start`). Days come back in
 * ascending order.
 */
export function normaliseQuietHours(input: QuietHours | undefined): QuietHours {
  if (input === undefined || input === null) return { windows: [], holdEmail: false };
  const windowsIn: unknown = input.windows ?? [];
  if (!Array.isArray(windowsIn)) {
    throw new InvalidArgumentError('quiet_hours.windows must be a list', 'quiet_hours.windows');
  }
  if (windowsIn.length > MAX_QUIET_WINDOWS) {
    throw new InvalidArgumentError(
      `quiet_hours.windows must hold at most ${MAX_QUIET_WINDOWS} windows`,
      'quiet_hours.windows',
    );
  }
  const windows = windowsIn.map((w: Partial<QuietWindow> | undefined, i): QuietWindow => {
    const field = `quiet_hours.windows[${i}]`;
    const daysIn: unknown = w?.days ?? [];
    if (!Array.isArray(daysIn))
      throw new InvalidArgumentError(`${field}.days must be a list`, `${field}.days`);
    const seen = new Set<number>();
    daysIn.forEach((d: unknown, j) => {
      if (typeof d !== 'number' || !Number.isInteger(d) || d < 1 || d > 7) {
        throw new InvalidArgumentError(
          `${field}.days[${j}] must be an ISO day of the week, 1 (Monday) to 7 (Sunday)`,
          `${field}.days[${j}]`,
        );
      }
      if (seen.has(d)) {
        throw new InvalidArgumentError(`${field}.days[${j}] repeats day ${d}`, `${field}.days[${j}]`);
      }
      seen.add(d);
    });
    for (const key of ['start', 'end'] as const) {
      const value: unknown = w?.[key];
      if (typeof value !== 'string' || parseClockTime(value) === undefined) {
        throw new InvalidArgumentError(
          `${field}.${key} must be a local time "HH:MM" from 00:00 to 23:59`,
          `${field}.${key}`,
        );
      }
    }
    if (w!.start === w!.end) {
      throw new InvalidArgumentError(
        `${field}.end must differ from its start (an end before the start ends the next day)`,
        `${field}.end`,
      );
    }
    return { days: [...seen].sort((a, b) => a - b), start: w!.start!, end: w!.end! };
  });
  if (coversWholeWeek(windows)) {
    throw new InvalidArgumentError(
      'quiet_hours.windows cover the whole week: leave at least one minute free, or nothing would ever be sent',
      'quiet_hours.windows',
    );
  }
  return { windows, holdEmail: input.holdEmail === true };
}

/** Whether the windows leave no minute of the (local) week free. */
function coversWholeWeek(windows: readonly QuietWindow[]): boolean {
  const covered = new Uint8Array(WEEK_MINUTES);
  for (const w of windows) {
    const start = minutesOf(w.start);
    const length = lengthOf(start, minutesOf(w.end));
    for (const day of startDays(w)) {
      const from = (day - 1) * 24 * 60 + start;
      for (let m = 0; m < length; m++) covered[(from + m) % WEEK_MINUTES] = 1;
    }
  }
  return covered.every((c) => c === 1);
}

/**
 * `quietHoursEnd(quiet, timeZone, at)` (the `QuietHoursEnd` contract of `types.ts`): null when `at`
 * is outside every window; otherwise when the quiet period covering `at` ends (chained windows
 * included), at most {@link MAX_QUIET_PERIOD_MS} after `at`. `timeZone` '' is UTC; an unknown zone is
 * InvalidArgumentError naming `time_zone`.
 */
export const quietHoursEnd: QuietHoursEnd = (quiet, timeZone, at) => {
  if (quiet.windows.length === 0) return null;
  const now = at.getTime();
  // Windows starting up to 9 local days before `at` and 9 after bound every period the cap allows.
  const offsets = zoneOffsets(timeZone === '' ? 'UTC' : timeZone, now - 10 * DAY, now + 11 * DAY);
  const wallNow = offsets.wallOf(now);
  const today = Math.floor(wallNow / DAY) * DAY;
  const windows = quiet.windows.map((w) => {
    const start = minutesOf(w.start);
    return { days: new Set(startDays(w)), start, length: lengthOf(start, minutesOf(w.end)) };
  });
  const periods: { start: number; end: number }[] = [];
  for (let day = today - 9 * DAY; day <= today + 9 * DAY; day += DAY) {
    const weekday = isoWeekday(day);
    for (const w of windows) {
      if (!w.days.has(weekday)) continue;
      const wallStart = day + w.start * MINUTE;
      const start = offsets.instantOf(wallStart);
      const end = offsets.instantOf(wallStart + w.length * MINUTE);
      if (end > start) periods.push({ start, end });
    }
  }
  periods.sort((a, b) => a.start - b.start);
  let current: { start: number; end: number } | undefined;
  for (const p of periods) {
    if (current && p.start <= current.end) {
      current.end = Math.max(current.end, p.end);
      continue;
    }
    if (current && current.start <= now && now < current.end) break;
    current = { ...p };
  }
  if (!current || !(current.start <= now && now < current.end)) return null;
  return new Date(Math.min(current.end, now + MAX_QUIET_PERIOD_MS));
};
