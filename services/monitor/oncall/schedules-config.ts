/**
 * The config of `monitor.oncall.schedules` (issue 28): weekly on-call rotations with a hand-off time
 * in a time zone, and overrides for a span of time. Checked once at load; every refusal names its key
 * (`monitor.oncall.schedules[0].rotation.hand_off`). The rules the schedules follow are in
 * schedules.ts and README.md, "Schedules".
 */
import { z } from 'zod';

import { itemName, positiveInt, uniqueNames } from '../../../shared/config';
import { WEEKDAYS } from '../../../shared/monitoring/alerts/tiers';
import { isStorableText } from '../../../shared/text/cut';
import { hasControlCharacters, longerThan } from '../../../shared/text/check';
import { isValidTimeZone, parseClockTime } from '../../../shared/time/zone';

/** Most schedules. */
export const MAX_SCHEDULES = 100;
/** Most users in one rotation. */
export const MAX_ROTATION_USERS = 200;
/** Most overrides of one schedule. */
export const MAX_OVERRIDES = 1000;
/** Longest turn of one person, in weeks. */
export const MAX_LENGTH_WEEKS = 52;
/** Longest schedule name, in characters. */
export const MAX_SCHEDULE_NAME_LENGTH = 64;
/** Longest user id, in code points (the notification service's default `users.max_user_id_length`). */
export const MAX_USER_ID_LENGTH = 128;

const LOCAL_DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
/** An instant with its offset: `2026-03-28T20:00:00+01:00`, `2026-03-28T19:00Z`, fractions allowed. */
const INSTANT =
  /^(\d{4})-(\d{2})-(\d{2})T([01]\d|2[0-3]):([0-5]\d)(?::([0-5]\d)(?:\.\d{1,9})?)?(Z|[+-](?:[01]\d|2[0-3]):[0-5]\d)$/i;

/** Days of `month` (1-12) in `year`. */
function daysInMonth(year: number, month: number): number {
  return new Date(Date.UTC(year, month, 0)).getUTCDate();
}

/** A date whose fields are a real calendar day. */
function realDay(year: number, month: number, day: number): boolean {
  return month >= 1 && month <= 12 && day >= 1 && day <= daysInMonth(year, month);
}

/**
 * A user id of the notification service's directory: 1 to {@link MAX_USER_ID_LENGTH} code points, no
 * control characters (the same rule as the directory's).
 */
export function userIdField() {
  return z
    .string({ error: 'expected a user id (text)' })
    .min(1, { error: 'expected a user id (text)' })
    .superRefine((id, ctx) => {
      if (longerThan(id, MAX_USER_ID_LENGTH))
        ctx.addIssue({
          code: 'custom',
          message: `expected a user id of at most ${MAX_USER_ID_LENGTH} characters`,
        });
      else if (hasControlCharacters(id) || !isStorableText(id))
        ctx.addIssue({ code: 'custom', message: 'expected a user id without control characters' });
    });
}

/** A local calendar date `YYYY-MM-DD`; parsed to `{year, month, day}`. */
function localDate() {
  const message = 'expected a local date YYYY-MM-DD such as 2026-01-05';
  return z.string({ error: message }).transform((text, ctx) => {
    const m = LOCAL_DATE.exec(text);
    const [year, month, day] = m ? [Number(m[1]), Number(m[2]), Number(m[3])] : [0, 0, 0];
    if (!m || year < 1 || !realDay(year, month, day)) {
      ctx.addIssue({ code: 'custom', message });
      return z.NEVER;
    }
    return { year, month, day };
  });
}

/**
 * An instant written with its offset (ISO 8601: `2026-03-28T20:00:00+01:00`, `...Z`); a time without
 * an offset is refused (in which zone would it be?). Parsed to a Date.
 */
function instant() {
  const message = 'expected a time with its offset such as 2026-03-28T20:00:00+01:00';
  return z.string({ error: message }).transform((value, ctx) => {
    const m = INSTANT.exec(value);
    const at = m && realDay(Number(m[1]), Number(m[2]), Number(m[3])) ? new Date(value) : undefined;
    if (!at || Number.isNaN(at.getTime())) {
      ctx.addIssue({ code: 'custom', message });
      return z.NEVER;
    }
    return at;
  });
}

/** One schedule. */
export const OnCallScheduleConfigSchema = z.strictObject({
  /** Unique among the schedules; what WhoIsOnCall and escalation steps name. */
  name: itemName().max(MAX_SCHEDULE_NAME_LENGTH, {
    error: `expected a name of at most ${MAX_SCHEDULE_NAME_LENGTH} characters`,
  }),
  /** IANA time zone of the hand-off (`Europe/Berlin`); DST moves the instant, not the local time. */
  time_zone: z
    .string({ error: 'expected an IANA time zone such as Europe/Berlin' })
    .refine(isValidTimeZone, { error: 'expected an IANA time zone such as Europe/Berlin' }),
  /** The weekly rotation. */
  rotation: z.strictObject({
    /** User ids in turn order (the notification service's directory); empty: nobody but overrides. */
    users: z
      .array(userIdField())
      .max(MAX_ROTATION_USERS, { error: `expected at most ${MAX_ROTATION_USERS} users` })
      .default(() => []),
    /** Local time of the hand-off, `HH:MM`. */
    hand_off: z
      .string({ error: 'expected a local time HH:MM (00:00 to 23:59)' })
      .refine((v) => parseClockTime(v) !== undefined, {
        error: 'expected a local time HH:MM (00:00 to 23:59)',
      })
      .default('09:00'),
    /** Day of the week of the hand-off. */
    hand_off_day: z
      .enum(WEEKDAYS, { error: 'expected a day mon, tue, wed, thu, fri, sat or sun' })
      .default('mon'),
    /**
     * Local date the rotation counts from: the first hand-off is on the first `hand_off_day` on or
     * after it, and users[0] has that first turn. Before it, only overrides put anyone on call.
     */
    start: localDate(),
    /** Weeks of each person's turn. */
    length_weeks: positiveInt(MAX_LENGTH_WEEKS).default(1),
  }),
  /** Someone else on call for a span of time; where overrides overlap, the later in the list wins. */
  overrides: z
    .array(
      z
        .strictObject({
          /** User id of the person on call instead (the notification service's directory). */
          user: userIdField(),
          /** First instant of the override, with its offset (`2026-03-28T20:00:00+01:00`). */
          start: instant(),
          /** Instant it ends (excluded), with its offset; after `start`. */
          end: instant(),
        })
        .refine((o) => o.end.getTime() > o.start.getTime(), {
          error: 'expected end after start',
          path: ['end'],
        }),
    )
    .max(MAX_OVERRIDES, { error: `expected at most ${MAX_OVERRIDES} overrides` })
    .default(() => []),
});

/**
 * The `schedules` key of the `oncall` section: at most {@link MAX_SCHEDULES}, names unique. The
 * monitor's config.ts composes it under `monitor.oncall`.
 */
export function onCallSchedulesSchema() {
  return z
    .array(OnCallScheduleConfigSchema)
    .max(MAX_SCHEDULES, { error: `expected at most ${MAX_SCHEDULES} schedules` })
    .default(() => [])
    .superRefine(uniqueNames('schedule'));
}

/** One validated schedule. */
export type OnCallScheduleConfig = z.infer<typeof OnCallScheduleConfigSchema>;
/** What may be written for one schedule. */
export type OnCallScheduleConfigInput = z.input<typeof OnCallScheduleConfigSchema>;
