/**
 * The real OpenTelemetry exporters as clients of the monitor's OTLP endpoints: OTLP/gRPC, OTLP/HTTP
 * JSON and OTLP/HTTP protobuf, for traces (into the started monitor, read back with GetTrace) and
 * for metrics (into a recording sink, and into the started monitor, read back on its /metrics).
 * `buf curl` lists the OTLP services
 * through reflection.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import * as grpc from '@grpc/grpc-js';
import { OTLPTraceExporter as GrpcTraceExporter } from '@opentelemetry/exporter-trace-otlp-grpc';
import { OTLPTraceExporter as HttpTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as ProtoTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { OTLPMetricExporter as GrpcMetricExporter } from '@opentelemetry/exporter-metrics-otlp-grpc';
import { OTLPMetricExporter as HttpMetricExporter } from '@opentelemetry/exporter-metrics-otlp-http';
import { OTLPMetricExporter as ProtoMetricExporter } from '@opentelemetry/exporter-metrics-otlp-proto';
import type { SpanExporter } from '@opentelemetry/sdk-trace-base';
import type { PushMetricExporter } from '@opentelemetry/sdk-metrics';
import { SpanKind } from '../../../shared/gen/svc/monitor/v1/monitor_pb';
import { startMonitorApp, type RunningMonitorApp } from '../../support/monitor-app';
import { recordMetrics, recordTrace, startOtlpServer, type OtlpTestServer } from './support';

const run = promisify(execFile);
const BUF = join(__dirname, '../../../node_modules/.bin/buf');

let monitor: RunningMonitorApp;
let otlp: OtlpTestServer;
beforeAll(async () => {
  monitor = await startMonitorApp();
  otlp = await startOtlpServer({ apiTokens: ['otlp-token'] });
});
afterAll(async () => {
  await monitor.close();
  await otlp.close();
});

const traceExporters: Array<[string, (m: RunningMonitorApp) => SpanExporter]> = [
  ['OTLP/gRPC', (m) => new GrpcTraceExporter({ url: `http://${m.grpcAddress}` })],
  ['OTLP/HTTP JSON', (m) => new HttpTraceExporter({ url: `${m.baseUrl}/v1/traces` })],
  ['OTLP/HTTP protobuf', (m) => new ProtoTraceExporter({ url: `${m.baseUrl}/v1/traces` })],
];

describe.each(traceExporters)('the %s trace exporter', (name, make) => {
  it('exports spans that GetTrace returns with their ids, parent, names and service name', async () => {
    const service = `svc-${name.replace(/\W/g, '-').toLowerCase()}`;
    const { traceId, rootId, childIds } = await recordTrace(make(monitor), service);
    const { spans } = await monitor.monitorConnect.getTrace({ traceId });
    expect(spans).toHaveLength(3);
    // Start order: the root started first.
    expect(spans[0]).toMatchObject({
      traceId,
      spanId: rootId,
      parentSpanId: '',
      name: 'checkout',
      serviceName: service,
      kind: SpanKind.INTERNAL,
      attributes: { 'order.items': 3 },
    });
    const children = spans.slice(1);
    expect(children.map((s) => s.spanId).sort()).toEqual([...childIds].sort());
    for (const child of children) expect(child.parentSpanId).toBe(rootId);
    expect(children.map((s) => s.name).sort()).toEqual(['charge', 'reserve']);
    const reserve = children.find((s) => s.name === 'reserve')!;
    expect(reserve.events[0]).toMatchObject({ name: 'reserved', attributes: { sku: 'x-1' } });
    expect(reserve.endTime!.seconds).toBeGreaterThan(0n);
  });
});

const auth = { authorization: 'Bearer otlp-token' };
const metricExporters: Array<[string, (s: OtlpTestServer) => PushMetricExporter]> = [
  [
    'OTLP/gRPC',
    (s) => {
      const metadata = new grpc.Metadata();
      metadata.set('authorization', auth.authorization);
      return new GrpcMetricExporter({ url: s.grpcUrl, metadata });
    },
  ],
  ['OTLP/HTTP JSON', (s) => new HttpMetricExporter({ url: `${s.baseUrl}/v1/metrics`, headers: auth })],
  ['OTLP/HTTP protobuf', (s) => new ProtoMetricExporter({ url: `${s.baseUrl}/v1/metrics`, headers: auth })],
];

describe.each(metricExporters)('the %s metrics exporter', (name, make) => {
  it('reaches the metrics sink with the resource, names, points and values', async () => {
    const before = otlp.sink.requests.length;
    const service = `metrics-${name.replace(/\W/g, '-').toLowerCase()}`;
    await recordMetrics(make(otlp), service);
    const requests = otlp.sink.requests.slice(before);
    expect(requests).toHaveLength(1);
    const rm = requests[0]!.resourceMetrics[0]!;
    const serviceName = rm.resource?.attributes.find((a) => a.key === 'service.name')?.value?.value;
    expect(serviceName).toEqual({ case: 'stringValue', value: service });
    const metrics = rm.scopeMetrics.flatMap((s) => s.metrics);
    const counter = metrics.find((m) => m.name === 'orders_placed')!;
    expect(counter.data.case).toBe('sum');
    const points = counter.data.case === 'sum' ? counter.data.value.dataPoints : [];
    const byRegion = Object.fromEntries(
      points.map((p) => [p.attributes[0]?.value?.value.value, p.value.value]),
    );
    // The JS SDK sends an integer-valued counter as a double.
    expect(byRegion).toEqual({ eu: 2, us: 5 });
    const histogram = metrics.find((m) => m.name === 'order_value')!;
    expect(histogram.data.case).toBe('histogram');
    if (histogram.data.case === 'histogram') expect(histogram.data.value.dataPoints[0]!.sum).toBe(12.5);
  });
});

const monitorMetricExporters: Array<[string, (m: RunningMonitorApp) => PushMetricExporter]> = [
  ['OTLP/gRPC', (m) => new GrpcMetricExporter({ url: `http://${m.grpcAddress}` })],
  ['OTLP/HTTP JSON', (m) => new HttpMetricExporter({ url: `${m.baseUrl}/v1/metrics` })],
  ['OTLP/HTTP protobuf', (m) => new ProtoMetricExporter({ url: `${m.baseUrl}/v1/metrics` })],
];

describe.each(monitorMetricExporters)('the %s metrics exporter, into the started monitor', (name, make) => {
  it('lands its sums and histograms on the monitor /metrics, labelled with the service', async () => {
    const service = `shop-${name.replace(/\W/g, '-').toLowerCase()}`;
    await recordMetrics(make(monitor), service);
    const text = await (await fetch(`${monitor.baseUrl}/metrics`)).text();
    const line = (re: RegExp) =>
      text.split('\n').find((l) => re.test(l) && l.includes(`service="${service}"`));
    // A cumulative monotonic sum is a counter whose total is the point's value.
    expect(line(/^orders_placed_total\{.*region="eu"/)).toMatch(/ 2$/);
    expect(line(/^orders_placed_total\{.*region="us"/)).toMatch(/ 5$/);
    expect(line(/^order_value_sum\{/)).toMatch(/ 12\.5$/);
    expect(line(/^order_value_count\{/)).toMatch(/ 1$/);
  });
});

describe('reflection', () => {
  it('lists the OTLP services beside MonitorService for buf curl', async () => {
    const { stdout } = await run(
      BUF,
      [
        'curl',
        '--protocol',
        'grpc',
        '--http2-prior-knowledge',
        '--list-methods',
        `http://${monitor.grpcAddress}`,
      ],
      { timeout: 30_000 },
    );
    expect(stdout).toMatch(/^opentelemetry\.proto\.collector\.trace\.v1\.TraceService\/Export$/m);
    expect(stdout).toMatch(/^opentelemetry\.proto\.collector\.metrics\.v1\.MetricsService\/Export$/m);
    expect(stdout).toMatch(/^svc\.monitor\.v1\.MonitorService\/GetTrace$/m);
  });

  it('lets buf curl call TraceService/Export through reflection alone', async () => {
    const traceId = Buffer.from('12'.repeat(16), 'hex').toString('base64');
    const spanId = Buffer.from('34'.repeat(8), 'hex').toString('base64');
    const data = JSON.stringify({
      resourceSpans: [
        {
          resource: { attributes: [{ key: 'service.name', value: { stringValue: 'buf' } }] },
          scopeSpans: [
            {
              spans: [{ traceId, spanId, name: 'curl', startTimeUnixNano: '1000', endTimeUnixNano: '2000' }],
            },
          ],
        },
      ],
    });
    await run(
      BUF,
      [
        'curl',
        '--protocol',
        'grpc',
        '--http2-prior-knowledge',
        '--data',
        data,
        `http://${monitor.grpcAddress}/opentelemetry.proto.collector.trace.v1.TraceService/Export`,
      ],
      { timeout: 30_000 },
    );
    const { spans } = await monitor.monitorConnect.getTrace({ traceId: '12'.repeat(16) });
    expect(spans).toMatchObject([{ spanId: '34'.repeat(8), name: 'curl', serviceName: 'buf' }]);
  });
});
