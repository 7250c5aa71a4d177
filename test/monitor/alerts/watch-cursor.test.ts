/**
 * WatchAlerts resumes by cursor, over a real grpc-js client against the monitor running in-process:
 * every alert carries its cursor; a stream opened after a cursor replays the kept alerts after it,
 * then goes live, with no gap and no duplicate; a cursor older than what is kept
 * (`alerts.recent_size`), or past the newest alert, gets a reset response first; a malformed one is
 * INVALID_ARGUMENT.
 */
import * as grpc from '@grpc/grpc-js';
import type { WatchAlertsResponse } from '../../../shared/gen/svc/monitor/v1/monitor_pb';
import { startMonitorApp, type RunningMonitorApp } from '../../support/monitor-app';
import { unary } from '../../support/grpc-clients';
import { waitFor } from '../../support/wait';

interface Watch {
  call: grpc.ClientReadableStream<WatchAlertsResponse>;
  responses: WatchAlertsResponse[];
  error: Promise<grpc.ServiceError>;
}

function watch(m: RunningMonitorApp, request: { afterCursor?: string; severities?: string[] }): Watch {
  const fn = m.monitorGrpc.watchAlerts as (req: unknown) => grpc.ClientReadableStream<WatchAlertsResponse>;
  const call = fn.call(m.monitorGrpc, request);
  const responses: WatchAlertsResponse[] = [];
  call.on('data', (res: WatchAlertsResponse) => responses.push(res));
  const error = new Promise<grpc.ServiceError>((resolve) => call.on('error', resolve));
  return { call, responses, error };
}

const P0 = { tier: 'P0_PAGE' };
const send = (m: RunningMonitorApp, title: string, severity = 'low') =>
  unary(m.monitorGrpc, 'sendAlert', { title, severity, context: P0 });
const describeResponse = (r: WatchAlertsResponse): string =>
  r.reset ? `reset@${r.cursor}` : `${r.alert?.title}@${r.cursor}`;

describe('WatchAlerts with a cursor', () => {
  let m: RunningMonitorApp;
  beforeAll(async () => {
    m = await startMonitorApp({ alerts: { recent_size: 4 } });
  });
  afterAll(() => m.close());

  it('when a stream resumes after the cursor of an alert it saw, it gets the later alerts once, then live ones', async () => {
    const first = watch(m, {});
    await waitFor(() => m.app.alerts.hub.watcherCount === 1, 'the first watcher');
    await send(m, 'one');
    await send(m, 'двa 🚀');
    await waitFor(() => first.responses.length === 2, 'two alerts');
    const [one, two] = first.responses;
    expect(one!.cursor).not.toBe('');
    expect(Number(two!.cursor)).toBeGreaterThan(Number(one!.cursor));
    first.call.cancel();
    await send(m, 'three 你好');

    const resumed = watch(m, { afterCursor: one!.cursor });
    await waitFor(() => resumed.responses.length === 2, 'the replay');
    await send(m, 'four שלום');
    await waitFor(() => resumed.responses.length === 3, 'the live alert');
    expect(resumed.responses.map((r) => r.alert?.title)).toEqual(['двa 🚀', 'three 你好', 'four שלום']);
    expect(resumed.responses[0]!.cursor).toBe(two!.cursor);
    expect(resumed.responses.some((r) => r.reset)).toBe(false);
    resumed.call.cancel();
    await waitFor(() => m.app.alerts.hub.watcherCount === 0, 'the watchers to leave');
  });

  it('when the cursor is older than the kept alerts, the first response is a reset at the newest cursor, then live alerts', async () => {
    const probe = watch(m, {});
    await waitFor(() => m.app.alerts.hub.watcherCount === 1, 'the probe watcher');
    await send(m, 'old');
    await waitFor(() => probe.responses.length === 1, 'the old alert');
    const old = probe.responses[0]!.cursor;
    for (let i = 0; i < 6; i++) await send(m, `filler ${i}`);
    await waitFor(() => probe.responses.length === 7, 'the fillers');
    const newest = probe.responses[6]!.cursor;
    probe.call.cancel();

    const resumed = watch(m, { afterCursor: old });
    await waitFor(() => resumed.responses.length === 1, 'the reset');
    await send(m, 'after reset');
    await waitFor(() => resumed.responses.length === 2, 'the live alert');
    expect(resumed.responses.map(describeResponse)).toEqual([
      `reset@${newest}`,
      `after reset@${Number(newest) + 1}`,
    ]);
    resumed.call.cancel();
    await waitFor(() => m.app.alerts.hub.watcherCount === 0, 'the watchers to leave');
  });

  it('when the cursor is past the newest alert (never handed out: a wiped database), a reset at the newest cursor comes first, then live alerts', async () => {
    const probe = watch(m, {});
    await waitFor(() => m.app.alerts.hub.watcherCount === 1, 'the probe watcher');
    await send(m, 'before the future cursor');
    await waitFor(() => probe.responses.length === 1, 'the alert');
    const newest = probe.responses[0]!.cursor;
    probe.call.cancel();

    const resumed = watch(m, { afterCursor: '1000000' });
    await waitFor(() => resumed.responses.length === 1, 'the reset');
    await send(m, 'after a future cursor 🚀');
    await waitFor(() => resumed.responses.length === 2, 'the live alert');
    expect(resumed.responses.map(describeResponse)).toEqual([
      `reset@${newest}`,
      `after a future cursor 🚀@${Number(newest) + 1}`,
    ]);
    resumed.call.cancel();
    await waitFor(() => m.app.alerts.hub.watcherCount === 0, 'the watchers to leave');
  });

  it('when a resumed stream filters by severity, the replay holds only those severities', async () => {
    const probe = watch(m, {});
    await waitFor(() => m.app.alerts.hub.watcherCount === 1, 'the probe watcher');
    await send(m, 'mark');
    await waitFor(() => probe.responses.length === 1, 'the mark');
    probe.call.cancel();
    await send(m, 'quiet', 'low');
    await send(m, 'loud', 'critical');
    const resumed = watch(m, { afterCursor: probe.responses[0]!.cursor, severities: ['CRITICAL'] });
    await waitFor(() => resumed.responses.length === 1, 'the replay');
    expect(resumed.responses.map((r) => r.alert?.title)).toEqual(['loud']);
    resumed.call.cancel();
  });

  it.each(['abc', '-1', '1e3', '9999999999999999'])(
    'when after_cursor is %j, WatchAlerts is INVALID_ARGUMENT naming it',
    async (afterCursor) => {
      const err = await watch(m, { afterCursor }).error;
      expect(err.code).toBe(grpc.status.INVALID_ARGUMENT);
      expect(err.details).toContain('after_cursor');
    },
  );
});
