/**
 * OnCallService (WhoIsOnCall, ListSchedules) on the monitor running in-process with API tokens, with
 * a real grpc-js client on the gRPC port and Connect clients (JSON and binary) on the HTTP port:
 * answers for a fixed instant (an override included), now when `at` is unset (a manual clock, in
 * memory through createRouterTransport), NOT_FOUND for an unknown schedule, INVALID_ARGUMENT for an
 * empty name and for timestamps out of range, PERMISSION_DENIED to a token without `monitor:read`,
 * and reflection listing the service.
 */
import * as grpc from '@grpc/grpc-js';
import { create } from '@bufbuild/protobuf';
import { TimestampSchema, timestampFromDate, timestampDate } from '@bufbuild/protobuf/wkt';
import { Code, createClient, createRouterTransport, type Client } from '@connectrpc/connect';
import { createConnectTransport } from '@connectrpc/connect-node';
import { OnCallService } from '../../../shared/gen/svc/monitor/v1/oncall_pb';
import type { OnCallScheduleConfigInput } from '../../../services/monitor/oncall/schedules-config';
import { onCallSchedulesSchema } from '../../../services/monitor/oncall/schedules-config';
import { Schedules } from '../../../services/monitor/oncall/schedules';
import { OnCallRpc } from '../../../services/monitor/rpc/oncall-rpc';
import { startMonitorApp, type RunningMonitorApp } from '../../support/monitor-app';
import { grpcClient, listServicesByReflection, unary, type GenericClient } from '../../support/grpc-clients';
import { connectError, grpcError } from '../../support/call-errors';
import { ManualClock } from '../../support/manual-clock';

const READER = 'reader-token-oncall';
const WRITER = 'writer-token-without-read';

const SCHEDULES: OnCallScheduleConfigInput[] = [
  {
    name: 'primary',
    time_zone: 'Europe/Berlin',
    rotation: {
      users: ['ann', 'عائشة', '李雷'],
      hand_off: '09:00',
      hand_off_day: 'mon',
      start: '2026-01-05',
    },
    overrides: [{ user: '🦊 fox', start: '2026-01-07T18:00:00+01:00', end: '2026-01-08T09:00:00+01:00' }],
  },
  { name: 'nobody', time_zone: 'America/New_York', rotation: { users: [], start: '2026-01-04' } },
];

const iso = (t: { seconds: bigint; nanos: number } | undefined) =>
  t ? timestampDate(t as never).toISOString() : undefined;

interface WireShift {
  userId: string;
  startTime?: { seconds: bigint; nanos: number };
  endTime?: { seconds: bigint; nanos: number };
  override: boolean;
}
const plain = (s: WireShift | undefined) =>
  s && { user: s.userId, start: iso(s.startTime), end: iso(s.endTime), override: s.override };

const AT = new Date('2026-01-07T20:00:00Z');
const EXPECTED_AT_AT = {
  current: {
    user: '🦊 fox',
    start: '2026-01-07T17:00:00.000Z',
    end: '2026-01-08T08:00:00.000Z',
    override: true,
  },
  next: { user: 'ann', start: '2026-01-08T08:00:00.000Z', end: '2026-01-12T08:00:00.000Z', override: false },
};

describe('OnCallService on both monitor ports', () => {
  let m: RunningMonitorApp;
  let grpcOnCall: GenericClient;
  let connectJson: Client<typeof OnCallService>;
  let connectBinary: Client<typeof OnCallService>;
  const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

  beforeAll(async () => {
    m = await startMonitorApp({
      oncall: { schedules: SCHEDULES },
      server: {
        api_tokens: [
          { name: 'reader', token: READER, scopes: ['monitor:read'] },
          { name: 'writer', token: WRITER, scopes: ['monitor:ingest', 'monitor:alerts'] },
        ],
      },
    });
    grpcOnCall = grpcClient(OnCallService, m.grpcAddress);
    connectJson = createClient(
      OnCallService,
      createConnectTransport({ baseUrl: m.baseUrl, httpVersion: '1.1' }),
    );
    connectBinary = createClient(
      OnCallService,
      createConnectTransport({ baseUrl: m.baseUrl, httpVersion: '1.1', useBinaryFormat: true }),
    );
  });
  afterAll(async () => {
    grpcOnCall?.close();
    await m?.close();
  });

  it('WhoIsOnCall over gRPC answers who is on call at the instant (an override) and who is next', async () => {
    const { response } = await unary<{
      schedule: string;
      timeZone: string;
      at: { seconds: bigint; nanos: number };
      current?: WireShift;
      next?: WireShift;
    }>(
      grpcOnCall,
      'whoIsOnCall',
      { schedule: 'primary', at: timestampFromDate(AT) },
      { metadata: bearer(READER) },
    );
    expect(response.schedule).toBe('primary');
    expect(response.timeZone).toBe('Europe/Berlin');
    expect(iso(response.at)).toBe(AT.toISOString());
    expect({ current: plain(response.current), next: plain(response.next) }).toEqual(EXPECTED_AT_AT);
  });

  it('WhoIsOnCall over Connect (JSON) answers the same', async () => {
    const res = await connectJson.whoIsOnCall(
      { schedule: 'primary', at: timestampFromDate(AT) },
      { headers: bearer(READER) },
    );
    expect({ current: plain(res.current), next: plain(res.next) }).toEqual(EXPECTED_AT_AT);
  });

  it('WhoIsOnCall without `at` answers for now', async () => {
    const before = Date.now();
    const res = await connectJson.whoIsOnCall({ schedule: 'primary' }, { headers: bearer(READER) });
    const answeredAt = timestampDate(res.at!).getTime();
    expect(answeredAt).toBeGreaterThanOrEqual(before);
    expect(answeredAt).toBeLessThanOrEqual(Date.now());
    expect(timestampDate(res.current!.startTime!).getTime()).toBeLessThanOrEqual(answeredAt);
    expect(timestampDate(res.current!.endTime!).getTime()).toBeGreaterThan(answeredAt);
  });

  it('a schedule with nobody on call answers without current and next', async () => {
    const res = await connectJson.whoIsOnCall(
      { schedule: 'nobody', at: timestampFromDate(AT) },
      { headers: bearer(READER) },
    );
    expect(res.current).toBeUndefined();
    expect(res.next).toBeUndefined();
    expect(res.timeZone).toBe('America/New_York');
  });

  it('ListSchedules lists every schedule in config order with now and next, on both ports', async () => {
    const viaConnect = await connectJson.listSchedules(
      { at: timestampFromDate(AT) },
      { headers: bearer(READER) },
    );
    const { response: viaGrpc } = await unary<{
      schedules: Array<{ name: string; timeZone: string; current?: WireShift; next?: WireShift }>;
    }>(grpcOnCall, 'listSchedules', { at: timestampFromDate(AT) }, { metadata: bearer(READER) });
    for (const res of [viaConnect, viaGrpc]) {
      expect(
        res.schedules.map((s) => ({
          name: s.name,
          zone: s.timeZone,
          current: plain(s.current),
          next: plain(s.next),
        })),
      ).toEqual([
        { name: 'primary', zone: 'Europe/Berlin', ...EXPECTED_AT_AT },
        { name: 'nobody', zone: 'America/New_York', current: undefined, next: undefined },
      ]);
    }
  });

  it('an unknown schedule is NOT_FOUND on both ports, its name cut in the message', async () => {
    const long = '🦊'.repeat(200);
    const g = await grpcError(
      unary(grpcOnCall, 'whoIsOnCall', { schedule: long }, { metadata: bearer(READER) }),
    );
    expect(g.code).toBe(grpc.status.NOT_FOUND);
    expect(g.details).toContain('no on-call schedule named');
    expect(g.details.length).toBeLessThan(400);
    const c = await connectError(connectJson.whoIsOnCall({ schedule: 'nope' }, { headers: bearer(READER) }));
    expect(c.code).toBe(Code.NotFound);
    expect(c.rawMessage).toBe('no on-call schedule named "nope"');
  });

  it('an empty schedule name is INVALID_ARGUMENT on both ports', async () => {
    const g = await grpcError(
      unary(grpcOnCall, 'whoIsOnCall', { schedule: '' }, { metadata: bearer(READER) }),
    );
    expect(g.code).toBe(grpc.status.INVALID_ARGUMENT);
    const c = await connectError(connectJson.whoIsOnCall({ schedule: '' }, { headers: bearer(READER) }));
    expect(c.code).toBe(Code.InvalidArgument);
    expect(c.rawMessage).toContain('schedule is required');
  });

  it('a timestamp outside 0001-01-01..9999-12-31 or with bad nanos is INVALID_ARGUMENT on both ports', async () => {
    const bad = [
      create(TimestampSchema, { seconds: 253_402_300_800n, nanos: 0 }),
      create(TimestampSchema, { seconds: -62_135_596_801n, nanos: 0 }),
      create(TimestampSchema, { seconds: 0n, nanos: -1 }),
      create(TimestampSchema, { seconds: 0n, nanos: 1_000_000_000 }),
    ];
    for (const at of bad) {
      const g = await grpcError(
        unary(grpcOnCall, 'whoIsOnCall', { schedule: 'primary', at }, { metadata: bearer(READER) }),
      );
      expect(g.code).toBe(grpc.status.INVALID_ARGUMENT);
      expect(g.details).toContain('at is not a valid time');
      const c = await connectError(
        connectBinary.whoIsOnCall({ schedule: 'primary', at }, { headers: bearer(READER) }),
      );
      expect(c.code).toBe(Code.InvalidArgument);
      const l = await connectError(connectBinary.listSchedules({ at }, { headers: bearer(READER) }));
      expect(l.code).toBe(Code.InvalidArgument);
    }
    // The range's own ends are answered.
    const edge = await connectBinary.whoIsOnCall(
      { schedule: 'primary', at: create(TimestampSchema, { seconds: 253_402_300_799n, nanos: 999_999_999 }) },
      { headers: bearer(READER) },
    );
    expect(edge.current?.userId).toBeDefined();
    const first = await connectBinary.whoIsOnCall(
      { schedule: 'primary', at: create(TimestampSchema, { seconds: -62_135_596_800n, nanos: 0 }) },
      { headers: bearer(READER) },
    );
    expect(first.current).toBeUndefined();
    // Before the rotation's first hand-off nobody is on call; ann's first turn is next.
    expect(plain(first.next)).toMatchObject({ user: 'ann', start: '2026-01-05T08:00:00.000Z' });
  });

  it('a token without monitor:read is PERMISSION_DENIED on both ports; none at all is UNAUTHENTICATED', async () => {
    for (const method of ['whoIsOnCall', 'listSchedules'] as const) {
      const g = await grpcError(
        unary(grpcOnCall, method, { schedule: 'primary' }, { metadata: bearer(WRITER) }),
      );
      expect(g.code).toBe(grpc.status.PERMISSION_DENIED);
      const c = await connectError(
        method === 'whoIsOnCall'
          ? connectJson.whoIsOnCall({ schedule: 'primary' }, { headers: bearer(WRITER) })
          : connectJson.listSchedules({}, { headers: bearer(WRITER) }),
      );
      expect(c.code).toBe(Code.PermissionDenied);
      const none = await grpcError(unary(grpcOnCall, method, { schedule: 'primary' }));
      expect(none.code).toBe(grpc.status.UNAUTHENTICATED);
    }
  });

  it('server reflection lists the service', async () => {
    expect(await listServicesByReflection(m.grpcAddress, READER)).toContain('svc.monitor.v1.OnCallService');
  });
});

describe('OnCallRpc in memory', () => {
  it('answers for the clock’s now when `at` is unset', async () => {
    const clock = new ManualClock(new Date('2026-01-07T12:00:00Z'));
    const schedules = new Schedules(onCallSchedulesSchema().parse(SCHEDULES));
    const client = createClient(
      OnCallService,
      createRouterTransport((router) => router.service(OnCallService, new OnCallRpc(schedules, clock))),
    );
    const first = await client.whoIsOnCall({ schedule: 'primary' });
    expect(iso(first.at)).toBe('2026-01-07T12:00:00.000Z');
    expect(first.current?.userId).toBe('ann');
    clock.advance(8 * 3_600_000); // 20:00Z: inside the override
    const later = await client.whoIsOnCall({ schedule: 'primary' });
    expect(later.current?.userId).toBe('🦊 fox');
    expect(later.current?.override).toBe(true);
    clock.advance(5 * 24 * 3_600_000); // Monday 12 January 20:00Z: the second turn
    expect((await client.listSchedules({})).schedules[0]!.current?.userId).toBe('عائشة');
  });
});
