/**
 * Schedules (services/monitor/oncall/schedules.ts), the OnCallLookup of issue 28, on fixed instants:
 * weekly turns in the schedule's zone, turns across DST both ways (167 and 169 hours) in
 * Europe/Berlin and America/New_York, a hand-off in the spring-forward gap and in the autumn repeat,
 * overrides in the middle of a turn, across a hand-off and overlapping (the later wins), an empty
 * rotation, one user, the time before the rotation starts, and the invariants of the timeline over a
 * year of seeded random instants.
 */
import { InvalidArgumentError, NotFoundError } from '../../../shared/errors';
import type { OnCallShift } from '../../../services/monitor/oncall/ports';
import {
  onCallSchedulesSchema,
  type OnCallScheduleConfigInput,
} from '../../../services/monitor/oncall/schedules-config';
import { Schedules } from '../../../services/monitor/oncall/schedules';

const HOUR = 3_600_000;
const at = (iso: string) => new Date(iso);

function schedules(...list: OnCallScheduleConfigInput[]): Schedules {
  return new Schedules(onCallSchedulesSchema().parse(list));
}

/** A shift as plain text, for readable comparisons. */
function brief(s: OnCallShift | null) {
  return (
    s && { user: s.userId, start: s.start.toISOString(), end: s.end.toISOString(), override: s.override }
  );
}

const BERLIN: OnCallScheduleConfigInput = {
  name: 'primary',
  time_zone: 'Europe/Berlin',
  // 2026-01-05 is a Monday: ann has the week from Monday 5 January 09:00 CET (08:00Z).
  rotation: { users: ['ann', 'bob', 'chen'], hand_off: '09:00', hand_off_day: 'mon', start: '2026-01-05' },
};

describe('a weekly rotation', () => {
  const s = schedules(BERLIN);

  it('gives the user whose week holds the instant, from hand-off to hand-off in the zone', () => {
    expect(brief(s.current('primary', at('2026-01-07T12:00:00Z')))).toEqual({
      user: 'ann',
      start: '2026-01-05T08:00:00.000Z',
      end: '2026-01-12T08:00:00.000Z',
      override: false,
    });
    expect(brief(s.next('primary', at('2026-01-07T12:00:00Z')))).toEqual({
      user: 'bob',
      start: '2026-01-12T08:00:00.000Z',
      end: '2026-01-19T08:00:00.000Z',
      override: false,
    });
    expect(s.current('primary', at('2026-01-07T12:00:00Z'))!.schedule).toBe('primary');
  });

  it('hands off at the hand-off instant exactly: the millisecond before is the old turn', () => {
    expect(s.current('primary', at('2026-01-12T07:59:59.999Z'))!.userId).toBe('ann');
    expect(s.current('primary', at('2026-01-12T08:00:00.000Z'))!.userId).toBe('bob');
  });

  it('goes round the users in order and starts again', () => {
    const users = [0, 1, 2, 3, 4, 7].map(
      (week) =>
        s.current('primary', new Date(Date.parse('2026-01-06T00:00:00Z') + week * 7 * 24 * HOUR))!.userId,
    );
    expect(users).toEqual(['ann', 'bob', 'chen', 'ann', 'bob', 'bob']);
  });

  it('a turn across the spring-forward change lasts 167 hours (Europe/Berlin, 29 March 2026)', () => {
    const turn = s.current('primary', at('2026-03-27T12:00:00Z'))!;
    expect(brief(turn)).toEqual({
      user: 'chen',
      start: '2026-03-23T08:00:00.000Z',
      end: '2026-03-30T07:00:00.000Z',
      override: false,
    });
    expect((turn.end.getTime() - turn.start.getTime()) / HOUR).toBe(167);
  });

  it('a turn across the autumn change lasts 169 hours (Europe/Berlin, 25 October 2026)', () => {
    const turn = s.current('primary', at('2026-10-24T12:00:00Z'))!;
    expect(brief(turn)).toEqual({
      user: 'chen',
      start: '2026-10-19T07:00:00.000Z',
      end: '2026-10-26T08:00:00.000Z',
      override: false,
    });
    expect((turn.end.getTime() - turn.start.getTime()) / HOUR).toBe(169);
  });

  it('turns across both changes in America/New_York: 167 hours in March, 169 in November', () => {
    const ny = schedules({
      name: 'ny',
      time_zone: 'America/New_York',
      rotation: { users: ['ann', 'bob'], hand_off: '10:00', hand_off_day: 'sun', start: '2026-01-04' },
    });
    const spring = ny.current('ny', at('2026-03-05T00:00:00Z'))!;
    expect([spring.start.toISOString(), spring.end.toISOString()]).toEqual([
      '2026-03-01T15:00:00.000Z',
      '2026-03-08T14:00:00.000Z',
    ]);
    expect((spring.end.getTime() - spring.start.getTime()) / HOUR).toBe(167);
    const autumn = ny.current('ny', at('2026-10-28T00:00:00Z'))!;
    expect([autumn.start.toISOString(), autumn.end.toISOString()]).toEqual([
      '2026-10-25T14:00:00.000Z',
      '2026-11-01T15:00:00.000Z',
    ]);
    expect((autumn.end.getTime() - autumn.start.getTime()) / HOUR).toBe(169);
  });

  it('a hand-off at 02:30 on the spring-forward day happens at the first valid instant after (03:00 CEST)', () => {
    const gap = schedules({
      name: 'gap',
      time_zone: 'Europe/Berlin',
      rotation: { users: ['ann', 'bob'], hand_off: '02:30', hand_off_day: 'sun', start: '2026-03-01' },
    });
    expect(brief(gap.current('gap', at('2026-03-25T12:00:00Z')))).toEqual({
      user: 'bob',
      start: '2026-03-22T01:30:00.000Z', // 02:30 CET
      end: '2026-03-29T01:00:00.000Z', // 02:30 does not exist that day: 03:00 CEST
      override: false,
    });
    expect(gap.current('gap', at('2026-03-29T00:59:59.999Z'))!.userId).toBe('bob');
    expect(brief(gap.current('gap', at('2026-03-29T01:00:00Z')))).toEqual({
      user: 'ann',
      start: '2026-03-29T01:00:00.000Z',
      end: '2026-04-05T00:30:00.000Z', // 02:30 CEST
      override: false,
    });
  });

  it('a hand-off at 01:30 on the autumn day in America/New_York happens at its first occurrence (EDT)', () => {
    const repeat = schedules({
      name: 'repeat',
      time_zone: 'America/New_York',
      rotation: { users: ['ann', 'bob'], hand_off: '01:30', hand_off_day: 'sun', start: '2026-10-25' },
    });
    const turn = repeat.current('repeat', at('2026-10-27T00:00:00Z'))!;
    expect(turn.end.toISOString()).toBe('2026-11-01T05:30:00.000Z'); // 01:30 EDT, not 01:30 EST (06:30Z)
    expect(repeat.current('repeat', at('2026-11-01T06:00:00Z'))!.userId).toBe('bob');
  });

  it('turns of length_weeks weeks', () => {
    const fortnight = schedules({
      ...BERLIN,
      name: 'fortnight',
      rotation: { ...BERLIN.rotation, length_weeks: 2 },
    });
    expect(brief(fortnight.current('fortnight', at('2026-01-14T12:00:00Z')))).toMatchObject({
      user: 'ann',
      start: '2026-01-05T08:00:00.000Z',
      end: '2026-01-19T08:00:00.000Z',
    });
    expect(fortnight.next('fortnight', at('2026-01-14T12:00:00Z'))!.userId).toBe('bob');
  });

  it('starts on the first hand-off day on or after `start`: nobody before it, users[0] next', () => {
    // 2026-01-07 is a Wednesday: the first hand-off is Monday 12 January 09:00 CET.
    const later = schedules({
      ...BERLIN,
      name: 'later',
      rotation: { ...BERLIN.rotation, start: '2026-01-07' },
    });
    expect(later.current('later', at('2026-01-08T12:00:00Z'))).toBeNull();
    expect(brief(later.next('later', at('2026-01-08T12:00:00Z')))).toEqual({
      user: 'ann',
      start: '2026-01-12T08:00:00.000Z',
      end: '2026-01-19T08:00:00.000Z',
      override: false,
    });
  });

  it('one user is on call every week, each week its own shift', () => {
    const solo = schedules({ ...BERLIN, name: 'solo', rotation: { ...BERLIN.rotation, users: ['ann'] } });
    expect(brief(solo.current('solo', at('2026-01-07T12:00:00Z')))).toMatchObject({
      user: 'ann',
      end: '2026-01-12T08:00:00.000Z',
    });
    expect(brief(solo.next('solo', at('2026-01-07T12:00:00Z')))).toMatchObject({
      user: 'ann',
      start: '2026-01-12T08:00:00.000Z',
      end: '2026-01-19T08:00:00.000Z',
    });
  });

  it('keeps user ids in CJK, right-to-left text and emoji as they are', () => {
    const intl = schedules({
      ...BERLIN,
      name: 'intl',
      rotation: { ...BERLIN.rotation, users: ['李雷', 'عائشة', '🦊 fox'] },
    });
    expect(intl.current('intl', at('2026-01-07T12:00:00Z'))!.userId).toBe('李雷');
    expect(intl.next('intl', at('2026-01-07T12:00:00Z'))!.userId).toBe('عائشة');
    expect(intl.current('intl', at('2026-01-20T12:00:00Z'))!.userId).toBe('🦊 fox');
  });

  it('answers for instants far from the start (the year 9999)', () => {
    const far = at('9999-06-01T00:00:00Z');
    const turn = s.current('primary', far)!;
    expect(turn.start.getTime()).toBeLessThanOrEqual(far.getTime());
    expect(turn.end.getTime()).toBeGreaterThan(far.getTime());
    expect(s.next('primary', far)!.start).toEqual(turn.end);
  });
});

describe('overrides', () => {
  it('one in the middle of a turn cuts it in three: rotation, override, rotation again', () => {
    const s = schedules({
      ...BERLIN,
      overrides: [{ user: 'dan', start: '2026-01-07T18:00:00+01:00', end: '2026-01-08T09:00:00+01:00' }],
    });
    expect(brief(s.current('primary', at('2026-01-07T12:00:00Z')))).toEqual({
      user: 'ann',
      start: '2026-01-05T08:00:00.000Z',
      end: '2026-01-07T17:00:00.000Z',
      override: false,
    });
    expect(brief(s.next('primary', at('2026-01-07T12:00:00Z')))).toEqual({
      user: 'dan',
      start: '2026-01-07T17:00:00.000Z',
      end: '2026-01-08T08:00:00.000Z',
      override: true,
    });
    expect(brief(s.current('primary', at('2026-01-07T20:00:00Z')))).toEqual({
      user: 'dan',
      start: '2026-01-07T17:00:00.000Z',
      end: '2026-01-08T08:00:00.000Z',
      override: true,
    });
    expect(brief(s.next('primary', at('2026-01-07T20:00:00Z')))).toEqual({
      user: 'ann',
      start: '2026-01-08T08:00:00.000Z',
      end: '2026-01-12T08:00:00.000Z',
      override: false,
    });
    expect(s.current('primary', at('2026-01-09T00:00:00Z'))!.start.toISOString()).toBe(
      '2026-01-08T08:00:00.000Z',
    );
  });

  it('one across a hand-off holds its whole span; the next turn starts when it ends', () => {
    const s = schedules({
      ...BERLIN,
      overrides: [{ user: 'erin', start: '2026-01-11T20:00:00Z', end: '2026-01-12T12:00:00Z' }],
    });
    expect(brief(s.current('primary', at('2026-01-11T10:00:00Z')))).toMatchObject({
      user: 'ann',
      end: '2026-01-11T20:00:00.000Z',
    });
    expect(brief(s.current('primary', at('2026-01-12T09:00:00Z')))).toEqual({
      user: 'erin',
      start: '2026-01-11T20:00:00.000Z',
      end: '2026-01-12T12:00:00.000Z',
      override: true,
    });
    expect(brief(s.next('primary', at('2026-01-12T09:00:00Z')))).toEqual({
      user: 'bob',
      start: '2026-01-12T12:00:00.000Z',
      end: '2026-01-19T08:00:00.000Z',
      override: false,
    });
  });

  it('where two overlap the later in the list wins, and the earlier resumes after it', () => {
    const s = schedules({
      ...BERLIN,
      overrides: [
        { user: 'fay', start: '2026-01-20T00:00:00Z', end: '2026-01-22T00:00:00Z' },
        { user: 'gus', start: '2026-01-21T00:00:00Z', end: '2026-01-21T12:00:00Z' },
      ],
    });
    expect(brief(s.current('primary', at('2026-01-20T12:00:00Z')))).toEqual({
      user: 'fay',
      start: '2026-01-20T00:00:00.000Z',
      end: '2026-01-21T00:00:00.000Z',
      override: true,
    });
    expect(brief(s.next('primary', at('2026-01-20T12:00:00Z')))).toMatchObject({
      user: 'gus',
      start: '2026-01-21T00:00:00.000Z',
      end: '2026-01-21T12:00:00.000Z',
    });
    expect(brief(s.next('primary', at('2026-01-21T06:00:00Z')))).toEqual({
      user: 'fay',
      start: '2026-01-21T12:00:00.000Z',
      end: '2026-01-22T00:00:00.000Z',
      override: true,
    });
    expect(brief(s.next('primary', at('2026-01-21T18:00:00Z')))).toEqual({
      user: 'chen',
      start: '2026-01-22T00:00:00.000Z',
      end: '2026-01-26T08:00:00.000Z',
      override: false,
    });
  });

  it('an earlier override inside a later one never shows', () => {
    const s = schedules({
      ...BERLIN,
      overrides: [
        { user: 'hal', start: '2026-01-20T06:00:00Z', end: '2026-01-20T08:00:00Z' },
        { user: 'ivy', start: '2026-01-20T00:00:00Z', end: '2026-01-20T12:00:00Z' },
      ],
    });
    expect(brief(s.current('primary', at('2026-01-20T07:00:00Z')))).toMatchObject({
      user: 'ivy',
      start: '2026-01-20T00:00:00.000Z',
      end: '2026-01-20T12:00:00.000Z',
    });
  });

  it('with an empty rotation nobody is on call (null) but inside overrides', () => {
    const empty = schedules({
      name: 'empty',
      time_zone: 'UTC',
      rotation: { users: [], start: '2026-01-05' },
    });
    expect(empty.current('empty', at('2026-01-07T12:00:00Z'))).toBeNull();
    expect(empty.next('empty', at('2026-01-07T12:00:00Z'))).toBeNull();

    const covered = schedules({
      name: 'covered',
      time_zone: 'UTC',
      rotation: { users: [], start: '2026-01-05' },
      overrides: [
        { user: 'jo', start: '2026-01-10T00:00:00Z', end: '2026-01-11T00:00:00Z' },
        { user: 'kim', start: '2026-01-15T00:00:00Z', end: '2026-01-16T00:00:00Z' },
      ],
    });
    expect(covered.current('covered', at('2026-01-07T12:00:00Z'))).toBeNull();
    expect(brief(covered.next('covered', at('2026-01-07T12:00:00Z')))).toMatchObject({
      user: 'jo',
      start: '2026-01-10T00:00:00.000Z',
      override: true,
    });
    expect(covered.current('covered', at('2026-01-10T12:00:00Z'))!.userId).toBe('jo');
    // After jo's override nobody is on call until kim's: kim is next.
    expect(brief(covered.next('covered', at('2026-01-10T12:00:00Z')))).toMatchObject({
      user: 'kim',
      start: '2026-01-15T00:00:00.000Z',
    });
    expect(covered.next('covered', at('2026-01-15T12:00:00Z'))).toBeNull();
  });

  it('before the rotation starts an override is on call, and the rotation is next after it', () => {
    const s = schedules({
      ...BERLIN,
      overrides: [{ user: 'lee', start: '2026-01-01T00:00:00Z', end: '2026-01-02T00:00:00Z' }],
    });
    expect(s.current('primary', at('2026-01-01T12:00:00Z'))!.userId).toBe('lee');
    expect(brief(s.next('primary', at('2026-01-01T12:00:00Z')))).toMatchObject({
      user: 'ann',
      start: '2026-01-05T08:00:00.000Z',
    });
  });
});

describe('the timeline over a year (seeded random instants)', () => {
  it('every shift holds its instant, the next one starts where it ends, and is what is on call then', () => {
    const s = schedules({
      ...BERLIN,
      overrides: [
        { user: 'dan', start: '2026-03-28T22:00:00+01:00', end: '2026-03-30T10:00:00+02:00' },
        { user: 'erin', start: '2026-10-25T01:30:00+02:00', end: '2026-10-25T02:30:00+01:00' },
        { user: 'fay', start: '2026-06-01T00:00:00Z', end: '2026-06-20T00:00:00Z' },
        { user: 'gus', start: '2026-06-05T00:00:00Z', end: '2026-06-06T00:00:00Z' },
      ],
    });
    let seed = 28;
    const random = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
    const from = Date.parse('2026-01-05T08:00:00Z');
    for (let i = 0; i < 400; i++) {
      const t = new Date(from + Math.floor(random() * 365 * 24 * HOUR));
      const now = s.current('primary', t)!;
      const next = s.next('primary', t)!;
      expect(now.start.getTime()).toBeLessThanOrEqual(t.getTime());
      expect(now.end.getTime()).toBeGreaterThan(t.getTime());
      expect(next.start).toEqual(now.end);
      expect(s.current('primary', next.start)).toEqual(next);
    }
  });
});

describe('the lookup', () => {
  const s = schedules(BERLIN, { ...BERLIN, name: 'secondary' });

  it('lists the schedule names in config order', () => {
    expect(s.names()).toEqual(['primary', 'secondary']);
  });

  it('an unknown schedule is NotFoundError naming it', () => {
    expect(() => s.current('nope', at('2026-01-07T12:00:00Z'))).toThrow(NotFoundError);
    expect(() => s.next('nope', at('2026-01-07T12:00:00Z'))).toThrow('no on-call schedule named "nope"');
  });

  it('an invalid Date is InvalidArgumentError', () => {
    expect(() => s.current('primary', new Date(NaN))).toThrow(InvalidArgumentError);
  });

  it('statuses lists every schedule with now and next', () => {
    expect(
      s
        .statuses(at('2026-01-07T12:00:00Z'))
        .map((x) => [x.name, x.timeZone, x.current?.userId, x.next?.userId]),
    ).toEqual([
      ['primary', 'Europe/Berlin', 'ann', 'bob'],
      ['secondary', 'Europe/Berlin', 'ann', 'bob'],
    ]);
  });
});
