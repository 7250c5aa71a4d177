/**
 * Many WatchAlerts streams cancelled back to back over grpc-js: the server notices every one, so the
 * hub's watchers all close (no watcher, and no listener, left behind by a client that went away).
 * A poll with a generous limit, never a timing assertion.
 */
import * as grpc from '@grpc/grpc-js';
import { MonitorService, type Alert } from '../../../shared/gen/svc/monitor/v1/monitor_pb';
import { startMonitorApp, type RunningMonitorApp } from '../../support/monitor-app';
import { grpcClient, unary, type GenericClient } from '../../support/grpc-clients';
import { waitFor } from '../../support/wait';

const STREAMS = 200;

describe('WatchAlerts streams cancelled all at once', () => {
  let m: RunningMonitorApp;
  beforeAll(async () => {
    m = await startMonitorApp();
  });
  afterAll(async () => {
    await m?.close();
  });

  function watch(): {
    call: grpc.ClientReadableStream<{ alert: Alert }>;
    got: Alert[];
    status?: grpc.StatusObject;
  } {
    const call = (
      m.monitorGrpc.watchAlerts as (r: unknown) => grpc.ClientReadableStream<{ alert: Alert }>
    ).call(m.monitorGrpc, {});
    const w: ReturnType<typeof watch> = { call, got: [] };
    call.on('data', (r: { alert: Alert }) => w.got.push(r.alert));
    call.on('status', (s) => (w.status = s));
    call.on('error', () => undefined);
    return w;
  }

  it(`${STREAMS} open watches, cancelled in one tick, leave the hub with no watcher`, async () => {
    const hub = m.app.alerts.hub;
    const watches = Array.from({ length: STREAMS }, () => watch());
    await waitFor(() => hub.watcherCount === STREAMS, `${STREAMS} watchers`, 60_000);
    // Each watch is live: one alert reaches all of them.
    await unary(m.monitorGrpc, 'sendAlert', {
      title: 'before cancel',
      severity: 'low',
      context: { tier: 'P0_PAGE' },
    });
    await waitFor(() => watches.every((w) => w.got.length === 1), 'the alert on every watch', 60_000);

    for (const w of watches) w.call.cancel();
    await waitFor(() => hub.watcherCount === 0, 'every watcher to close', 60_000);
    expect(watches.every((w) => w.status?.code === grpc.status.CANCELLED)).toBe(true);

    // The hub still serves new watches after the mass cancel.
    const after = watch();
    await waitFor(() => hub.watcherCount === 1, 'the new watcher', 60_000);
    await unary(m.monitorGrpc, 'sendAlert', {
      title: 'after cancel',
      severity: 'low',
      context: { tier: 'P0_PAGE' },
    });
    await waitFor(() => after.got.length === 1, 'the alert on the new watch', 60_000);
    expect(after.got[0]!.title).toBe('after cancel');
    after.call.cancel();
    await waitFor(() => hub.watcherCount === 0, 'the last watcher to close', 60_000);
  });

  it('watches cancelled in the same tick they were opened are released once that client goes away', async () => {
    // grpc-js 1.14.7 (client side) has a race: ResolvingCall.cancelWithStatus before its child call
    // exists ends the call locally, but the child is created a microtask later anyway, sends the
    // request and is never reset. The server sees a live HTTP/2 stream and cannot know; measured:
    // 200 handlers started, 0 'cancelled' events, until the client's channel closed. What the server
    // owes: a bounded number of such watches (alerts.max_watchers) and their release with the
    // connection.
    const hub = m.app.alerts.hub;
    const other = grpcClient(MonitorService, m.grpcAddress);
    const watchOn = (c: GenericClient) => {
      const call = (c.watchAlerts as (r: unknown) => grpc.ClientReadableStream<unknown>).call(c, {});
      call.on('error', () => undefined);
      return call;
    };
    // A live watch first, so the channel is connected and the calls reach the server at once.
    const live = watchOn(other);
    await waitFor(() => hub.watcherCount === 1, 'the first watcher', 60_000);
    live.cancel();
    await waitFor(() => hub.watcherCount === 0, 'the first watcher to close', 60_000);

    for (let i = 0; i < STREAMS; i++) watchOn(other).cancel();
    other.close();
    await waitFor(() => hub.watcherCount === 0, 'no watcher left once the client is gone', 60_000);

    // The hub is not stuck: a new watch on the test's own client opens and closes.
    const probe = watch();
    await waitFor(() => hub.watcherCount === 1, 'a fresh watcher', 60_000);
    probe.call.cancel();
    await waitFor(() => hub.watcherCount === 0, 'no watcher after the probe', 60_000);
  });
});
