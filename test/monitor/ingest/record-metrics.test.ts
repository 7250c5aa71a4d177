/**
 * RecordMetrics over gRPC (grpc-js client) against the in-process monitor: samples show on its
 * `/metrics` with their values and `service` label (promtool-valid), each rejection reason is
 * reported by index and counted, and every bound holds at the bound.
 */
import * as grpc from '@grpc/grpc-js';
import { MetricType } from '../../../shared/gen/svc/monitor/v1/monitor_pb';
import type { MonitorConfigInput } from '../../../services/monitor/config';
import { unary } from '../../support/grpc-clients';
import { startMonitorApp, type RunningMonitorApp } from '../../support/monitor-app';
import { promtool } from '../../shared/monitoring/helpers';

interface WireSample {
  name: string;
  type: MetricType;
  value?: number;
  labels?: Record<string, string>;
  sourceService?: string;
  description?: string;
}

interface Reply {
  accepted: number;
  rejected: { index: number; reason: string }[];
}

const running: RunningMonitorApp[] = [];

async function start(overrides: MonitorConfigInput = {}): Promise<RunningMonitorApp> {
  const m = await startMonitorApp(overrides);
  running.push(m);
  return m;
}

afterEach(async () => {
  await Promise.all(running.splice(0).map((m) => m.close()));
});

async function record(m: RunningMonitorApp, samples: WireSample[], sourceService = ''): Promise<Reply> {
  const { response } = await unary<Reply>(m.monitorGrpc, 'recordMetrics', { samples, sourceService });
  return { accepted: response.accepted, rejected: response.rejected };
}

async function scrape(m: RunningMonitorApp): Promise<string> {
  const res = await fetch(`${m.baseUrl}/metrics`);
  expect(res.status).toBe(200);
  return res.text();
}

/** The value of one exposition line, by its exact name-and-labels text. */
function valueOf(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

function rejectedCount(text: string, reason: string): number | undefined {
  return valueOf(text, `monitor_ingest_samples_rejected_total{reason="${reason}"}`);
}

describe('RecordMetrics', () => {
  it('adds counters, sets gauges, observes histograms and summaries, all with the service label, promtool-valid', async () => {
    const m = await start({ metrics: { histogram_buckets: [0.1, 1, 10] } });
    const reply = await record(
      m,
      [
        { name: 'orders_placed', type: MetricType.COUNTER, value: 2, labels: { region: 'eu' } },
        { name: 'orders_placed', type: MetricType.COUNTER, value: 3, labels: { region: 'eu' } },
        {
          name: 'orders_placed',
          type: MetricType.COUNTER,
          value: 1,
          labels: { region: 'us' },
          sourceService: 'shop',
        },
        { name: 'queue_depth', type: MetricType.GAUGE, value: 7, description: 'Jobs waiting' },
        { name: 'queue_depth', type: MetricType.GAUGE, value: 4 },
        { name: 'job_seconds', type: MetricType.HISTOGRAM, value: 0.05 },
        { name: 'job_seconds', type: MetricType.HISTOGRAM, value: 5 },
        { name: 'job_seconds', type: MetricType.HISTOGRAM, value: 50 },
        { name: 'payload_bytes', type: MetricType.SUMMARY, value: 100 },
        { name: 'payload_bytes', type: MetricType.SUMMARY, value: 300 },
      ],
      'billing',
    );
    expect(reply).toEqual({ accepted: 10, rejected: [] });

    const text = await scrape(m);
    expect(valueOf(text, 'orders_placed_total{region="eu",service="billing"}')).toBe(5);
    expect(valueOf(text, 'orders_placed_total{region="us",service="shop"}')).toBe(1);
    expect(text).toContain('# TYPE orders_placed_total counter');
    expect(text).toContain('# HELP queue_depth Jobs waiting');
    expect(valueOf(text, 'queue_depth{service="billing"}')).toBe(4);
    expect(valueOf(text, 'job_seconds_bucket{service="billing",le="0.1"}')).toBe(1);
    expect(valueOf(text, 'job_seconds_bucket{service="billing",le="1"}')).toBe(1);
    expect(valueOf(text, 'job_seconds_bucket{service="billing",le="10"}')).toBe(2);
    expect(valueOf(text, 'job_seconds_bucket{service="billing",le="+Inf"}')).toBe(3);
    expect(valueOf(text, 'job_seconds_sum{service="billing"}')).toBe(55.05);
    expect(valueOf(text, 'job_seconds_count{service="billing"}')).toBe(3);
    expect(valueOf(text, 'payload_bytes_sum{service="billing"}')).toBe(400);
    expect(valueOf(text, 'payload_bytes_count{service="billing"}')).toBe(2);
    // After the monitor's own metrics.
    expect(text.indexOf('process_cpu_seconds_total')).toBeLessThan(text.indexOf('orders_placed_total'));
    expect(promtool(text)).toEqual({ status: 0, output: '' });
  });

  it('labels samples of a batch without a source service "unknown", and fills a missing label key with ""', async () => {
    const m = await start();
    await record(m, [
      { name: 'hits', type: MetricType.COUNTER, value: 1, labels: { path: '/a', verb: 'GET' } },
    ]);
    const reply = await record(m, [
      { name: 'hits_total', type: MetricType.COUNTER, value: 2, labels: { path: '/a' } },
    ]);
    expect(reply.accepted).toBe(1);
    const text = await scrape(m);
    expect(valueOf(text, 'hits_total{path="/a",verb="GET",service="unknown"}')).toBe(1);
    expect(valueOf(text, 'hits_total{path="/a",verb="",service="unknown"}')).toBe(2);
  });

  it('escapes quotes, backslashes and newlines in label values and help text (promtool-valid)', async () => {
    const m = await start();
    const reply = await record(m, [
      {
        name: 'odd_values',
        type: MetricType.GAUGE,
        value: 1,
        labels: { v: 'a"b\\c\nd' },
        description: 'line one\nline two \\ end',
        sourceService: 'svc "x"',
      },
    ]);
    expect(reply.accepted).toBe(1);
    const text = await scrape(m);
    expect(text).toContain('odd_values{v="a\\"b\\\\c\\nd",service="svc \\"x\\""} 1');
    expect(text).toContain('# HELP odd_values line one\\nline two \\\\ end');
    expect(promtool(text)).toEqual({ status: 0, output: '' });
  });

  it('rejects each bad sample with its index and reason, records the rest, and counts rejections by reason', async () => {
    const m = await start();
    await record(m, [
      { name: 'temperature', type: MetricType.GAUGE, value: 1, labels: { a: 'x' } },
      { name: 'reqs', type: MetricType.COUNTER, value: 1 },
    ]);
    const cases: [WireSample, string][] = [
      [{ name: 'no_type', type: MetricType.UNSPECIFIED, value: 1 }, 'unknown_type'],
      [{ name: 'typo', type: 42 as MetricType, value: 1 }, 'unknown_type'],
      [{ name: '1starts_with_digit', type: MetricType.GAUGE, value: 1 }, 'invalid_name'],
      [{ name: 'has-dash', type: MetricType.GAUGE, value: 1 }, 'invalid_name'],
      [{ name: '', type: MetricType.GAUGE, value: 1 }, 'invalid_name'],
      [{ name: 'nan_gauge', type: MetricType.GAUGE, value: NaN }, 'invalid_value'],
      [{ name: 'inf_gauge', type: MetricType.GAUGE, value: Infinity }, 'invalid_value'],
      [{ name: 'reqs', type: MetricType.COUNTER, value: -1 }, 'invalid_value'],
      [{ name: 'bad_label', type: MetricType.GAUGE, value: 1, labels: { 'a.b': 'x' } }, 'invalid_label_name'],
      [
        { name: 'dunder', type: MetricType.GAUGE, value: 1, labels: { __name__: 'x' } },
        'reserved_label_name',
      ],
      [
        { name: 'svc_label', type: MetricType.GAUGE, value: 1, labels: { service: 'x' } },
        'reserved_label_name',
      ],
      [
        { name: 'le_label', type: MetricType.HISTOGRAM, value: 1, labels: { le: '1' } },
        'reserved_label_name',
      ],
      [
        { name: 'q_label', type: MetricType.SUMMARY, value: 1, labels: { quantile: '1' } },
        'reserved_label_name',
      ],
      [{ name: 'temperature', type: MetricType.COUNTER, value: 1 }, 'type_mismatch'],
      [{ name: 'reqs', type: MetricType.GAUGE, value: 1 }, 'type_mismatch'],
      [{ name: 'reqs_total', type: MetricType.GAUGE, value: 1 }, 'type_mismatch'],
      [{ name: 'temperature', type: MetricType.GAUGE, value: 1, labels: { b: 'y' } }, 'label_mismatch'],
      [{ name: 'process_cpu_seconds', type: MetricType.COUNTER, value: 1 }, 'name_collision'],
      [{ name: 'monitor_ingest_series', type: MetricType.GAUGE, value: 1 }, 'name_collision'],
      [{ name: 'first', type: MetricType.SUMMARY, value: 1 }, 'accepted'],
      [{ name: 'temperature', type: MetricType.HISTOGRAM, value: 1 }, 'type_mismatch'],
      [{ name: 'temperature_total', type: MetricType.COUNTER, value: 1 }, 'accepted'],
    ];
    // `first` (a summary) renders first_sum and first_count; a gauge named first_count now collides.
    cases.push([{ name: 'first_count', type: MetricType.GAUGE, value: 1 }, 'name_collision']);
    const before = await scrape(m);
    const reply = await record(
      m,
      cases.map(([s]) => s),
    );
    const expected = cases.flatMap(([, reason], index) => (reason === 'accepted' ? [] : [{ index, reason }]));
    expect(reply.rejected.map((r) => ({ index: r.index, reason: r.reason.split(':')[0] }))).toEqual(expected);
    expect(reply.accepted).toBe(cases.length - expected.length);
    // Reasons name the offending input for people, and never carry more than a bounded quote of it.
    expect(reply.rejected[2]!.reason).toContain('"1starts_with_digit"');

    const after = await scrape(m);
    for (const reason of new Set(expected.map((e) => e.reason))) {
      const n = expected.filter((e) => e.reason === reason).length;
      expect([reason, rejectedCount(after, reason)]).toEqual([
        reason,
        (rejectedCount(before, reason) ?? NaN) + n,
      ]);
    }
    expect(valueOf(after, 'reqs_total{service="unknown"}')).toBe(1);
    expect(after).not.toMatch(/^nan_gauge/m);
    expect(promtool(after)).toEqual({ status: 0, output: '' });
  });

  it('takes exactly 10,000 samples in one request and refuses 10,001 whole with INVALID_ARGUMENT', async () => {
    const m = await start();
    const batch = (n: number): WireSample[] =>
      Array.from({ length: n }, () => ({ name: 'bulk', type: MetricType.COUNTER, value: 1 }));
    await expect(unary(m.monitorGrpc, 'recordMetrics', { samples: batch(10_001) })).rejects.toMatchObject({
      code: grpc.status.INVALID_ARGUMENT,
      details: expect.stringContaining('at most 10000 samples'),
    });
    expect(await scrape(m)).not.toMatch(/^bulk_total/m);
    expect(await record(m, batch(10_000))).toEqual({ accepted: 10_000, rejected: [] });
    expect(valueOf(await scrape(m), 'bulk_total{service="unknown"}')).toBe(10_000);
  });

  it('holds max_metric_names and max_series_per_metric at the bound, counting the excess', async () => {
    const m = await start({ metrics: { max_metric_names: 3, max_series_per_metric: 2 } });
    const names = await record(
      m,
      ['m1', 'm2', 'm3', 'm4'].map((name) => ({ name, type: MetricType.GAUGE, value: 1 })),
    );
    expect(names.accepted).toBe(3);
    expect(names.rejected.map((r) => [r.index, r.reason.split(':')[0]])).toEqual([[3, 'max_metric_names']]);
    // A known name keeps taking samples at the cap.
    expect((await record(m, [{ name: 'm1', type: MetricType.GAUGE, value: 5 }])).accepted).toBe(1);

    const series = await record(
      m,
      ['a', 'b', 'c'].map((s) => ({ name: 'm2', type: MetricType.GAUGE, value: 2, sourceService: s })),
    );
    // m2 already has the `unknown` series: one more fits, then the cap.
    expect(series.rejected.map((r) => [r.index, r.reason.split(':')[0]])).toEqual([
      [1, 'max_series_per_metric'],
      [2, 'max_series_per_metric'],
    ]);
    const text = await scrape(m);
    expect(rejectedCount(text, 'max_metric_names')).toBe(1);
    expect(rejectedCount(text, 'max_series_per_metric')).toBe(2);
    expect(valueOf(text, 'm2{service="a"}')).toBe(2);
    expect(valueOf(text, 'm2{service="b"}')).toBeUndefined();
    expect(valueOf(text, 'monitor_ingest_metric_names')).toBe(3);
    expect(valueOf(text, 'monitor_ingest_series')).toBe(4);
  });

  it('holds max_series over all names at the bound', async () => {
    const m = await start({ metrics: { max_series: 2 } });
    const reply = await record(m, [
      { name: 'first', type: MetricType.GAUGE, value: 1, sourceService: 'a' },
      { name: 'first', type: MetricType.GAUGE, value: 1, sourceService: 'b' },
      { name: 'first', type: MetricType.GAUGE, value: 1, sourceService: 'c' },
      { name: 'second', type: MetricType.GAUGE, value: 1 },
      { name: 'first', type: MetricType.GAUGE, value: 5, sourceService: 'a' },
    ]);
    expect(reply.accepted).toBe(3);
    expect(reply.rejected.map((r) => [r.index, r.reason.split(':')[0]])).toEqual([
      [2, 'max_series'],
      [3, 'max_series'],
    ]);
    const text = await scrape(m);
    expect(valueOf(text, 'first{service="a"}')).toBe(5);
    expect(rejectedCount(text, 'max_series')).toBe(2);
  });

  it('holds max_labels_per_sample, max_label_value_length and max_description_length at the bound', async () => {
    const m = await start({
      metrics: { max_labels_per_sample: 2, max_label_value_length: 5, max_description_length: 8 },
    });
    const reply = await record(
      m,
      [
        { name: 'two_labels', type: MetricType.GAUGE, value: 1, labels: { a: '1', b: '2' } },
        { name: 'three_labels', type: MetricType.GAUGE, value: 1, labels: { a: '1', b: '2', c: '3' } },
        { name: 'value_at_cap', type: MetricType.GAUGE, value: 1, labels: { a: '12345' } },
        { name: 'value_over', type: MetricType.GAUGE, value: 1, labels: { a: '123456' } },
        { name: 'service_at_cap', type: MetricType.GAUGE, value: 1, sourceService: 'abcde' },
        { name: 'service_over', type: MetricType.GAUGE, value: 1, sourceService: 'abcdef' },
        { name: 'help_at_cap', type: MetricType.GAUGE, value: 1, description: '12345678' },
        { name: 'help_over', type: MetricType.GAUGE, value: 1, description: '123456789' },
      ],
      'x',
    );
    expect(reply.accepted).toBe(4);
    expect(reply.rejected.map((r) => [r.index, r.reason.split(':')[0]])).toEqual([
      [1, 'too_many_labels'],
      [3, 'label_value_too_long'],
      [5, 'label_value_too_long'],
      [7, 'description_too_long'],
    ]);
  });

  it('holds max_ingest_bytes (the scrape size) at the bound: a new series over it is refused and counted', async () => {
    // `g{a="aaa1",service="s"} <value>`: 1 + 20 characters plus 28 for the value and punctuation.
    const SERIES = 1 + 20 + 28;
    const m = await start({ metrics: { max_ingest_bytes: 2 * SERIES } });
    const sample = (a: string, value = 1) => ({
      name: 'g',
      type: MetricType.GAUGE,
      value,
      labels: { a },
      sourceService: 's',
    });
    const reply = await record(m, [sample('aaa1'), sample('aaa2'), sample('aaa3'), sample('aaa1', 7)]);
    expect(reply.accepted).toBe(3);
    expect(reply.rejected.map((r) => [r.index, r.reason.split(':')[0]])).toEqual([[2, 'max_ingest_bytes']]);
    const text = await scrape(m);
    expect(valueOf(text, 'g{a="aaa1",service="s"}')).toBe(7);
    expect(valueOf(text, 'g{a="aaa3",service="s"}')).toBeUndefined();
    expect(valueOf(text, 'monitor_ingest_bytes')).toBe(2 * SERIES);
    expect(rejectedCount(text, 'max_ingest_bytes')).toBe(1);
    expect(promtool(text)).toEqual({ status: 0, output: '' });
  });

  it('counts a histogram series once per line it renders against max_ingest_bytes', async () => {
    // Three buckets: `h_bucket` x 4 (le="1", "2", "3", "+Inf"), `h_sum`, `h_count`; each line
    // repeats the label block, so a histogram series costs about six gauge series.
    const m = await start({ metrics: { histogram_buckets: [1, 2, 3], max_ingest_bytes: 600 } });
    const reply = await record(m, [
      { name: 'h', type: MetricType.HISTOGRAM, value: 1, labels: { a: 'x' }, sourceService: 's' },
      { name: 'h', type: MetricType.HISTOGRAM, value: 1, labels: { a: 'y' }, sourceService: 's' },
      { name: 'h', type: MetricType.HISTOGRAM, value: 1, labels: { a: 'z' }, sourceService: 's' },
    ]);
    const text = await scrape(m);
    const used = valueOf(text, 'monitor_ingest_bytes')!;
    const lines = text
      .split('\n')
      .filter((l) => l.startsWith('h_'))
      .join('\n').length;
    // The estimate is never below what the lines really take, and never over the bound.
    expect(used).toBeGreaterThanOrEqual(lines);
    expect(used).toBeLessThanOrEqual(600);
    expect(reply.rejected.map((r) => r.reason.split(':')[0])).toContain('max_ingest_bytes');
  });

  it('serves the ingested series in OpenMetrics too when the scraper asks for it', async () => {
    const m = await start();
    await record(m, [{ name: 'om_hits', type: MetricType.COUNTER, value: 2 }], 'web');
    const res = await fetch(`${m.baseUrl}/metrics`, { headers: { accept: 'application/openmetrics-text' } });
    const text = await res.text();
    expect(res.headers.get('content-type')).toContain('application/openmetrics-text');
    expect(text).toContain('# TYPE om_hits counter\nom_hits_total{service="web"} 2\n');
    expect(text.match(/# EOF/g)).toHaveLength(1);
    expect(text.endsWith('# EOF\n')).toBe(true);
  });

  it('answers over Connect too, with the same per-sample outcome', async () => {
    const m = await start();
    const reply = await m.monitorConnect.recordMetrics({
      sourceService: 'web',
      samples: [
        { name: 'connect_hits', type: MetricType.COUNTER, value: 3 },
        { name: 'connect_hits', type: MetricType.COUNTER, value: -3 },
      ],
    });
    expect(reply.accepted).toBe(1);
    expect(reply.rejected.map((r) => r.index)).toEqual([1]);
    expect(valueOf(await scrape(m), 'connect_hits_total{service="web"}')).toBe(3);
  });
});
