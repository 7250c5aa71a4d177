/**
 * Time zones, one home: every reader of an IANA zone (quiet hours, digest windows, business hours,
 * the users' zone check) goes through here.
 *
 * Temporal-free: local wall time is read with `Intl.DateTimeFormat` (the zone data of the runtime's
 * ICU), and a local time is turned back into an instant with the zone's offsets around it. A "wall"
 * time is a local date and time written as milliseconds on the UTC scale (`Date.UTC` of its fields),
 * so local days and minutes are plain arithmetic.
 *
 * The rules:
 * - a local time that does not exist (the spring-forward gap) is the first instant after the gap;
 *   one that exists twice (the autumn repeat) is its first occurrence;
 * - an unknown zone is InvalidArgumentError naming `time_zone` (its name cut to 64 code points);
 * - formatters and offsets are cached per zone spelling, at most {@link MAX_CACHED_ZONES} of each
 *   (the oldest goes first).
 */
import { InvalidArgumentError } from '../errors';
import { cutText } from '../text/cut';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/** Bound of each per-zone cache (there are about 600 zone names, more spellings). */
export const MAX_CACHED_ZONES = 1_000;

/** Adds `value` to a cache that holds at most {@link MAX_CACHED_ZONES} entries, dropping the oldest. */
function remember<V>(cache: Map<string, V>, key: string, value: V): V {
  cache.delete(key);
  if (cache.size >= MAX_CACHED_ZONES) cache.delete(cache.keys().next().value!);
  cache.set(key, value);
  return value;
}

const formats = new Map<string, Intl.DateTimeFormat>();

/** The zone's formatter (cached); InvalidArgumentError naming `time_zone` when Intl does not know it. */
function formatOf(timeZone: string): Intl.DateTimeFormat {
  const cached = formats.get(timeZone);
  if (cached) return cached;
  let format: Intl.DateTimeFormat;
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
  return remember(formats, timeZone, format);
}

/** The canonical spelling of a zone Intl knows (`europe/madrid` -> `Europe/Madrid`), else undefined. */
export function resolveTimeZone(timeZone: string): string | undefined {
  try {
    return formatOf(timeZone).resolvedOptions().timeZone;
  } catch {
    return undefined;
  }
}

/** True when `timeZone` is a time zone this runtime's Intl knows. */
export function isValidTimeZone(timeZone: string): boolean {
  return resolveTimeZone(timeZone) !== undefined;
}

/** A local date and time in a zone. */
export interface WallTime {
  year: number;
  /** 1 January ... 12 December. */
  month: number;
  day: number;
  hour: number;
  minute: number;
  second: number;
  /** Minutes after local midnight (`hour * 60 + minute`). */
  minuteOfDay: number;
  /** ISO day of the week: 1 Monday ... 7 Sunday. */
  isoWeekday: number;
}

/** The local wall time in `timeZone` at instant `at` (epoch ms). */
export function wallTime(timeZone: string, at: number): WallTime {
  const parts: Record<string, number> = {};
  for (const p of formatOf(timeZone).formatToParts(at)) {
    if (p.type !== 'literal') parts[p.type] = Number(p.value);
  }
  const year = parts.year!;
  const month = parts.month!;
  const day = parts.day!;
  const hour = parts.hour! % 24;
  const minute = parts.minute!;
  return {
    year,
    month,
    day,
    hour,
    minute,
    second: parts.second!,
    minuteOfDay: hour * 60 + minute,
    isoWeekday: isoWeekday(Date.UTC(year, month - 1, day)),
  };
}

/** The ISO day of the week (1 Monday ... 7 Sunday) of a wall time (ms on the UTC scale). */
export function isoWeekday(wall: number): number {
  return new Date(wall).getUTCDay() || 7;
}

/** The zone's offset from UTC at instant `at` (local minus UTC, ms; whole seconds). */
export function offsetAt(timeZone: string, at: number): number {
  const w = wallTime(timeZone, at);
  const wall = Date.UTC(w.year, w.month - 1, w.day, w.hour, w.minute, w.second);
  // The parts have whole seconds: compare with the instant cut to its second.
  return wall - Math.floor(at / 1000) * 1000;
}

/** `offset` holds from `from` until the next segment's `from`. */
interface Segment {
  from: number;
  offset: number;
}

/** A zone's offsets over a span, for turning instants into wall times and back without Intl. */
export class ZoneOffsets {
  /** @param segments the offsets in order; the first from -Infinity. */
  constructor(
    /** First instant the span covers exactly (earlier ones take the first offset). */
    readonly from: number,
    /** Last instant the span covers exactly (later ones take the last offset). */
    readonly to: number,
    private readonly segments: readonly Segment[],
  ) {}

  /** The offset (local minus UTC, ms) at instant `at`. */
  offsetAt(at: number): number {
    let offset = this.segments[0]!.offset;
    for (const s of this.segments) if (s.from <= at) offset = s.offset;
    return offset;
  }

  /** The wall time (ms on the UTC scale) of instant `at`. */
  wallOf(at: number): number {
    return at + this.offsetAt(at);
  }

  /**
   * The instant of wall time `wall`: its first occurrence when it exists twice, the first instant
   * after the gap when it does not exist.
   */
  instantOf(wall: number): number {
    const segments = this.segments;
    let first = Infinity;
    for (let i = 0; i < segments.length; i++) {
      const t = wall - segments[i]!.offset;
      const until = segments[i + 1]?.from ?? Infinity;
      if (t >= segments[i]!.from && t < until && t < first) first = t;
    }
    if (first !== Infinity) return first;
    // In a gap: the change whose wall time jumps over `wall`.
    for (let i = 1; i < segments.length; i++) {
      const at = segments[i]!.from;
      if (at + segments[i - 1]!.offset <= wall && wall < at + segments[i]!.offset) return at;
    }
    throw new Error('local time outside the computed span');
  }
}

/**
 * The zone's offset segments over [from, to]: sampled every 6 hours (no zone changes its offset
 * twice within 6 hours), each change found to the millisecond by bisection.
 */
function segmentsOf(timeZone: string, from: number, to: number): Segment[] {
  const step = 6 * HOUR;
  const segments: Segment[] = [{ from: -Infinity, offset: offsetAt(timeZone, from) }];
  let prevT = from;
  let prev = segments[0]!.offset;
  for (let t = from + step; prevT < to; t += step) {
    const offset = offsetAt(timeZone, t);
    if (offset !== prev) {
      // Bisect (prevT, t] for the first instant with the new offset.
      let lo = prevT;
      let hi = t;
      while (hi - lo > 1) {
        const mid = lo + Math.floor((hi - lo) / 2);
        if (offsetAt(timeZone, mid) === prev) lo = mid;
        else hi = mid;
      }
      segments.push({ from: hi, offset });
      prev = offset;
    }
    prevT = t;
  }
  return segments;
}

const spans = new Map<string, ZoneOffsets>();
/** How far past a call's span a computed span reaches (a zone's offsets are read again every ~2 months). */
const SPAN_MARGIN = 30 * DAY;

/**
 * The zone's offsets over at least [from, to] (epoch ms), computed once per zone and reused while
 * a call's span fits in the cached one. InvalidArgumentError naming `time_zone` for an unknown zone.
 */
export function zoneOffsets(timeZone: string, from: number, to: number): ZoneOffsets {
  const cached = spans.get(timeZone);
  if (cached && cached.from <= from && to <= cached.to) return cached;
  const spanFrom = from - SPAN_MARGIN;
  const spanTo = to + SPAN_MARGIN;
  return remember(spans, timeZone, new ZoneOffsets(spanFrom, spanTo, segmentsOf(timeZone, spanFrom, spanTo)));
}

/**
 * The instant of a local date and time in `timeZone` (month 1-12; fields roll over as in
 * `Date.UTC`): the first occurrence when it exists twice, the first instant after the gap when it
 * does not exist.
 */
export function localInstant(
  year: number,
  month: number,
  day: number,
  hour: number,
  minute: number,
  timeZone: string,
): Date {
  const wall = Date.UTC(year, month - 1, day, hour, minute);
  // Offsets are within a day of UTC: instants a day either side of the wall time cover it.
  return new Date(zoneOffsets(timeZone, wall - DAY, wall + DAY).instantOf(wall));
}

/** Minutes after midnight of a local time `"HH:MM"` (00:00 to 23:59), or undefined when malformed. */
export function parseClockTime(value: string): number | undefined {
  const m = /^([01]\d|2[0-3]):([0-5]\d)$/.exec(value);
  return m ? Number(m[1]) * 60 + Number(m[2]) : undefined;
}

/** How many zones each cache holds now (for tests of the bound). */
export function zoneCacheSizes(): { formats: number; offsets: number } {
  return { formats: formats.size, offsets: spans.size };
}
