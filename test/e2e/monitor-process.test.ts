/**
 * The tests against the STARTED monitor process (`node dist/services/monitor/main.js`, real
 * ports), configured only from the environment (JSON lists for the alert channels, the targets, the
 * SLO objectives and the histogram buckets). Its peers are real: grpc-js clients, a local webhook
 * server, a grpc-health-check server it watches, a stand-in DSN host, the OpenTelemetry OTLP/gRPC
 * exporter, and `buf curl` (gRPC with reflection alone; Connect and gRPC-Web with the proto schema).
 */
import { execFile } from 'node:child_process';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type * as grpc from '@grpc/grpc-js';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-grpc';
import {
  MetricType,
  MonitorService,
  type Alert,
  type EvaluateSlosResponse,
  type GetTraceResponse,
} from '../../shared/gen/svc/monitor/v1/monitor_pb';
import { grpcClient, unary, type GenericClient } from '../support/grpc-clients';
import { startServiceProcess, type ServiceProcess } from '../support/service-process';
import { waitFor } from '../support/wait';
import { dsnHost } from '../shared/monitoring/fixtures/dsn-host';
import { listen, promtool, type TestServer } from '../shared/monitoring/helpers';
import { startHealthServer, type HealthServer } from '../monitor/targets/health-server';
import { recordTrace } from '../monitor/otlp/support';

const run = promisify(execFile);
const ROOT = join(__dirname, '../..');
const BUF = join(ROOT, 'node_modules/.bin/buf');
const DSN_KEY = 'c0ffee00c0ffee00c0ffee00c0ffee00';
const SLO = 'checkout-p99';
// Generous: probes every 0.2 s, but a loaded 2-core machine may be slow. A deadline against hangs.
const WAIT_MS = 60_000;

/** The value of one exposition line, by its exact name-and-labels text. */
function valueOf(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

describe('the started monitor process, configured from the environment', () => {
  let hook: TestServer & { alerts: Alert[] };
  let dsn: Awaited<ReturnType<typeof dsnHost>>;
  let target: HealthServer;
  let proc: ServiceProcess;
  let client: GenericClient;
  let watch: grpc.ClientReadableStream<{ alert: Alert }>;
  const streamed: Alert[] = [];

  const scrape = async (): Promise<string> =>
    (await fetch(`http://127.0.0.1:${proc.httpPort}/metrics`)).text();
  // Alerts at the webhook, one per alert id: a retried attempt (max_attempts 3) may repeat one.
  // One per alert and state (a retried POST repeats one): a resolution is the same alert, RESOLVED.
  const hookAlerts = (pred: (a: Alert) => boolean): Alert[] => [
    ...new Map(hook.alerts.filter(pred).map((a) => [`${a.id}/${String(a.state)}`, a] as const)).values(),
  ];

  beforeAll(async () => {
    const alerts: Alert[] = [];
    const server = await listen((req: IncomingMessage, res: ServerResponse) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        alerts.push(JSON.parse(Buffer.concat(chunks).toString('utf8')) as Alert);
        res.end();
      });
    });
    hook = Object.assign(server, { alerts });
    dsn = await dsnHost();
    target = await startHealthServer('SERVING');
    proc = await startServiceProcess('monitor', {
      SVC_MONITOR__ALERTS__CHANNELS: JSON.stringify([
        { name: 'hook', type: 'webhook', webhook: { url: `${hook.url}/alerts`, max_attempts: 3 } },
      ]),
      SVC_MONITOR__TARGETS: JSON.stringify([
        { name: 'orders', grpc_address: target.address, interval_seconds: 0.2, timeout_ms: 2000 },
      ]),
      SVC_MONITOR__SLO__OBJECTIVES: JSON.stringify([
        { name: SLO, metric: 'checkout.latency', percentile: 0.99, threshold_ms: 300, tier: 'P0_PAGE' },
      ]),
      // The background evaluation must not dispatch before the test's explicit EvaluateSlos.
      SVC_MONITOR__SLO__EVALUATION_INTERVAL_SECONDS: '3600',
      SVC_MONITOR__METRICS__HISTOGRAM_BUCKETS: '[0.1,1,10]',
      SVC_MONITOR__ERROR_TRACKING__DSN: `http://${DSN_KEY}@127.0.0.1:${dsn.port}/7`,
    });
    client = grpcClient(MonitorService, `127.0.0.1:${proc.grpcPort}`);

    // One watch for the whole file, live before anything is raised: the watch has no "ready"
    // message, so raise a warm-up alert until one arrives.
    watch = (client.watchAlerts as (r: unknown) => grpc.ClientReadableStream<{ alert: Alert }>).call(
      client,
      {},
    );
    watch.on('data', (r: { alert: Alert }) => streamed.push(r.alert));
    watch.on('error', () => undefined);
    await waitFor(
      () => {
        if (streamed.some((a) => a.title === 'warm-up')) return true;
        void unary(client, 'sendAlert', { title: 'warm-up', severity: 'low', context: { tier: 'P0_PAGE' } });
        return false;
      },
      'the watch to be live',
      WAIT_MS,
    );
  });

  afterAll(async () => {
    watch?.cancel();
    client?.close();
    await proc?.stop();
    target?.stop();
    await hook?.close();
    await dsn?.close();
  });

  it('a grpc-js client records a counter, a gauge and a histogram with 3 labels; /metrics shows them (promtool-valid)', async () => {
    const labels = { region: 'eu', tier: 'gold', path: '/pay' };
    const { response } = await unary<{ accepted: number; rejected: unknown[] }>(client, 'recordMetrics', {
      sourceService: 'shop',
      samples: [
        { name: 'orders_placed', type: MetricType.COUNTER, value: 2, labels },
        { name: 'orders_placed', type: MetricType.COUNTER, value: 3, labels },
        { name: 'cart_items', type: MetricType.GAUGE, value: 9, labels },
        { name: 'cart_items', type: MetricType.GAUGE, value: 4, labels },
        { name: 'pay_seconds', type: MetricType.HISTOGRAM, value: 0.05, labels },
        { name: 'pay_seconds', type: MetricType.HISTOGRAM, value: 5, labels },
        { name: 'pay_seconds', type: MetricType.HISTOGRAM, value: 50, labels },
      ],
    });
    expect([response.accepted, response.rejected]).toEqual([7, []]);

    const text = await scrape();
    // Label keys in sorted order (a protobuf map has none of its own), then the service label.
    const l = 'path="/pay",region="eu",tier="gold",service="shop"';
    expect(valueOf(text, `orders_placed_total{${l}}`)).toBe(5);
    expect(valueOf(text, `cart_items{${l}}`)).toBe(4);
    expect(valueOf(text, `pay_seconds_bucket{${l},le="0.1"}`)).toBe(1);
    expect(valueOf(text, `pay_seconds_bucket{${l},le="1"}`)).toBe(1);
    expect(valueOf(text, `pay_seconds_bucket{${l},le="10"}`)).toBe(2);
    expect(valueOf(text, `pay_seconds_bucket{${l},le="+Inf"}`)).toBe(3);
    expect(valueOf(text, `pay_seconds_sum{${l}}`)).toBe(55.05);
    expect(valueOf(text, `pay_seconds_count{${l}}`)).toBe(3);
    expect(promtool(text)).toEqual({ status: 0, output: '' });
  });

  it('SLO samples lead to a violation, one alert on WatchAlerts and at the webhook; the duplicate is suppressed', async () => {
    const isSlo = (a: Alert) => a.context.slo === SLO;
    const { response: recorded } = await unary<{ accepted: number }>(client, 'recordSloSamples', {
      metric: 'checkout.latency',
      valuesMs: [120, 180, 950],
    });
    expect(recorded.accepted).toBe(3);

    const first = await unary<EvaluateSlosResponse>(client, 'evaluateSlos', { dispatch: true });
    expect(first.response.violations).toHaveLength(1);
    expect(first.response.violations[0]).toMatchObject({ measuredValue: 950, suppressed: false });
    expect(first.response.violations[0]!.slo?.name).toBe(SLO);
    // A P0 alert is sent to the webhook before EvaluateSlos answers; on a loaded machine the
    // webhook's first attempt may time out and be retried, so wait for it rather than assume it.
    await waitFor(() => hookAlerts(isSlo).length > 0, 'the SLO alert at the webhook', WAIT_MS);
    expect(hookAlerts(isSlo)).toHaveLength(1);
    await waitFor(() => streamed.some(isSlo), 'the SLO alert on WatchAlerts', WAIT_MS);
    const alert = streamed.find(isSlo)!;
    expect(alert.alertName).toBe(SLO);
    expect(hookAlerts(isSlo)[0]!.id).toBe(alert.id);

    const second = await unary<EvaluateSlosResponse>(client, 'evaluateSlos', { dispatch: true });
    expect(second.response.violations.map((v) => v.suppressed)).toEqual([true]);
    expect(hookAlerts(isSlo)).toHaveLength(1);
    expect(streamed.filter(isSlo)).toHaveLength(1);
  });

  it('a watched target that stops flips up{target} to 0 and alerts once; back, it alerts once more', async () => {
    const up = async () => /^\w*up\{target="orders"\} (\S+)$/m.exec(await scrape())?.[1];
    const probes = async () =>
      Number(
        /target_probe_duration_seconds_count\{[^}]*target="orders"[^}]*\} (\d+)/.exec(await scrape())?.[1] ??
          0,
      );
    const ofTarget = (a: Alert) => a.context.target === 'orders';
    const upIs = async (v: string) => {
      const deadline = Date.now() + WAIT_MS;
      while ((await up()) !== v) {
        if (Date.now() > deadline) throw new Error(`timed out waiting for up=${v}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    };

    await upIs('1');
    target.stop();
    await upIs('0');
    await waitFor(() => hookAlerts(ofTarget).length >= 1, 'the down alert at the webhook', WAIT_MS);
    expect(hookAlerts(ofTarget)[0]).toMatchObject({ title: 'target orders is down', severity: 'high' });

    await target.restart();
    await upIs('1');
    await waitFor(() => hookAlerts(ofTarget).length >= 2, 'the recovered alert at the webhook', WAIT_MS);
    // A few more probes of the healthy target: one alert per change, not one per probe.
    const atRecovery = await probes();
    const deadline = Date.now() + WAIT_MS;
    while ((await probes()) < atRecovery + 3) {
      if (Date.now() > deadline) throw new Error('timed out waiting for three more probes');
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(hookAlerts(ofTarget).map((a) => [a.title, a.context.state])).toEqual([
      ['target orders is down', 'down'],
      ['target orders recovered', 'recovered'],
    ]);
    await waitFor(() => streamed.filter(ofTarget).length === 2, 'both target alerts on the watch', WAIT_MS);
    expect(streamed.filter(ofTarget).map((a) => a.id)).toEqual(hookAlerts(ofTarget).map((a) => a.id));
  });

  it('CaptureException reaches the stand-in DSN host and answers forwarded: true', async () => {
    const { response } = await unary<{ eventId: string; forwarded: boolean }>(client, 'captureException', {
      type: 'TimeoutError',
      message: 'payment gateway took too long',
      sourceService: 'payments',
    });
    expect(response.forwarded).toBe(true);
    await waitFor(() => dsn.envelopes.length > 0, 'the envelope', WAIT_MS);
    const event = dsn.envelopes[0]!.items.find((i) => i.header.type === 'event')!.payload;
    expect(event.event_id).toBe(response.eventId);
    expect(dsn.envelopes[0]!.path).toMatch(/^\/api\/7\/envelope\//);
    expect(proc.logs.join('\n')).not.toContain(DSN_KEY);
  });

  it("a real OTLP/gRPC exporter's spans are returned by GetTrace", async () => {
    const exporter = new OTLPTraceExporter({ url: `http://127.0.0.1:${proc.grpcPort}` });
    const { traceId, rootId, childIds } = await recordTrace(exporter, 'otlp-client');
    const { response } = await unary<GetTraceResponse>(client, 'getTrace', { traceId });
    expect(response.spans.map((s) => s.spanId).sort()).toEqual([rootId, ...childIds].sort());
    expect(response.spans[0]).toMatchObject({ spanId: rootId, name: 'checkout', serviceName: 'otlp-client' });
    for (const s of response.spans.slice(1)) expect(s.parentSpanId).toBe(rootId);
  });

  describe('buf curl, a client from elsewhere', () => {
    async function bufCurl(args: string[]): Promise<unknown> {
      const { stdout } = await run(BUF, ['curl', ...args], { cwd: ROOT, timeout: 30_000 });
      return JSON.parse(stdout);
    }
    const rpc = (port: number, name: string) =>
      `http://127.0.0.1:${port}/svc.monitor.v1.MonitorService/${name}`;

    it('over gRPC with server reflection alone: ListSlos lists the objective from the environment', async () => {
      const out = (await bufCurl([
        '--protocol',
        'grpc',
        '--http2-prior-knowledge',
        '--data',
        '{}',
        rpc(proc.grpcPort, 'ListSlos'),
      ])) as { slos: Array<{ name: string; thresholdMs: number; tier: string }> };
      expect(out.slos).toEqual([expect.objectContaining({ name: SLO, thresholdMs: 300, tier: 'P0_PAGE' })]);
    });

    it('over Connect with --schema proto: CheckHealth reports the watched target', async () => {
      const out = (await bufCurl([
        '--protocol',
        'connect',
        '--schema',
        'proto',
        '--data',
        '{}',
        rpc(proc.httpPort, 'CheckHealth'),
      ])) as { checks: Array<{ component: string }> };
      expect(out.checks.map((c) => c.component)).toContain('target.orders');
    });

    it('over gRPC-Web with --schema proto: SendAlert is dispatched and streamed', async () => {
      const out = (await bufCurl([
        '--protocol',
        'grpcweb',
        '--schema',
        'proto',
        '--data',
        JSON.stringify({ title: 'from buf curl', severity: 'warning', context: { tier: 'P0_PAGE' } }),
        rpc(proc.httpPort, 'SendAlert'),
      ])) as { alertId: string };
      expect(out.alertId).toMatch(/^[0-9a-f-]{36}$/);
      await waitFor(() => streamed.some((a) => a.id === out.alertId), 'the buf curl alert', WAIT_MS);
      expect(hookAlerts((a) => a.id === out.alertId)).toHaveLength(1);
    });
  });
});
