/**
 * shared/time/zone.ts, the one home of time-zone arithmetic: the zone check, the bounded formatter
 * and offset caches, the offset and the wall time at an instant, and the instant of a local date and
 * time (a time in the spring-forward gap is the first instant after the gap; a repeated time is its
 * first occurrence). DST edges in Europe/Madrid, America/New_York and Australia/Sydney (each side of
 * the change to the millisecond), half-hour zones (Asia/Kolkata, Australia/Adelaide, which also has
 * DST), and the "HH:MM" rule.
 */
import { InvalidArgumentError } from '../../../shared/errors';
import {
  isValidTimeZone,
  isoWeekday,
  localInstant,
  MAX_CACHED_ZONES,
  offsetAt,
  parseClockTime,
  resolveTimeZone,
  wallTime,
  zoneCacheSizes,
  zoneOffsets,
} from '../../../shared/time/zone';

const MS = 1;
const HOUR = 3_600_000;
const MINUTE = 60_000;
const t = (iso: string) => Date.parse(iso);
const iso = (ms: number) => new Date(ms).toISOString();

describe('the zone check', () => {
  it('knows IANA zones and their canonical spelling, and refuses what Intl does not know', () => {
    expect(isValidTimeZone('Europe/Madrid')).toBe(true);
    expect(isValidTimeZone('UTC')).toBe(true);
    expect(resolveTimeZone('europe/madrid')).toBe('Europe/Madrid');
    expect(resolveTimeZone('AMERICA/NEW_YORK')).toBe('America/New_York');
    for (const bad of ['Mars/Olympus', '', 'Europe/Madrid ', '+25:00']) {
      expect(isValidTimeZone(bad)).toBe(false);
      expect(resolveTimeZone(bad)).toBeUndefined();
    }
  });

  it('an unknown zone asked for arithmetic is INVALID_ARGUMENT naming time_zone, its name cut on code points', () => {
    const long = `Mars/${'🚀'.repeat(40)}`;
    let err: unknown;
    try {
      offsetAt(long, 0);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(InvalidArgumentError);
    expect((err as InvalidArgumentError).field).toBe('time_zone');
    const message = (err as Error).message;
    expect(message).toContain('Mars/🚀');
    expect(message).not.toContain('🚀'.repeat(40));
    expect(message).not.toMatch(/[\ud800-\udbff](?![\udc00-\udfff])/);
    for (const call of [
      () => wallTime('Mars/Olympus', 0),
      () => localInstant(2026, 1, 1, 9, 0, 'Mars/Olympus'),
      () => zoneOffsets('東京/中央', 0, 1),
    ]) {
      expect(call).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT', field: 'time_zone' }));
    }
  });
});

describe('offsetAt', () => {
  it.each([
    // zone, the first instant of the new offset, the offset before, the offset after (hours)
    ['Europe/Madrid', '2026-03-29T01:00:00Z', 1, 2],
    ['Europe/Madrid', '2026-10-25T01:00:00Z', 2, 1],
    ['America/New_York', '2026-03-08T07:00:00Z', -5, -4],
    ['America/New_York', '2026-11-01T06:00:00Z', -4, -5],
    ['Australia/Sydney', '2026-10-03T16:00:00Z', 10, 11],
    ['Australia/Sydney', '2026-04-04T16:00:00Z', 11, 10],
    ['Australia/Adelaide', '2026-10-03T16:30:00Z', 9.5, 10.5],
    ['Australia/Adelaide', '2026-04-04T16:30:00Z', 10.5, 9.5],
  ])('%s changes at %s from UTC%s to UTC%s, to the millisecond', (zone, change, before, after) => {
    expect(offsetAt(zone, t(change) - MS)).toBe(before * HOUR);
    expect(offsetAt(zone, t(change))).toBe(after * HOUR);
    expect(offsetAt(zone, t(change) + MS)).toBe(after * HOUR);
  });

  it('a half-hour zone without DST (Asia/Kolkata) is UTC+5:30 all year; UTC is 0', () => {
    expect(offsetAt('Asia/Kolkata', t('2026-01-15T12:00:00Z'))).toBe(5.5 * HOUR);
    expect(offsetAt('Asia/Kolkata', t('2026-07-15T12:00:00Z'))).toBe(5.5 * HOUR);
    expect(offsetAt('UTC', t('2026-07-15T12:34:56.789Z'))).toBe(0);
  });
});

describe('wallTime', () => {
  const wall = (year: number, month: number, day: number, hour: number, minute: number, second: number) => ({
    year,
    month,
    day,
    hour,
    minute,
    second,
  });

  it.each([
    // zone, instant, its civil date and time there, minute of the day, ISO weekday
    // Sunday 21:30:15.5 UTC is Monday 08:30:15 in Sydney (UTC+11).
    ['Australia/Sydney', '2026-11-29T21:30:15.500Z', wall(2026, 11, 30, 8, 30, 15), 510, 1],
    // Midnight UTC on New Year's Day (a Thursday) is 05:30 in Kolkata, and 19:00 on Wednesday in New York.
    ['Asia/Kolkata', '2026-01-01T00:00:00Z', wall(2026, 1, 1, 5, 30, 0), 330, 4],
    ['America/New_York', '2026-01-01T00:00:00Z', wall(2025, 12, 31, 19, 0, 0), 1140, 3],
    // Local midnight is hour 0; Sunday is ISO day 7.
    ['Europe/Madrid', '2026-11-28T23:00:00Z', wall(2026, 11, 29, 0, 0, 0), 0, 7],
  ])(
    '%s at %s: the civil date and time, the minute of the day and the ISO weekday',
    (zone, at, civil, minuteOfDay, isoDay) => {
      expect(wallTime(zone, t(at))).toEqual({ ...civil, minuteOfDay, isoWeekday: isoDay });
    },
  );

  it('the ISO weekday of a wall time: Sunday 7, Monday 1', () => {
    expect(isoWeekday(Date.UTC(2026, 10, 29))).toBe(7);
    expect(isoWeekday(Date.UTC(2026, 10, 30))).toBe(1);
  });
});

describe('localInstant', () => {
  it.each([
    // zone, the gap day, a time inside the gap, the first instant after the gap, the minute before the gap
    ['Europe/Madrid', [2026, 3, 29], [2, 30], '2026-03-29T01:00:00.000Z', '2026-03-29T00:59:00.000Z'],
    ['America/New_York', [2026, 3, 8], [2, 30], '2026-03-08T07:00:00.000Z', '2026-03-08T06:59:00.000Z'],
    ['Australia/Sydney', [2026, 10, 4], [2, 30], '2026-10-03T16:00:00.000Z', '2026-10-03T15:59:00.000Z'],
    ['Australia/Adelaide', [2026, 10, 4], [2, 30], '2026-10-03T16:30:00.000Z', '2026-10-03T16:29:00.000Z'],
  ])(
    '%s: a time in the spring-forward gap is the first instant after the gap',
    (zone, [y, m, d], [hh, mm], afterGap, lastMinute) => {
      expect(iso(localInstant(y!, m!, d!, hh!, mm!, zone).getTime())).toBe(afterGap);
      // The gap's first minute and its end (03:00) are that same instant; 01:59 is the minute before.
      expect(iso(localInstant(y!, m!, d!, 2, 0, zone).getTime())).toBe(afterGap);
      expect(iso(localInstant(y!, m!, d!, 3, 0, zone).getTime())).toBe(afterGap);
      expect(iso(localInstant(y!, m!, d!, 1, 59, zone).getTime())).toBe(lastMinute);
      expect(iso(localInstant(y!, m!, d!, 3, 1, zone).getTime())).toBe(iso(t(afterGap) + MINUTE));
    },
  );

  it.each([
    // zone, the repeat day, a repeated time, its first occurrence (summer time)
    ['Europe/Madrid', [2026, 10, 25], [2, 30], '2026-10-25T00:30:00.000Z'],
    ['America/New_York', [2026, 11, 1], [1, 30], '2026-11-01T05:30:00.000Z'],
    ['Australia/Sydney', [2026, 4, 5], [2, 30], '2026-04-04T15:30:00.000Z'],
    ['Australia/Adelaide', [2026, 4, 5], [2, 30], '2026-04-04T16:00:00.000Z'],
  ])(
    '%s: a time that happens twice in the autumn is its first occurrence',
    (zone, [y, m, d], [hh, mm], first) => {
      const instant = localInstant(y!, m!, d!, hh!, mm!, zone).getTime();
      expect(iso(instant)).toBe(first);
      // The second occurrence, an hour later, shows the same wall time.
      expect(wallTime(zone, instant + HOUR)).toMatchObject({ hour: hh, minute: mm });
    },
  );

  it('on an ordinary day, and in half-hour zones, is the plain local time', () => {
    expect(iso(localInstant(2026, 6, 1, 9, 0, 'Asia/Kolkata').getTime())).toBe('2026-06-01T03:30:00.000Z');
    expect(iso(localInstant(2026, 1, 15, 9, 0, 'Australia/Adelaide').getTime())).toBe(
      '2026-01-14T22:30:00.000Z',
    );
    expect(iso(localInstant(2026, 11, 10, 9, 0, 'Europe/Madrid').getTime())).toBe('2026-11-10T08:00:00.000Z');
    expect(iso(localInstant(2026, 11, 10, 9, 0, 'UTC').getTime())).toBe('2026-11-10T09:00:00.000Z');
    // Month and year roll over as in Date.UTC.
    expect(iso(localInstant(2026, 12, 32, 0, 0, 'UTC').getTime())).toBe('2027-01-01T00:00:00.000Z');
  });
});

describe('zoneOffsets', () => {
  it('turns instants into wall times and back over a span, with the gap and repeat rules', () => {
    const madrid = zoneOffsets('Europe/Madrid', t('2026-03-01T00:00:00Z'), t('2026-11-01T00:00:00Z'));
    const change = t('2026-03-29T01:00:00Z');
    expect(madrid.offsetAt(change - MS)).toBe(HOUR);
    expect(madrid.offsetAt(change)).toBe(2 * HOUR);
    expect(madrid.wallOf(change)).toBe(Date.UTC(2026, 2, 29, 3, 0));
    expect(madrid.instantOf(Date.UTC(2026, 2, 29, 2, 30))).toBe(change);
    expect(madrid.instantOf(Date.UTC(2026, 9, 25, 2, 30))).toBe(t('2026-10-25T00:30:00Z'));
    expect(madrid.instantOf(Date.UTC(2026, 5, 1, 9, 0))).toBe(t('2026-06-01T07:00:00Z'));
  });

  it('is computed once per zone and span: a call inside the cached span gets the same offsets', () => {
    const a = zoneOffsets('Australia/Sydney', t('2026-10-01T00:00:00Z'), t('2026-10-10T00:00:00Z'));
    const b = zoneOffsets('Australia/Sydney', t('2026-10-02T00:00:00Z'), t('2026-10-09T00:00:00Z'));
    expect(b).toBe(a);
    const later = zoneOffsets('Australia/Sydney', t('2027-06-01T00:00:00Z'), t('2027-06-02T00:00:00Z'));
    expect(later).not.toBe(a);
    expect(later.offsetAt(t('2027-06-01T12:00:00Z'))).toBe(10 * HOUR);
  });
});

describe('the caches are bounded', () => {
  // Distinct spellings Intl accepts: every zone as listed, in lower case and in upper case.
  const spellings = [
    ...new Set(Intl.supportedValuesOf('timeZone').flatMap((z) => [z, z.toLowerCase(), z.toUpperCase()])),
  ];

  it(`keeps at most ${MAX_CACHED_ZONES} zones, tested at the bound`, () => {
    expect(spellings.length).toBeGreaterThan(MAX_CACHED_ZONES);
    const at = t('2026-06-01T00:00:00Z');
    for (const zone of spellings.slice(0, MAX_CACHED_ZONES)) offsetAt(zone, at);
    expect(zoneCacheSizes().formats).toBe(MAX_CACHED_ZONES);
    offsetAt(spellings[MAX_CACHED_ZONES]!, at);
    expect(zoneCacheSizes().formats).toBe(MAX_CACHED_ZONES);
    // Past the bound the answers are still right.
    expect(offsetAt('europe/madrid', at)).toBe(2 * HOUR);
  });

  it(`keeps the offsets of at most ${MAX_CACHED_ZONES} zones, tested at the bound`, () => {
    const from = t('2026-06-01T00:00:00Z');
    for (const zone of spellings.slice(0, MAX_CACHED_ZONES)) zoneOffsets(zone, from, from + HOUR);
    expect(zoneCacheSizes().offsets).toBe(MAX_CACHED_ZONES);
    zoneOffsets(spellings[MAX_CACHED_ZONES]!, from, from + HOUR);
    expect(zoneCacheSizes().offsets).toBe(MAX_CACHED_ZONES);
    expect(zoneOffsets('Asia/Kolkata', from, from + HOUR).offsetAt(from)).toBe(5.5 * HOUR);
  });
});

describe('parseClockTime', () => {
  it('reads "HH:MM" from 00:00 to 23:59 as minutes after midnight', () => {
    expect(parseClockTime('00:00')).toBe(0);
    expect(parseClockTime('09:30')).toBe(570);
    expect(parseClockTime('23:59')).toBe(1439);
  });

  it('refuses anything else', () => {
    for (const bad of ['24:00', '9:00', '09:60', ' 09:00', '09:00 ', '0900', '09:00:00', '', '٠٩:٠٠']) {
      expect(parseClockTime(bad)).toBeUndefined();
    }
  });
});
