/**
 * Alert tiers and business hours. A tier says how soon a person must see an alert: P0_PAGE at once,
 * P1_BUSINESS_HOURS during the team's working hours, P2_DIGEST in a periodic summary.
 */
import { InvalidArgumentError } from '../../errors';
import { isValidTimeZone, parseClockTime, wallTime } from '../../time/zone';

/** Alert routing tiers. */
export const AlertTier = {
  P0_PAGE: 'P0_PAGE',
  P1_BUSINESS_HOURS: 'P1_BUSINESS_HOURS',
  P2_DIGEST: 'P2_DIGEST',
} as const;
/** One of the alert routing tiers. */
export type AlertTier = (typeof AlertTier)[keyof typeof AlertTier];

/** Every tier, most urgent first. */
export const ALERT_TIERS: readonly AlertTier[] = [
  AlertTier.P0_PAGE,
  AlertTier.P1_BUSINESS_HOURS,
  AlertTier.P2_DIGEST,
];

/** The tier of an alert context's `tier` value; missing or unknown values are P1_BUSINESS_HOURS. */
export function resolveTier(value: unknown): AlertTier {
  return typeof value === 'string' && (ALERT_TIERS as readonly string[]).includes(value)
    ? (value as AlertTier)
    : AlertTier.P1_BUSINESS_HOURS;
}

/** Days of the week as written in config. */
export const WEEKDAYS = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'] as const;
/** A day of the week. */
export type Weekday = (typeof WEEKDAYS)[number];

/** Business hours: local opening and closing time on some days, in an IANA time zone. */
export interface BusinessHoursSpec {
  /** IANA time zone, e.g. `Europe/Paris`; `UTC` by default in config. */
  time_zone: string;
  days: readonly Weekday[];
  /** `HH:MM`, local time, inclusive. */
  open: string;
  /** `HH:MM`, local time, exclusive; after `open` (hours that span midnight are not supported). */
  close: string;
}

const MINUTE = 60_000;

/**
 * Business hours evaluated in the configured time zone through `shared/time/zone` (Intl), so
 * daylight-saving changes are the runtime's time-zone data, not our arithmetic.
 */
export class BusinessHours {
  private readonly openDays: boolean[];
  private readonly openMinute: number;
  private readonly closeMinute: number;

  constructor(readonly spec: BusinessHoursSpec) {
    if (!isValidTimeZone(spec.time_zone))
      throw new InvalidArgumentError(`unknown time zone ${JSON.stringify(spec.time_zone)}`);
    const open = parseClockTime(spec.open);
    const close = parseClockTime(spec.close);
    if (open === undefined || close === undefined)
      throw new InvalidArgumentError('business hours: expected HH:MM times');
    if (close <= open) throw new InvalidArgumentError('business hours: close must be after open');
    if (spec.days.length === 0) throw new InvalidArgumentError('business hours: expected at least one day');
    this.openMinute = open;
    this.closeMinute = close;
    this.openDays = WEEKDAYS.map((d) => spec.days.includes(d));
  }

  /** Local weekday (0 = Monday), minute of the day and milliseconds into that minute at `epochMs`. */
  private local(epochMs: number): { day: number; minute: number; intoMinuteMs: number } {
    const wall = wallTime(this.spec.time_zone, epochMs);
    const ms = ((epochMs % 1000) + 1000) % 1000;
    return { day: wall.isoWeekday - 1, minute: wall.minuteOfDay, intoMinuteMs: wall.second * 1000 + ms };
  }

  /** True when `epochMs` falls within business hours. */
  isOpen(epochMs: number): boolean {
    const t = this.local(epochMs);
    return this.openDays[t.day]! && t.minute >= this.openMinute && t.minute < this.closeMinute;
  }

  /**
   * The first instant at or after `epochMs` within business hours. Steps to the next local opening
   * time and checks again, so a daylight-saving jump on the way only costs another step.
   */
  nextOpening(epochMs: number): number {
    let t = epochMs;
    for (let step = 0; step < 64; step++) {
      const l = this.local(t);
      const start = t - l.intoMinuteMs;
      if (this.openDays[l.day]! && l.minute >= this.openMinute && l.minute < this.closeMinute) return t;
      if (this.openDays[l.day]! && l.minute < this.openMinute)
        t = start + (this.openMinute - l.minute) * MINUTE;
      else t = start + (1440 - l.minute) * MINUTE; // next local midnight (approximately, on DST days)
    }
    // Unreachable with at least one open day; a day later is a safe answer.
    return epochMs + 1440 * MINUTE;
  }

  /**
   * The first opening after the business hours open at `epochMs` have closed (`nextOpening` when they
   * are closed): when a release at opening schedules the next one.
   */
  openingAfter(epochMs: number): number {
    let t = epochMs;
    // One window lasts less than a day: at most 1,440 steps of a minute.
    for (let step = 0; step <= 1440 && this.isOpen(t); step++) t += MINUTE;
    return this.nextOpening(t);
  }
}
