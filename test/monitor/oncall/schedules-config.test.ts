/**
 * `monitor.oncall.schedules` through loadMonitorConfig: a schedule from the environment as a JSON
 * list, the defaults, and every refusal at load with its key path (unknown zone, bad HH:MM, bad
 * dates, an override ending before it starts, duplicate names, unknown keys), and each bound at and
 * past it (schedules, users, overrides, turn length, name and user id lengths).
 */
import { ConfigError } from '../../../shared/config';
import { loadMonitorConfig, type MonitorConfigInput } from '../../../services/monitor/config';
import {
  MAX_LENGTH_WEEKS,
  MAX_OVERRIDES,
  MAX_ROTATION_USERS,
  MAX_SCHEDULE_NAME_LENGTH,
  MAX_SCHEDULES,
  MAX_USER_ID_LENGTH,
} from '../../../services/monitor/oncall/schedules-config';

type ScheduleInput = NonNullable<NonNullable<MonitorConfigInput['oncall']>['schedules']>[number];

const load = (schedules: unknown[]) =>
  loadMonitorConfig({ oncall: { schedules: schedules as ScheduleInput[] } }, { env: {}, file: null });

function failure(schedules: unknown[]): string {
  try {
    load(schedules);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as Error).message;
  }
  throw new Error('expected the config to be refused');
}

function schedule(name = 'primary', extra: Record<string, unknown> = {}) {
  return {
    name,
    time_zone: 'Europe/Berlin',
    rotation: { users: ['ann', 'bob'], hand_off: '09:00', hand_off_day: 'mon', start: '2026-01-05' },
    ...extra,
  };
}

const override = (i: number) => ({
  user: 'dan',
  start: new Date(Date.UTC(2026, 0, 1) + i * 3_600_000).toISOString(),
  end: new Date(Date.UTC(2026, 0, 1) + (i + 1) * 3_600_000).toISOString(),
});

describe('monitor.oncall.schedules config', () => {
  it('is empty by default', () => {
    expect(loadMonitorConfig(undefined, { env: {}, file: null }).oncall.schedules).toEqual([]);
  });

  it('reads a schedule from SVC_MONITOR__ONCALL__SCHEDULES as a JSON list, with defaults', () => {
    const { oncall } = loadMonitorConfig(undefined, {
      env: {
        SVC_MONITOR__ONCALL__SCHEDULES: JSON.stringify([
          {
            name: 'db',
            time_zone: 'America/New_York',
            rotation: { users: ['李雷', 'عائشة'], start: '2026-01-05' },
            overrides: [{ user: '🦊', start: '2026-03-28T20:00:00+01:00', end: '2026-03-29T08:00Z' }],
          },
        ]),
      },
      file: null,
    });
    expect(oncall.schedules).toEqual([
      {
        name: 'db',
        time_zone: 'America/New_York',
        rotation: {
          users: ['李雷', 'عائشة'],
          hand_off: '09:00',
          hand_off_day: 'mon',
          start: { year: 2026, month: 1, day: 5 },
          length_weeks: 1,
        },
        overrides: [
          { user: '🦊', start: new Date('2026-03-28T19:00:00Z'), end: new Date('2026-03-29T08:00:00Z') },
        ],
      },
    ]);
  });

  it('refuses an unknown time zone, naming the key', () => {
    expect(failure([schedule('primary', { time_zone: 'Mars/Olympus' })])).toContain(
      'monitor.oncall.schedules[0].time_zone: expected an IANA time zone such as Europe/Berlin',
    );
  });

  it('refuses a hand-off that is not HH:MM, and an unknown day', () => {
    for (const bad of ['9:00', '24:00', '09:60', 'noon', '09:00:00']) {
      expect(failure([{ ...schedule(), rotation: { ...schedule().rotation, hand_off: bad } }])).toContain(
        'monitor.oncall.schedules[0].rotation.hand_off: expected a local time HH:MM (00:00 to 23:59)',
      );
    }
    expect(
      failure([{ ...schedule(), rotation: { ...schedule().rotation, hand_off_day: 'monday' } }]),
    ).toContain(
      'monitor.oncall.schedules[0].rotation.hand_off_day: expected a day mon, tue, wed, thu, fri, sat or sun',
    );
  });

  it('refuses a start that is not a real local date', () => {
    for (const bad of ['2026-02-30', '2026-13-01', '05/01/2026', '2026-01-05T00:00:00Z', '']) {
      expect(failure([{ ...schedule(), rotation: { ...schedule().rotation, start: bad } }])).toContain(
        'monitor.oncall.schedules[0].rotation.start: expected a local date YYYY-MM-DD',
      );
    }
    expect(failure([{ ...schedule(), rotation: { users: [] } }])).toContain(
      'monitor.oncall.schedules[0].rotation.start:',
    );
  });

  it('refuses overrides without an offset, on impossible days, or ending at or before their start', () => {
    const bad = (o: Record<string, unknown>) => failure([schedule('primary', { overrides: [o] })]);
    expect(bad({ user: 'dan', start: '2026-03-28T20:00:00', end: '2026-03-29T08:00:00Z' })).toContain(
      'monitor.oncall.schedules[0].overrides[0].start: expected a time with its offset',
    );
    expect(bad({ user: 'dan', start: '2026-02-30T20:00:00Z', end: '2026-03-29T08:00:00Z' })).toContain(
      'monitor.oncall.schedules[0].overrides[0].start:',
    );
    expect(bad({ user: 'dan', start: '2026-03-29T08:00:00Z', end: '2026-03-29T10:00:00+02:00' })).toContain(
      'monitor.oncall.schedules[0].overrides[0].end: expected end after start',
    );
    expect(bad({ user: 'dan', start: '2026-03-29T08:00:00Z', end: '2026-03-28T08:00:00Z' })).toContain(
      'monitor.oncall.schedules[0].overrides[0].end: expected end after start',
    );
    expect(bad({ user: '', start: '2026-03-28T08:00:00Z', end: '2026-03-29T08:00:00Z' })).toContain(
      'monitor.oncall.schedules[0].overrides[0].user: expected a user id',
    );
  });

  it('refuses duplicate names and unknown keys', () => {
    expect(failure([schedule('primary'), schedule('secondary'), schedule('primary')])).toContain(
      'monitor.oncall.schedules[2].name: duplicate schedule name "primary" (already used by entry [0])',
    );
    expect(failure([schedule('primary', { timezone: 'UTC' })])).toContain('monitor.oncall.schedules[0]');
    expect(failure([schedule('bad name')])).toContain('monitor.oncall.schedules[0].name:');
  });

  it(`holds ${MAX_SCHEDULES} schedules and refuses one more`, () => {
    const names = (n: number) => Array.from({ length: n }, (_, i) => schedule(`s${i}`));
    expect(load(names(MAX_SCHEDULES)).oncall.schedules).toHaveLength(MAX_SCHEDULES);
    expect(failure(names(MAX_SCHEDULES + 1))).toContain(
      `monitor.oncall.schedules: expected at most ${MAX_SCHEDULES} schedules`,
    );
  });

  it(`holds ${MAX_ROTATION_USERS} users in a rotation and refuses one more`, () => {
    const users = (n: number) => Array.from({ length: n }, (_, i) => `user-${i}`);
    const withUsers = (n: number) => [
      { ...schedule(), rotation: { ...schedule().rotation, users: users(n) } },
    ];
    expect(load(withUsers(MAX_ROTATION_USERS)).oncall.schedules[0]!.rotation.users).toHaveLength(
      MAX_ROTATION_USERS,
    );
    expect(failure(withUsers(MAX_ROTATION_USERS + 1))).toContain(
      `monitor.oncall.schedules[0].rotation.users: expected at most ${MAX_ROTATION_USERS} users`,
    );
  });

  it(`holds ${MAX_OVERRIDES} overrides and refuses one more`, () => {
    const overrides = (n: number) => Array.from({ length: n }, (_, i) => override(i));
    expect(
      load([schedule('primary', { overrides: overrides(MAX_OVERRIDES) })]).oncall.schedules[0]!.overrides,
    ).toHaveLength(MAX_OVERRIDES);
    expect(failure([schedule('primary', { overrides: overrides(MAX_OVERRIDES + 1) })])).toContain(
      `monitor.oncall.schedules[0].overrides: expected at most ${MAX_OVERRIDES} overrides`,
    );
  });

  it(`takes turns of 1 to ${MAX_LENGTH_WEEKS} weeks`, () => {
    const weeks = (n: number) => [{ ...schedule(), rotation: { ...schedule().rotation, length_weeks: n } }];
    expect(load(weeks(MAX_LENGTH_WEEKS)).oncall.schedules[0]!.rotation.length_weeks).toBe(MAX_LENGTH_WEEKS);
    expect(failure(weeks(MAX_LENGTH_WEEKS + 1))).toContain(
      `monitor.oncall.schedules[0].rotation.length_weeks: expected at most ${MAX_LENGTH_WEEKS}`,
    );
    expect(failure(weeks(0))).toContain('rotation.length_weeks: expected a positive integer');
  });

  it(`takes names of ${MAX_SCHEDULE_NAME_LENGTH} characters and user ids of ${MAX_USER_ID_LENGTH} code points (emoji count once)`, () => {
    expect(load([schedule('n'.repeat(MAX_SCHEDULE_NAME_LENGTH))]).oncall.schedules).toHaveLength(1);
    expect(failure([schedule('n'.repeat(MAX_SCHEDULE_NAME_LENGTH + 1))])).toContain(
      `monitor.oncall.schedules[0].name: expected a name of at most ${MAX_SCHEDULE_NAME_LENGTH} characters`,
    );
    const withUser = (id: string) => [{ ...schedule(), rotation: { ...schedule().rotation, users: [id] } }];
    expect(load(withUser('🦊'.repeat(MAX_USER_ID_LENGTH))).oncall.schedules[0]!.rotation.users[0]).toBe(
      '🦊'.repeat(MAX_USER_ID_LENGTH),
    );
    expect(failure(withUser('🦊'.repeat(MAX_USER_ID_LENGTH + 1)))).toContain(
      `monitor.oncall.schedules[0].rotation.users[0]: expected a user id of at most ${MAX_USER_ID_LENGTH} characters`,
    );
    expect(failure(withUser('ann\nbob'))).toContain(
      'monitor.oncall.schedules[0].rotation.users[0]: expected a user id without control characters',
    );
  });
});
