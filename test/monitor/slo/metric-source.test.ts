/**
 * Issue 31: ratio SLOs counted from ingested counters (RatioSlo.metric_source): the ingest store's
 * counter increases (RecordMetrics adds, OTLP deltas and cumulative sums), the router's matching, and
 * the whole path over the wire.
 */
import { Code, ConnectError } from '@connectrpc/connect';
import { create } from '@bufbuild/protobuf';
import { Registry } from 'prom-client';
import { MetricType } from '../../../shared/gen/svc/monitor/v1/monitor_pb';
import { ExportMetricsServiceRequestSchema } from '../../../shared/gen/opentelemetry/proto/collector/metrics/v1/metrics_service_pb';
import { AggregationTemporality } from '../../../shared/gen/opentelemetry/proto/metrics/v1/metrics_pb';
import { MetricIngestStore } from '../../../services/monitor/ingest/metric-store';
import { applyOtlpMetrics } from '../../../services/monitor/otlp/otlp-metrics';
import { MetricSourceRouter } from '../../../services/monitor/slo/metric-source';
import { startMonitorApp, type RunningMonitorApp } from '../../support/monitor-app';

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

const pendingOf = (r: MetricSourceRouter) =>
  Object.fromEntries([...r.take()].map(([slo, b]) => [slo, [...b.values()]]));

describe('MetricSourceRouter', () => {
  const source = {
    good: { metric: 'http_requests_total', labels: { code: '200', route: '/支払い/💳' } },
    total: { metric: 'http_requests', labels: { route: '/支払い/💳' } },
  };

  it('counts a counter named with or without _total, by the selector labels only', () => {
    const r = new MetricSourceRouter(() => Date.UTC(2026, 0, 1, 12));
    r.set('pay', source);
    r.onCounterIncrease('http_requests', { code: '200', route: '/支払い/💳', pod: 'a' }, 5);
    r.onCounterIncrease('http_requests_total', { code: '500', route: '/支払い/💳' }, 2);
    r.onCounterIncrease('http_requests_total', { code: '200', route: '/other' }, 7);
    r.onCounterIncrease('http_requests_total', { code: '200', route: '/支払い/💳 ' }, 7); // another value
    expect(pendingOf(r)).toEqual({ pay: [{ good: 5, total: 7 }] });
  });

  it('ignores names no SLO reads, decreases and non-finite increases', () => {
    const r = new MetricSourceRouter();
    r.set('pay', source);
    r.onCounterIncrease('other_total', { code: '200', route: '/支払い/💳' }, 5);
    r.onCounterIncrease('http_requests_total', { code: '200', route: '/支払い/💳' }, -1);
    r.onCounterIncrease('http_requests_total', { code: '200', route: '/支払い/💳' }, Number.NaN);
    expect(r.take().size).toBe(0);
    r.delete('pay');
    r.onCounterIncrease('http_requests_total', { code: '200', route: '/支払い/💳' }, 1);
    expect(r.take().size).toBe(0);
  });

  it('keeps at most 60 pending minutes per SLO (a store out of reach): the oldest go', () => {
    let now = Date.UTC(2026, 0, 1);
    const r = new MetricSourceRouter(() => now);
    r.set('pay', source);
    for (let i = 0; i < 61; i++) {
      r.onCounterIncrease('http_requests_total', { code: '200', route: '/支払い/💳' }, 1);
      now += 60_000;
    }
    const minutes = [...r.take().get('pay')!.keys()];
    expect(minutes).toHaveLength(60);
    expect(minutes[0]).toBe(Date.UTC(2026, 0, 1, 0, 1));
  });
});

describe('the ingest store reports counter increases', () => {
  function setup() {
    const store = new MetricIngestStore({ registry: new Registry(), limits: LIMITS });
    const seen: Array<[string, Record<string, string>, number]> = [];
    store.addCounterListener((name, labels, increase) => seen.push([name, { ...labels }, increase]));
    return { store, seen };
  }
  const key = (name: string, type: 'counter' | 'gauge', labels: Record<string, string> = {}) => ({
    name,
    type,
    labels,
    service: 'web',
    description: '',
  });

  it('adds by their value; a cumulative value by its difference (the first is a baseline, a reset counts whole); gauges never', () => {
    const { store, seen } = setup();
    store.apply(key('jobs', 'counter', { q: 'מייל' }), { kind: 'add', value: 3 });
    store.apply(key('done', 'counter'), { kind: 'set', value: 100 });
    store.apply(key('done', 'counter'), { kind: 'set', value: 130 });
    store.apply(key('done', 'counter'), { kind: 'set', value: 4 });
    store.apply(key('temp', 'gauge'), { kind: 'set', value: 9 });
    expect(seen).toEqual([
      ['jobs', { q: 'מייל', service: 'web' }, 3],
      ['done', { service: 'web' }, 30],
      ['done', { service: 'web' }, 4],
    ]);
  });

  it('a listener that throws does not fail the sample', () => {
    const { store } = setup();
    store.addCounterListener(() => {
      throw new Error('listener bug');
    });
    expect(store.apply(key('jobs', 'counter'), { kind: 'add', value: 1 })).toBeUndefined();
  });

  it('OTLP cumulative sums report their increase from the second export on', () => {
    const { store, seen } = setup();
    const req = (value: bigint) =>
      create(ExportMetricsServiceRequestSchema, {
        resourceMetrics: [
          {
            scopeMetrics: [
              {
                metrics: [
                  {
                    name: 'orders',
                    data: {
                      case: 'sum',
                      value: {
                        isMonotonic: true,
                        aggregationTemporality: AggregationTemporality.CUMULATIVE,
                        dataPoints: [{ value: { case: 'asInt', value } }],
                      },
                    },
                  },
                ],
              },
            ],
          },
        ],
      });
    applyOtlpMetrics(store, req(10n));
    applyOtlpMetrics(store, req(25n));
    expect(seen.map(([name, , inc]) => [name, inc])).toEqual([['orders', 15]]);
  });
});

describe('a ratio SLO counted from RecordMetrics counters, over the wire', () => {
  let m: RunningMonitorApp;
  afterEach(async () => {
    await m?.close();
  });

  it('counts good and total from the counters; its events cannot also be sent by hand', async () => {
    m = await startMonitorApp();
    const { slo } = await m.monitorConnect.registerRatioSlo({
      slo: {
        name: 'checkout-ok',
        target: 0.99,
        metricSource: {
          good: { metric: 'checkout_requests_total', labels: { outcome: 'ok' } },
          total: { metric: 'checkout_requests', labels: {} },
        },
      },
    });
    expect(slo?.metricSource?.good?.labels).toEqual({ outcome: 'ok' });
    const sample = (outcome: string, value: number) => ({
      name: 'checkout_requests',
      type: MetricType.COUNTER,
      value,
      labels: { outcome },
    });
    await m.monitorConnect.recordMetrics({
      sourceService: 'shop',
      samples: [sample('ok', 95), sample('error', 5), sample('ok', 100)],
    });
    const status = (await m.monitorConnect.listSlos({})).statuses.find((s) => s.name === 'checkout-ok');
    expect(status).toMatchObject({ events: 200n, badEvents: 5n });
    const err = await m.monitorConnect
      .recordSloSamples({ slo: 'checkout-ok', events: [{ good: 1n }] })
      .catch((e: unknown) => ConnectError.from(e));
    expect(err).toMatchObject({ code: Code.FailedPrecondition });
  });
});
