/**
 * quietHoursEnd: when the quiet period covering an instant ends, in the user's zone. Plain instants
 * (a pure function: the caller's clock gives `at`), DST in Europe/Madrid, America/New_York and
 * Australia/Sydney (the spring-forward gap and the autumn repeat hour, a window starting in the
 * gap, the instants just before, at and after each edge), chained windows and the 8-day bound.
 */
import { InvalidArgumentError } from '../../../shared/errors';
import { MAX_QUIET_PERIOD_MS, quietHoursEnd } from '../../../services/notification/users/quiet-hours';
import type { QuietHours, QuietWindow } from '../../../services/notification/users/types';

const MS = 1;
const quiet = (...windows: QuietWindow[]): QuietHours => ({ windows, holdEmail: false });
const at = (iso: string) => new Date(iso);
const endOf = (q: QuietHours, zone: string, iso: string) =>
  quietHoursEnd(q, zone, at(iso))?.toISOString() ?? null;
const before = (iso: string) => new Date(Date.parse(iso) - MS).toISOString();

// 2026-11-30 is a Monday; Sunday 2026-11-29.
describe('quietHoursEnd in UTC', () => {
  const mondayNight = quiet({ days: [1], start: '22:00', end: '07:00' });

  it('an overnight window starting Monday holds from Monday 22:00 until Tuesday 07:00, and no longer', () => {
    expect(endOf(mondayNight, '', before('2026-11-30T22:00:00Z'))).toBeNull();
    expect(endOf(mondayNight, '', '2026-11-30T22:00:00Z')).toBe('2026-12-01T07:00:00.000Z');
    expect(endOf(mondayNight, '', '2026-12-01T01:00:00Z')).toBe('2026-12-01T07:00:00.000Z');
    expect(endOf(mondayNight, '', before('2026-12-01T07:00:00Z'))).toBe('2026-12-01T07:00:00.000Z');
    expect(endOf(mondayNight, '', '2026-12-01T07:00:00Z')).toBeNull();
  });

  it('a window starts only on its listed days (the day of its start): Sunday night and Tuesday night are free', () => {
    expect(endOf(mondayNight, '', '2026-11-29T23:00:00Z')).toBeNull();
    expect(endOf(mondayNight, '', '2026-11-30T01:00:00Z')).toBeNull();
    expect(endOf(mondayNight, '', '2026-12-01T23:00:00Z')).toBeNull();
  });

  it('empty days mean every day; no windows mean never quiet', () => {
    const daily = quiet({ days: [], start: '13:00', end: '14:30' });
    for (const day of ['2026-11-29', '2026-11-30', '2026-12-03', '2026-12-05']) {
      expect(endOf(daily, '', `${day}T13:15:00Z`)).toBe(`${day}T14:30:00.000Z`);
      expect(endOf(daily, '', `${day}T14:30:00Z`)).toBeNull();
    }
    expect(endOf(quiet(), '', '2026-11-30T13:15:00Z')).toBeNull();
  });

  it('windows that touch or overlap chain into one period: 22:00-02:00 Monday and 02:00-07:00 Tuesday release at 07:00', () => {
    const touching = quiet(
      { days: [1], start: '22:00', end: '02:00' },
      { days: [2], start: '02:00', end: '07:00' },
    );
    expect(endOf(touching, '', '2026-11-30T23:00:00Z')).toBe('2026-12-01T07:00:00.000Z');
    expect(endOf(touching, '', '2026-12-01T02:00:00Z')).toBe('2026-12-01T07:00:00.000Z');
    const overlapping = quiet(
      { days: [1], start: '22:00', end: '03:00' },
      { days: [2], start: '01:00', end: '05:00' },
    );
    expect(endOf(overlapping, '', '2026-11-30T22:30:00Z')).toBe('2026-12-01T05:00:00.000Z');
    // A minute apart: two periods.
    const apart = quiet(
      { days: [1], start: '22:00', end: '01:59' },
      { days: [2], start: '02:00', end: '07:00' },
    );
    expect(endOf(apart, '', '2026-11-30T23:00:00Z')).toBe('2026-12-01T01:59:00.000Z');
    expect(endOf(apart, '', '2026-12-01T01:59:30Z')).toBeNull();
  });

  it('an unknown zone is INVALID_ARGUMENT naming time_zone', () => {
    let err: unknown;
    try {
      quietHoursEnd(quiet({ days: [], start: '22:00', end: '07:00' }), 'Mars/Olympus', new Date());
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(InvalidArgumentError);
    expect((err as InvalidArgumentError).field).toBe('time_zone');
  });
});

describe('quietHoursEnd in the user zone on an ordinary day', () => {
  it('Europe/Madrid in winter (UTC+1): 22:00-07:00 Monday local', () => {
    const q = quiet({ days: [1], start: '22:00', end: '07:00' });
    expect(endOf(q, 'Europe/Madrid', before('2026-11-30T21:00:00Z'))).toBeNull();
    expect(endOf(q, 'Europe/Madrid', '2026-11-30T21:00:00Z')).toBe('2026-12-01T06:00:00.000Z');
    expect(endOf(q, 'Europe/Madrid', '2026-12-01T06:00:00Z')).toBeNull();
  });

  it('Australia/Sydney (UTC+11 in summer): the local day, not the UTC day, decides the weekday', () => {
    // Monday 2026-11-30 08:00 local is Sunday 21:00 UTC.
    const q = quiet({ days: [1], start: '08:00', end: '09:00' });
    expect(endOf(q, 'Australia/Sydney', '2026-11-29T21:30:00Z')).toBe('2026-11-29T22:00:00.000Z');
    expect(endOf(q, 'Australia/Sydney', '2026-11-30T21:30:00Z')).toBeNull();
  });
});

describe('quietHoursEnd across the spring-forward gap', () => {
  // Saturday night into the gap night (Madrid 2026-03-29, New York 2026-03-08, Sydney 2026-10-04).
  const intoGap = quiet({ days: [6], start: '22:00', end: '02:30' });

  it.each([
    // zone, an instant inside the window, the first instant after the gap (release)
    ['Europe/Madrid', '2026-03-28T22:00:00Z', '2026-03-29T01:00:00.000Z'],
    ['America/New_York', '2026-03-08T04:00:00Z', '2026-03-08T07:00:00.000Z'],
    ['Australia/Sydney', '2026-10-03T13:00:00Z', '2026-10-03T16:00:00.000Z'],
  ])(
    '%s: a window ending at 02:30 on the gap night is released at the first instant after the gap',
    (zone, inside, release) => {
      expect(endOf(intoGap, zone, inside)).toBe(release);
      expect(endOf(intoGap, zone, before(release))).toBe(release);
      expect(endOf(intoGap, zone, release)).toBeNull();
      expect(endOf(intoGap, zone, new Date(Date.parse(release) + MS).toISOString())).toBeNull();
    },
  );

  it('Europe/Madrid: ends at 02:00 (the gap start) and 03:00 (the gap end) are the same instant; 03:30 is half an hour later', () => {
    const endingAt = (end: string) => quiet({ days: [6], start: '22:00', end });
    expect(endOf(endingAt('02:00'), 'Europe/Madrid', '2026-03-28T22:00:00Z')).toBe(
      '2026-03-29T01:00:00.000Z',
    );
    expect(endOf(endingAt('03:00'), 'Europe/Madrid', '2026-03-28T22:00:00Z')).toBe(
      '2026-03-29T01:00:00.000Z',
    );
    expect(endOf(endingAt('03:30'), 'Europe/Madrid', '2026-03-28T22:00:00Z')).toBe(
      '2026-03-29T01:30:00.000Z',
    );
    // The same window a week earlier is 8 hours of one offset.
    expect(endOf(endingAt('03:30'), 'Europe/Madrid', '2026-03-21T22:00:00Z')).toBe(
      '2026-03-22T02:30:00.000Z',
    );
  });

  it.each([
    // zone, the gap (first instant after it), the window's end (06:00 local, summer time)
    ['Europe/Madrid', '2026-03-29T01:00:00.000Z', '2026-03-29T04:00:00.000Z'],
    ['America/New_York', '2026-03-08T07:00:00.000Z', '2026-03-08T10:00:00.000Z'],
    ['Australia/Sydney', '2026-10-03T16:00:00.000Z', '2026-10-03T19:00:00.000Z'],
  ])(
    '%s: a window starting inside the gap (02:30) starts at the first instant after it',
    (zone, gapEnd, windowEnd) => {
      const q = quiet({ days: [7], start: '02:30', end: '06:00' });
      expect(endOf(q, zone, before(gapEnd))).toBeNull();
      expect(endOf(q, zone, gapEnd)).toBe(windowEnd);
      expect(endOf(q, zone, before(windowEnd))).toBe(windowEnd);
      expect(endOf(q, zone, windowEnd)).toBeNull();
    },
  );

  it('a window entirely inside the gap does not exist that night (nothing is held)', () => {
    const q = quiet({ days: [7], start: '02:10', end: '02:40' });
    expect(endOf(q, 'Europe/Madrid', '2026-03-29T01:00:00Z')).toBeNull();
    expect(endOf(q, 'Europe/Madrid', before('2026-03-29T01:00:00Z'))).toBeNull();
    // The next Sunday it does (CEST: 00:10Z-00:40Z).
    expect(endOf(q, 'Europe/Madrid', '2026-04-05T00:20:00Z')).toBe('2026-04-05T00:40:00.000Z');
  });
});

describe('quietHoursEnd across the autumn repeat hour', () => {
  it.each([
    // zone, window, an instant inside it, the first occurrence of the end, the second
    [
      'Europe/Madrid',
      '02:30',
      '2026-10-24T21:30:00Z',
      '2026-10-25T00:30:00.000Z',
      '2026-10-25T01:30:00.000Z',
    ],
    [
      'America/New_York',
      '01:30',
      '2026-11-01T03:00:00Z',
      '2026-11-01T05:30:00.000Z',
      '2026-11-01T06:30:00.000Z',
    ],
    [
      'Australia/Sydney',
      '02:30',
      '2026-04-04T12:00:00Z',
      '2026-04-04T15:30:00.000Z',
      '2026-04-04T16:30:00.000Z',
    ],
  ])('%s: an end at %s that happens twice is its first occurrence', (zone, end, inside, first, second) => {
    const q = quiet({ days: [6], start: '22:00', end });
    expect(endOf(q, zone, inside)).toBe(first);
    expect(endOf(q, zone, before(first))).toBe(first);
    expect(endOf(q, zone, first)).toBeNull();
    // The wall clock shows the window's hours again after the change: the window is over.
    expect(endOf(q, zone, before(second))).toBeNull();
    expect(endOf(q, zone, second)).toBeNull();
  });

  it('Europe/Madrid: a window starting in the repeated hour starts at its first occurrence and holds through the second', () => {
    const q = quiet({ days: [7], start: '02:30', end: '05:00' });
    expect(endOf(q, 'Europe/Madrid', before('2026-10-25T00:30:00Z'))).toBeNull();
    expect(endOf(q, 'Europe/Madrid', '2026-10-25T00:30:00Z')).toBe('2026-10-25T04:00:00.000Z');
    expect(endOf(q, 'Europe/Madrid', '2026-10-25T01:45:00Z')).toBe('2026-10-25T04:00:00.000Z');
    expect(endOf(q, 'Europe/Madrid', '2026-10-25T04:00:00Z')).toBeNull();
  });
});

describe('quietHoursEnd is bounded', () => {
  it('a period never runs more than 8 days past the instant asked about (the free minute of the week fell in the gap)', () => {
    // Every minute is quiet except Sunday 02:00-02:01, which does not exist on 2026-03-29 in Madrid:
    // the period from Sunday 22 March to Sunday 5 April would last two weeks.
    const q = quiet(
      { days: [], start: '02:01', end: '02:00' },
      { days: [1, 2, 3, 4, 5, 6], start: '01:00', end: '03:00' },
    );
    const asked = '2026-03-25T12:00:00Z';
    expect(endOf(q, 'Europe/Madrid', asked)).toBe(
      new Date(Date.parse(asked) + MAX_QUIET_PERIOD_MS).toISOString(),
    );
    expect(MAX_QUIET_PERIOD_MS).toBe(8 * 24 * 3600 * 1000);
    // An ordinary week: released at Sunday's free minute.
    expect(endOf(q, 'Europe/Madrid', '2026-11-25T12:00:00Z')).toBe('2026-11-29T01:00:00.000Z');
  });
});
