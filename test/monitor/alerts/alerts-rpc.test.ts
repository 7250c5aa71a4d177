/**
 * SendAlert, SendMetricAlert and WatchAlerts against the monitor running in-process, with real
 * grpc-js and Connect clients and a local webhook server: an alert reaches a watcher and the webhook
 * (the body is the proto Alert's JSON), the severity filter, a slow watcher closed with
 * RESOURCE_EXHAUSTED, the watcher cap, bad input codes, and cancelled streams leave nothing behind.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import * as grpc from '@grpc/grpc-js';
import { toJson } from '@bufbuild/protobuf';
import { Code, ConnectError } from '@connectrpc/connect';
import { type Alert, AlertKind, AlertSchema } from '../../../shared/gen/svc/monitor/v1/monitor_pb';
import { startMonitorApp, type RunningMonitorApp } from '../../support/monitor-app';
import { unary } from '../../support/grpc-clients';
import { waitFor } from '../../support/wait';
import { listen, type TestServer } from '../../shared/monitoring/helpers';
import { grpcError } from '../../support/call-errors';

interface Watch {
  call: grpc.ClientReadableStream<{ alert: Alert }>;
  alerts: Alert[];
  error: Promise<grpc.ServiceError>;
}

function watch(m: RunningMonitorApp, severities: string[] = []): Watch {
  const fn = m.monitorGrpc.watchAlerts as (req: unknown) => grpc.ClientReadableStream<{ alert: Alert }>;
  const call = fn.call(m.monitorGrpc, { severities });
  const alerts: Alert[] = [];
  call.on('data', (res: { alert: Alert }) => alerts.push(res.alert));
  const error = new Promise<grpc.ServiceError>((resolve) => call.on('error', resolve));
  return { call, alerts, error };
}

const P0 = { tier: 'P0_PAGE' };

describe('alert RPCs with a webhook channel', () => {
  let hook: TestServer & { bodies: unknown[]; headers: IncomingMessage['headers'][] };
  let m: RunningMonitorApp;

  beforeAll(async () => {
    const bodies: unknown[] = [];
    const headers: IncomingMessage['headers'][] = [];
    const server = await listen((req: IncomingMessage, res: ServerResponse) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        bodies.push(JSON.parse(Buffer.concat(chunks).toString('utf8')));
        headers.push(req.headers);
        res.end('ok');
      });
    });
    hook = Object.assign(server, { bodies, headers });
    m = await startMonitorApp({
      name: 'monitor-under-test',
      alerts: {
        max_watchers: 3,
        channels: [
          {
            name: 'hook',
            type: 'webhook',
            webhook: { url: `${hook.url}/alerts/secret-path`, headers: { 'x-hook-token': 'hook-secret' } },
          },
        ],
      },
    });
  });
  afterAll(async () => {
    await m.close();
    await hook.close();
  });
  beforeEach(() => {
    hook.bodies.length = 0;
    hook.headers.length = 0;
  });

  it('SendAlert reaches a grpc-js WatchAlerts stream and the webhook, whose body is the proto Alert JSON', async () => {
    const w = watch(m);
    await waitFor(() => m.app.alerts.hub.watcherCount === 1, 'the watcher');
    const { response } = await unary<{ alertId: string }>(m.monitorGrpc, 'sendAlert', {
      title: 'payments down',
      message: 'no payment succeeded for 5 minutes',
      severity: 'critical',
      context: { ...P0, region: 'eu-west-1' },
      sourceService: 'payments',
    });
    await waitFor(() => w.alerts.length === 1, 'the streamed alert');
    const alert = w.alerts[0]!;
    expect(alert).toMatchObject({
      id: response.alertId,
      alertName: 'payments down',
      kind: AlertKind.GENERIC,
      title: 'payments down',
      severity: 'critical',
      sourceService: 'payments',
      context: { tier: 'P0_PAGE', region: 'eu-west-1' },
    });
    // SendAlert answers once the alert is kept; the channels get it in the background.
    await m.app.alerts.hub.settled();
    expect(hook.bodies).toEqual([toJson(AlertSchema, alert)]);
    expect(hook.bodies[0]).toMatchObject({ id: response.alertId, kind: 'ALERT_KIND_GENERIC' });
    expect(hook.headers[0]!['x-hook-token']).toBe('hook-secret');
    w.call.cancel();
    await waitFor(() => m.app.alerts.hub.watcherCount === 0, 'the watcher to leave');
  });

  it('a watcher with a severity filter gets only those severities, in any case', async () => {
    const w = watch(m, ['HIGH']);
    await waitFor(() => m.app.alerts.hub.watcherCount === 1, 'the watcher');
    for (const severity of ['low', 'High', 'critical', 'high'])
      await unary(m.monitorGrpc, 'sendAlert', { title: `a ${severity}`, severity, context: P0 });
    await waitFor(() => w.alerts.length === 2, 'two alerts');
    expect(w.alerts.map((a) => a.title)).toEqual(['a High', 'a high']);
    await m.app.alerts.hub.settled();
    expect(hook.bodies).toHaveLength(4); // the channel has no filter
    w.call.cancel();
    await waitFor(() => m.app.alerts.hub.watcherCount === 0, 'the watcher to leave');
  });

  it('SendMetricAlert returns the severity it chose and the alert is kind METRIC, named after the metric', async () => {
    const w = watch(m);
    await waitFor(() => m.app.alerts.hub.watcherCount === 1, 'the watcher');
    const critical = await m.monitorConnect.sendMetricAlert({
      metricName: 'queue_depth',
      currentValue: 250,
      threshold: 100,
      context: P0,
    });
    const warning = await m.monitorConnect.sendMetricAlert({
      metricName: 'queue_depth',
      currentValue: 200,
      threshold: 100,
      context: P0,
    });
    expect([critical.severity, warning.severity]).toEqual(['critical', 'warning']);
    await waitFor(() => w.alerts.length === 2, 'two alerts');
    expect(w.alerts[0]).toMatchObject({
      id: critical.alertId,
      kind: AlertKind.METRIC,
      alertName: 'queue_depth',
      sourceService: 'monitor-under-test',
    });
    await m.app.alerts.hub.settled();
    expect(hook.bodies.map((b) => (b as { severity: string }).severity)).toEqual(['critical', 'warning']);
    w.call.cancel();
    await waitFor(() => m.app.alerts.hub.watcherCount === 0, 'the watcher to leave');
  });

  it.each([
    ['sendAlert', { severity: 'high' }, 'title is required'],
    ['sendAlert', { title: 't' }, 'severity is required'],
    ['sendAlert', { title: 't'.repeat(257), severity: 'high' }, 'title is longer than 256'],
    ['sendAlert', { title: 't', severity: 'high', message: 'm'.repeat(4097) }, 'message is longer'],
    [
      'sendAlert',
      {
        title: 't',
        severity: 'high',
        context: Object.fromEntries(Array.from({ length: 33 }, (_, i) => [`k${i}`, 'v'])),
      },
      'more than 32',
    ],
    ['sendMetricAlert', { currentValue: 1, threshold: 1 }, 'metric_name is required'],
    ['sendMetricAlert', { metricName: 'm', currentValue: Number.NaN, threshold: 1 }, 'finite'],
    ['sendMetricAlert', { metricName: 'm', currentValue: 1, threshold: Number.NEGATIVE_INFINITY }, 'finite'],
  ])(
    '%s with bad input (case %#) is INVALID_ARGUMENT with a reason, and nothing is sent',
    async (method, request, reason) => {
      const before = m.app.alerts.hub.recent().length;
      const err = await grpcError(unary(m.monitorGrpc, method, request));
      expect(err.code).toBe(grpc.status.INVALID_ARGUMENT);
      expect(err.details).toContain(reason);
      expect(m.app.alerts.hub.recent()).toHaveLength(before);
      expect(hook.bodies).toEqual([]);
      expect(m.app.alerts.hub.pendingDispatches).toBe(0);
    },
  );

  it('a bad severity filter is INVALID_ARGUMENT over Connect too', async () => {
    const stream = m.monitorConnect.watchAlerts({
      severities: Array.from({ length: 17 }, (_, i) => `s${i}`),
    });
    const err = await (async () => {
      try {
        for await (const _ of stream) void _;
      } catch (e) {
        return ConnectError.from(e);
      }
      throw new Error('expected the stream to fail');
    })();
    expect(err.code).toBe(Code.InvalidArgument);
    expect(err.rawMessage).toContain('more than 16');
  });

  it('beyond alerts.max_watchers, WatchAlerts is RESOURCE_EXHAUSTED; a freed place can be taken again', async () => {
    const open = [watch(m), watch(m), watch(m)];
    await waitFor(() => m.app.alerts.hub.watcherCount === 3, 'three watchers');
    const fourth = watch(m);
    const err = await fourth.error;
    expect(err.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
    expect(err.details).toContain('too many open alert watches');
    open[0]!.call.cancel();
    await waitFor(() => m.app.alerts.hub.watcherCount === 2, 'a place freed');
    const again = watch(m);
    await waitFor(() => m.app.alerts.hub.watcherCount === 3, 'the place taken again');
    for (const w of [...open.slice(1), again]) w.call.cancel();
    await waitFor(() => m.app.alerts.hub.watcherCount === 0, 'every watcher to leave');
  });

  it('after 90 WatchAlerts streams opened and cancelled, no watcher is left', async () => {
    for (let round = 0; round < 30; round++) {
      const batch = [watch(m), watch(m), watch(m)];
      await waitFor(() => m.app.alerts.hub.watcherCount === 3, 'three watchers');
      for (const w of batch) w.call.cancel();
      expect((await Promise.all(batch.map((w) => w.error))).map((e) => e.code)).toEqual([1, 1, 1]);
      // The server learns of the cancel (RST_STREAM) on its own time; the watchers must then leave.
      await waitFor(() => m.app.alerts.hub.watcherCount === 0, 'every watcher to leave');
    }
  });

  it('the webhook URL path and headers never appear in a response or in the streamed alert', async () => {
    const w = watch(m);
    await waitFor(() => m.app.alerts.hub.watcherCount === 1, 'the watcher');
    await unary(m.monitorGrpc, 'sendAlert', { title: 'x', severity: 'low', context: P0 });
    await waitFor(() => w.alerts.length === 1, 'the alert');
    const text = JSON.stringify(toJson(AlertSchema, w.alerts[0]!));
    expect(text).not.toContain('secret-path');
    expect(text).not.toContain('hook-secret');
    w.call.cancel();
    await waitFor(() => m.app.alerts.hub.watcherCount === 0, 'the watcher to leave');
  });
});

describe('a WatchAlerts client that stops reading', () => {
  let m: RunningMonitorApp;
  beforeAll(async () => {
    m = await startMonitorApp({ alerts: { watch_buffer_size: 2 } });
  });
  afterAll(() => m.close());

  it('is closed with RESOURCE_EXHAUSTED once its buffer overflows; other watchers and the service carry on', async () => {
    const slow = watch(m);
    slow.call.pause();
    const fast = watch(m);
    await waitFor(() => m.app.alerts.hub.watcherCount === 2, 'two watchers');
    // Large alerts fill HTTP/2 flow control and the client's buffer quickly; then the hub's buffer of 2.
    const context = Object.fromEntries(Array.from({ length: 32 }, (_, i) => [`k${i}`, 'v'.repeat(1000)]));
    let sent = 0;
    while (m.app.alerts.hub.watcherCount === 2 && sent < 500) {
      await unary(m.monitorGrpc, 'sendAlert', { title: `a${sent}`, severity: 'low', context });
      sent++;
    }
    expect(m.app.alerts.hub.watcherCount).toBe(1);
    slow.call.resume();
    const err = await slow.error;
    expect(err.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
    expect(err.details).toContain('fell 2 alerts behind');
    // What the slow watcher got before it was closed is in order and has no gap.
    expect(slow.alerts.map((a) => a.title)).toEqual(slow.alerts.map((_, i) => `a${i}`));
    await waitFor(() => fast.alerts.length === sent, 'the fast watcher to get every alert');
    expect(fast.alerts.map((a) => a.title)).toEqual(Array.from({ length: sent }, (_, i) => `a${i}`));
    fast.call.cancel();
    await waitFor(() => m.app.alerts.hub.watcherCount === 0, 'the watcher to leave');
  });
});
