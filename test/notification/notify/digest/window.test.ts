/**
 * The digest window (notify/digest/window.ts): which digest an event at its own time goes to, for a
 * rolling `window` and a `daily_at` local time of the user, across DST in two zones.
 */
import {
  type AcceptingDigest,
  placeEvent,
  windowOf,
} from '../../../../services/notification/notify/digest/window';
import { localInstant } from '../../../../shared/time/zone';

const at = (iso: string) => new Date(iso);
const rolling = { window: 15 * 60 };
const daily = { daily_at: '09:00' };

describe('windowOf', () => {
  it('a rolling window starts at the event and lasts `window` seconds, [start, start + window)', () => {
    expect(windowOf(at('2026-11-01T10:07:30.123Z'), rolling)).toEqual({
      start: at('2026-11-01T10:07:30.123Z'),
      end: at('2026-11-01T10:22:30.123Z'),
    });
  });

  it('a daily window runs from the previous daily_at to the next one in the user zone', () => {
    // 08:59 in Madrid (UTC+1 in November): the window ends at 09:00 the same day.
    expect(windowOf(at('2026-11-10T07:59:00Z'), daily, 'Europe/Madrid')).toEqual({
      start: at('2026-11-09T08:00:00Z'),
      end: at('2026-11-10T08:00:00Z'),
    });
    // 09:00 exactly belongs to the next window: [09:00, next 09:00).
    expect(windowOf(at('2026-11-10T08:00:00Z'), daily, 'Europe/Madrid')).toEqual({
      start: at('2026-11-10T08:00:00Z'),
      end: at('2026-11-11T08:00:00Z'),
    });
  });

  it('without a time zone, daily_at is UTC', () => {
    expect(windowOf(at('2026-11-10T10:00:00Z'), daily)).toEqual({
      start: at('2026-11-10T09:00:00Z'),
      end: at('2026-11-11T09:00:00Z'),
    });
    expect(windowOf(at('2026-11-10T10:00:00Z'), daily, '')).toEqual(
      windowOf(at('2026-11-10T10:00:00Z'), daily, 'UTC'),
    );
  });

  it('across the spring-forward change a daily window is 23 hours long (Europe/Madrid, 29 March 2026)', () => {
    const w = windowOf(at('2026-03-28T12:00:00Z'), daily, 'Europe/Madrid');
    expect(w).toEqual({ start: at('2026-03-28T08:00:00Z'), end: at('2026-03-29T07:00:00Z') });
  });

  it('across the autumn change a daily window is 25 hours long (America/New_York, 1 November 2026)', () => {
    const w = windowOf(at('2026-10-31T20:00:00Z'), daily, 'America/New_York');
    expect(w).toEqual({ start: at('2026-10-31T13:00:00Z'), end: at('2026-11-01T14:00:00Z') });
  });

  it('a daily_at inside the spring-forward gap is the first instant after the gap', () => {
    // New York skips 02:00-03:00 on 8 March 2026: 02:30 does not exist; 03:00 EDT is 07:00Z.
    expect(localInstant(2026, 3, 8, 2, 30, 'America/New_York')).toEqual(at('2026-03-08T07:00:00Z'));
    const w = windowOf(at('2026-03-08T05:00:00Z'), { daily_at: '02:30' }, 'America/New_York');
    expect(w.end).toEqual(at('2026-03-08T07:00:00Z'));
    expect(w.start).toEqual(at('2026-03-07T07:30:00Z'));
  });

  it('a daily_at inside the autumn repeat hour is its first occurrence', () => {
    // New York repeats 01:00-02:00 on 1 November 2026: 01:30 EDT (05:30Z) comes first, then 01:30 EST.
    expect(localInstant(2026, 11, 1, 1, 30, 'America/New_York')).toEqual(at('2026-11-01T05:30:00Z'));
    // An event in the second 01:15 (06:15Z) is after the day's 01:30 boundary: its window ends the next day.
    const w = windowOf(at('2026-11-01T06:15:00Z'), { daily_at: '01:30' }, 'America/New_York');
    expect(w).toEqual({ start: at('2026-11-01T05:30:00Z'), end: at('2026-11-02T06:30:00Z') });
  });

  it('refuses a time zone that is not IANA with INVALID_ARGUMENT', () => {
    expect(() => windowOf(at('2026-11-10T10:00:00Z'), daily, 'Mars/Olympus')).toThrow(
      expect.objectContaining({ code: 'INVALID_ARGUMENT' }),
    );
  });
});

describe('placeEvent', () => {
  const now = at('2026-11-01T10:00:00Z');
  const open = (id: string, start: string, end: string): AcceptingDigest => ({
    id,
    start: at(start),
    end: at(end),
  });

  it('joins the accepting digest whose window holds the event', () => {
    const digests = [
      open('a', '2026-11-01T09:30:00Z', '2026-11-01T09:45:00Z'),
      open('b', '2026-11-01T09:50:00Z', '2026-11-01T10:05:00Z'),
    ];
    expect(placeEvent(at('2026-11-01T09:44:59.999Z'), now, digests, rolling)).toEqual({ join: 'a' });
    expect(placeEvent(at('2026-11-01T09:50:00Z'), now, digests, rolling)).toEqual({ join: 'b' });
  });

  it('an event older than every accepting digest joins the earliest one after it', () => {
    const digests = [
      open('b', '2026-11-01T09:50:00Z', '2026-11-01T10:05:00Z'),
      open('a', '2026-11-01T09:30:00Z', '2026-11-01T09:45:00Z'),
    ];
    expect(placeEvent(at('2026-11-01T09:46:00Z'), now, digests, rolling)).toEqual({ join: 'b' });
    expect(placeEvent(at('2026-11-01T09:00:00Z'), now, digests, rolling)).toEqual({ join: 'a' });
  });

  it('opens a new digest at the event when no accepting digest holds it or starts after it', () => {
    const digests = [open('a', '2026-11-01T09:30:00Z', '2026-11-01T09:45:00Z')];
    expect(placeEvent(at('2026-11-01T09:55:00Z'), now, digests, rolling)).toEqual({
      open: { start: at('2026-11-01T09:55:00Z'), end: at('2026-11-01T10:10:00Z') },
    });
  });

  it('an event whose own window has already ended goes to the window of now, never a digest sent at once alone', () => {
    expect(placeEvent(at('2026-11-01T09:00:00Z'), now, [], rolling)).toEqual({
      open: { start: now, end: at('2026-11-01T10:15:00Z') },
    });
    // Daily: yesterday's event arriving after today's 09:00 goes to today's window.
    expect(placeEvent(at('2026-11-01T08:59:00Z'), now, [], daily)).toEqual({
      open: { start: at('2026-11-01T09:00:00Z'), end: at('2026-11-02T09:00:00Z') },
    });
  });
});
