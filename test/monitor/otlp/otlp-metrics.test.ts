/**
 * applyOtlpMetrics: OTLP requests built with protobuf-es `create()`, and real OpenTelemetry SDK
 * exporters (OTLP/HTTP JSON and protobuf) posting to a local receiver that decodes them with the
 * generated schemas, all landing in the same store as RecordMetrics.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';
import { create, fromBinary, fromJson, toBinary, type MessageInitShape } from '@bufbuild/protobuf';
import { Registry } from 'prom-client';
import { metrics as otelMetrics } from '@opentelemetry/api';
import { OTLPMetricExporter as JsonExporter } from '@opentelemetry/exporter-metrics-otlp-http';
import { OTLPMetricExporter as ProtoExporter } from '@opentelemetry/exporter-metrics-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  AggregationTemporality as SdkTemporality,
  MeterProvider,
  PeriodicExportingMetricReader,
  type PushMetricExporter,
} from '@opentelemetry/sdk-metrics';
import {
  ExportMetricsServiceRequestSchema,
  ExportMetricsServiceResponseSchema,
} from '../../../shared/gen/opentelemetry/proto/collector/metrics/v1/metrics_service_pb';
import {
  AggregationTemporality,
  DataPointFlags,
} from '../../../shared/gen/opentelemetry/proto/metrics/v1/metrics_pb';
import { appendToRegistry, MetricIngestStore } from '../../../services/monitor/ingest/metric-store';
import { applyOtlpMetrics } from '../../../services/monitor/otlp/otlp-metrics';
import { promtool } from '../../shared/monitoring/helpers';

const LIMITS = {
  max_metric_names: 100,
  max_series_per_metric: 100,
  max_series: 1000,
  max_labels_per_sample: 8,
  max_label_value_length: 64,
  max_description_length: 256,
  series_ttl_seconds: 3600,
  histogram_buckets: [1, 10],
};

function setup() {
  const registry = new Registry();
  const store = new MetricIngestStore({ registry, limits: LIMITS });
  appendToRegistry(registry, store);
  return { registry, store };
}

function valueOf(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

type RequestInit = MessageInitShape<typeof ExportMetricsServiceRequestSchema>;

function request(
  service: string | undefined,
  metrics: NonNullable<RequestInit['resourceMetrics']>[number]['scopeMetrics'],
) {
  return create(ExportMetricsServiceRequestSchema, {
    resourceMetrics: [
      {
        resource: {
          attributes:
            service === undefined
              ? []
              : [{ key: 'service.name', value: { value: { case: 'stringValue', value: service } } }],
        },
        scopeMetrics: metrics,
      },
    ],
  });
}

const attr = (key: string, value: string) => ({
  key,
  value: { value: { case: 'stringValue' as const, value } },
});

describe('applyOtlpMetrics with requests built by create()', () => {
  it('maps sums, gauges and histograms by temporality and monotonicity, with service.name as the service label', async () => {
    const { registry, store } = setup();
    const req = request('checkout', [
      {
        metrics: [
          {
            name: 'http.requests',
            data: {
              case: 'sum',
              value: {
                isMonotonic: true,
                aggregationTemporality: AggregationTemporality.CUMULATIVE,
                dataPoints: [
                  { attributes: [attr('http.method', 'GET')], value: { case: 'asInt', value: 41n } },
                ],
              },
            },
          },
          {
            name: 'bytes.sent',
            data: {
              case: 'sum',
              value: {
                isMonotonic: true,
                aggregationTemporality: AggregationTemporality.DELTA,
                dataPoints: [{ value: { case: 'asDouble', value: 1.5 } }],
              },
            },
          },
          {
            name: 'inflight',
            description: 'Requests in flight',
            data: {
              case: 'sum',
              value: {
                isMonotonic: false,
                aggregationTemporality: AggregationTemporality.CUMULATIVE,
                dataPoints: [{ value: { case: 'asInt', value: -2n } }],
              },
            },
          },
          {
            name: 'cpu.temp',
            data: { case: 'gauge', value: { dataPoints: [{ value: { case: 'asDouble', value: 61.5 } }] } },
          },
          {
            name: 'latency',
            data: {
              case: 'histogram',
              value: {
                aggregationTemporality: AggregationTemporality.CUMULATIVE,
                dataPoints: [{ explicitBounds: [0.1, 1], bucketCounts: [2n, 3n, 1n], count: 6n, sum: 4.2 }],
              },
            },
          },
          {
            name: 'payload',
            data: {
              case: 'summary',
              value: {
                dataPoints: [{ count: 4n, sum: 400, quantileValues: [{ quantile: 0.5, value: 90 }] }],
              },
            },
          },
        ],
      },
    ]);
    expect(applyOtlpMetrics(store, req)).toEqual({ rejectedDataPoints: 0, errorMessage: '' });
    // The same cumulative point again is the same total; the delta adds up.
    expect(applyOtlpMetrics(store, req).rejectedDataPoints).toBe(0);

    const text = await registry.metrics();
    expect(valueOf(text, 'http_requests_total{http_method="GET",service="checkout"}')).toBe(41);
    expect(valueOf(text, 'bytes_sent_total{service="checkout"}')).toBe(3);
    expect(text).toContain('# TYPE inflight gauge');
    expect(text).toContain('# HELP inflight Requests in flight');
    expect(valueOf(text, 'inflight{service="checkout"}')).toBe(-2);
    expect(valueOf(text, 'cpu_temp{service="checkout"}')).toBe(61.5);
    expect(valueOf(text, 'latency_bucket{service="checkout",le="0.1"}')).toBe(2);
    expect(valueOf(text, 'latency_bucket{service="checkout",le="1"}')).toBe(5);
    expect(valueOf(text, 'latency_bucket{service="checkout",le="+Inf"}')).toBe(6);
    expect(valueOf(text, 'latency_count{service="checkout"}')).toBe(6);
    expect(valueOf(text, 'payload_sum{service="checkout"}')).toBe(400);
    expect(valueOf(text, 'payload_count{service="checkout"}')).toBe(4);
    expect(promtool(text)).toEqual({ status: 0, output: '' });
  });

  it('rejects exponential histograms and bad points, counts them, and says why in errorMessage', async () => {
    const { registry, store } = setup();
    const req = request(undefined, [
      {
        metrics: [
          {
            name: 'exp',
            data: {
              case: 'exponentialHistogram',
              value: {
                aggregationTemporality: AggregationTemporality.DELTA,
                dataPoints: [{ count: 1n }, { count: 2n }],
              },
            },
          },
          {
            name: 'temp',
            data: {
              case: 'gauge',
              value: {
                dataPoints: [
                  { attributes: [attr('__hidden', 'x')], value: { case: 'asDouble', value: 1 } },
                  { value: { case: 'asDouble', value: NaN } },
                  // No recorded value: a staleness marker, skipped without being an error.
                  { flags: DataPointFlags.FLAG_NO_RECORDED_VALUE },
                  { value: { case: 'asDouble', value: 20 } },
                ],
              },
            },
          },
        ],
      },
    ]);
    const outcome = applyOtlpMetrics(store, req);
    expect(outcome.rejectedDataPoints).toBe(4);
    expect(outcome.errorMessage).toContain('exponential histograms are not supported');
    expect(outcome.errorMessage).toContain('reserved');
    expect(outcome.errorMessage).toContain('finite');
    const text = await registry.metrics();
    expect(valueOf(text, 'temp{service="unknown"}')).toBe(20);
    expect(valueOf(text, 'monitor_ingest_samples_rejected_total{reason="unsupported"}')).toBe(2);
    expect(valueOf(text, 'monitor_ingest_samples_rejected_total{reason="reserved_label_name"}')).toBe(1);
    expect(valueOf(text, 'monitor_ingest_samples_rejected_total{reason="invalid_value"}')).toBe(1);
  });

  it('holds max_labels_per_sample, max_label_value_length and max_ingest_bytes at the bound: points over them are refused and counted', async () => {
    const { registry, store } = setup();
    const labels = (n: number, length = 1) =>
      Array.from({ length: n }, (_, i) => attr(`k${i}`, 'v'.repeat(length)));
    const point = (attributes: ReturnType<typeof attr>[]) => ({
      attributes,
      value: { case: 'asDouble' as const, value: 1 },
    });
    const gauge = (name: string, points: ReturnType<typeof point>[]) => ({
      name,
      data: { case: 'gauge' as const, value: { dataPoints: points } },
    });
    const outcome = applyOtlpMetrics(
      store,
      request('s', [
        {
          metrics: [
            // setup(): at most 8 labels of at most 64 characters (service.name the 65th character).
            gauge('at_label_cap', [point(labels(8))]),
            gauge('over_label_cap', [point(labels(9))]),
            gauge('at_length_cap', [point(labels(1, 64))]),
            gauge('over_length_cap', [point(labels(1, 65))]),
          ],
        },
      ]),
    );
    expect(outcome.rejectedDataPoints).toBe(2);
    expect(outcome.errorMessage).toMatch(/more than 8 labels/);
    expect(outcome.errorMessage).toMatch(/longer than 64 characters/);
    const text = await registry.metrics();
    expect(
      valueOf(text, 'at_label_cap{k0="v",k1="v",k2="v",k3="v",k4="v",k5="v",k6="v",k7="v",service="s"}'),
    ).toBe(1);
    expect(text).not.toContain('over_label_cap');
    expect(text).not.toContain('over_length_cap');
    expect(valueOf(text, 'monitor_ingest_samples_rejected_total{reason="too_many_labels"}')).toBe(1);
    expect(valueOf(text, 'monitor_ingest_samples_rejected_total{reason="label_value_too_long"}')).toBe(1);

    // The bytes bound: a store with room for exactly one more series of this size.
    const bounded = new MetricIngestStore({
      registry: new Registry(),
      limits: { ...LIMITS, max_ingest_bytes: 2 * (1 + 17 + 28) },
    });
    const two = applyOtlpMetrics(
      bounded,
      request('s', [
        {
          metrics: [gauge('g', [point([attr('a', '1')]), point([attr('a', '2')]), point([attr('a', '3')])])],
        },
      ]),
    );
    // `g{a="1",service="s"}`: 1 + 17 characters plus 28 for the value and punctuation.
    expect(two.rejectedDataPoints).toBe(1);
    expect(two.errorMessage).toMatch(/max_ingest_bytes/);
    expect(bounded.byteCount).toBe(2 * (1 + 17 + 28));
  });

  it('keeps errorMessage short however many points fail', () => {
    const { store } = setup();
    const req = request('s', [
      {
        metrics: Array.from({ length: 500 }, (_, i) => ({
          name: `bad-${i}-${'x'.repeat(500)}`,
          data: {
            case: 'gauge' as const,
            value: { dataPoints: [{ value: { case: 'asDouble' as const, value: 1 } }] },
          },
        })),
      },
    ]);
    // Dashes become underscores: these names are valid but far too long.
    const outcome = applyOtlpMetrics(store, req);
    expect(outcome.rejectedDataPoints).toBe(500);
    expect(outcome.errorMessage.length).toBeLessThan(1000);
  });
});

/** A stand-in for the monitor's /v1/metrics: decodes JSON or protobuf with the generated schemas. */
async function startReceiver(
  store: MetricIngestStore,
): Promise<{ url: string; server: Server; outcomes: unknown[] }> {
  const outcomes: unknown[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      let body = Buffer.concat(chunks);
      if (req.headers['content-encoding'] === 'gzip') body = gunzipSync(body);
      const json = (req.headers['content-type'] ?? '').includes('json');
      const message = json
        ? fromJson(ExportMetricsServiceRequestSchema, JSON.parse(body.toString('utf8')), {
            ignoreUnknownFields: true,
          })
        : fromBinary(ExportMetricsServiceRequestSchema, body);
      outcomes.push(applyOtlpMetrics(store, message));
      if (json) {
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      } else {
        res
          .writeHead(200, { 'content-type': 'application/x-protobuf' })
          .end(
            Buffer.from(
              toBinary(ExportMetricsServiceResponseSchema, create(ExportMetricsServiceResponseSchema)),
            ),
          );
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/metrics`, server, outcomes };
}

describe.each([
  ['OTLP/HTTP JSON', (url: string) => new JsonExporter({ url })],
  ['OTLP/HTTP protobuf', (url: string) => new ProtoExporter({ url })],
  [
    'OTLP/HTTP protobuf, delta temporality',
    (url: string) => new ProtoExporter({ url, temporalityPreference: SdkTemporality.DELTA }),
  ],
])(
  'applyOtlpMetrics fed by the real %s exporter',
  (_label, makeExporter: (url: string) => PushMetricExporter) => {
    it('lands counters, up-down counters, histograms and gauges in the store with the resource service', async () => {
      const { registry, store } = setup();
      const receiver = await startReceiver(store);
      const provider = new MeterProvider({
        resource: resourceFromAttributes({ 'service.name': 'cart' }),
        readers: [
          new PeriodicExportingMetricReader({
            exporter: makeExporter(receiver.url),
            exportIntervalMillis: 3_600_000,
          }),
        ],
      });
      try {
        const meter = provider.getMeter('test');
        const requests = meter.createCounter('cart.requests', { description: 'Cart requests' });
        const open = meter.createUpDownCounter('cart.open');
        const duration = meter.createHistogram('cart.duration');
        meter.createObservableGauge('cart.size').addCallback((r) => r.observe(12, { kind: 'items' }));
        requests.add(3, { 'http.method': 'POST' });
        requests.add(4, { 'http.method': 'POST' });
        open.add(5);
        open.add(-2);
        duration.record(3);
        duration.record(30);
        await provider.forceFlush();
        requests.add(1, { 'http.method': 'POST' });
        await provider.forceFlush();

        expect(receiver.outcomes).toEqual([
          { rejectedDataPoints: 0, errorMessage: '' },
          { rejectedDataPoints: 0, errorMessage: '' },
        ]);
        const text = await registry.metrics();
        // Cumulative: the second export carries the total 8 (set); delta: 7 then 1 (added).
        expect(valueOf(text, 'cart_requests_total{http_method="POST",service="cart"}')).toBe(8);
        expect(text).toContain('# HELP cart_requests_total Cart requests');
        expect(valueOf(text, 'cart_open{service="cart"}')).toBe(3);
        expect(valueOf(text, 'cart_size{kind="items",service="cart"}')).toBe(12);
        // The SDK's default bounds (0, 5, 10, 25, 50, ...) come with the point.
        expect(valueOf(text, 'cart_duration_bucket{service="cart",le="5"}')).toBe(1);
        expect(valueOf(text, 'cart_duration_bucket{service="cart",le="25"}')).toBe(1);
        expect(valueOf(text, 'cart_duration_bucket{service="cart",le="50"}')).toBe(2);
        expect(valueOf(text, 'cart_duration_bucket{service="cart",le="+Inf"}')).toBe(2);
        expect(valueOf(text, 'cart_duration_sum{service="cart"}')).toBe(33);
        expect(promtool(text)).toEqual({ status: 0, output: '' });
      } finally {
        await provider.shutdown();
        otelMetrics.disable();
        await new Promise((resolve) => receiver.server.close(resolve));
      }
    });
  },
);
