/**
 * The ingested series store on its own, with an injected clock: expiry after series_ttl_seconds
 * (and the name slot it frees), the monitor's own names winning, OTLP-style pre-aggregated points,
 * and the text the registry renders with it.
 */
import { Gauge, Registry } from 'prom-client';
import {
  appendToRegistry,
  MetricIngestStore,
  type MetricIngestLimits,
  type SampleKey,
} from '../../../services/monitor/ingest/metric-store';
import { FakeClock, promtool } from '../../shared/monitoring/helpers';

const LIMITS: MetricIngestLimits = {
  max_metric_names: 10,
  max_series_per_metric: 10,
  max_series: 1000,
  max_labels_per_sample: 4,
  max_label_value_length: 64,
  max_description_length: 64,
  series_ttl_seconds: 60,
  histogram_buckets: [1, 5],
};

function setup(limits: Partial<MetricIngestLimits> = {}) {
  const clock = new FakeClock();
  const registry = new Registry();
  const store = new MetricIngestStore({ limits: { ...LIMITS, ...limits }, registry, clock });
  appendToRegistry(registry, store);
  return { clock, registry, store };
}

function key(
  name: string,
  type: SampleKey['type'],
  labels: Record<string, string> = {},
  service = 's',
): SampleKey {
  return { name, type, labels, service, description: '' };
}

describe('MetricIngestStore', () => {
  it('removes a series not updated for series_ttl_seconds, and keeps one updated meanwhile', async () => {
    const { clock, registry, store } = setup();
    store.apply(key('temp', 'gauge', { room: 'a' }), { kind: 'set', value: 1 });
    store.apply(key('temp', 'gauge', { room: 'b' }), { kind: 'set', value: 2 });
    clock.advance(30_000);
    store.apply(key('temp', 'gauge', { room: 'b' }), { kind: 'set', value: 3 });
    clock.advance(30_000);
    const text = await registry.metrics();
    expect(text).not.toContain('temp{room="a"');
    expect(text).toContain('temp{room="b",service="s"} 3');
    expect(store.seriesCount).toBe(1);
    clock.advance(29_999);
    expect(await registry.metrics()).toContain('temp{room="b",service="s"} 3');
  });

  it('frees the name slot of a name whose last series expired: a new name fits under max_metric_names again', () => {
    const { clock, store } = setup({ max_metric_names: 2 });
    store.apply(key('one', 'gauge'), { kind: 'set', value: 1 });
    clock.advance(10_000);
    store.apply(key('two', 'gauge'), { kind: 'set', value: 1 });
    expect(store.apply(key('three', 'gauge'), { kind: 'set', value: 1 })?.reason).toBe('max_metric_names');
    clock.advance(50_000);
    // `one` is now 60 s old: it expires and `three` takes its slot; `two` stays.
    expect(store.apply(key('three', 'gauge'), { kind: 'set', value: 1 })).toBeUndefined();
    expect(store.metricNameCount).toBe(2);
    // Once gone, a name starts over: it may even come back with another type.
    clock.advance(60_000);
    store.sweep();
    expect(store.metricNameCount).toBe(0);
    expect(store.apply(key('one', 'counter'), { kind: 'add', value: 1 })).toBeUndefined();
  });

  it('leaves out an ingested name that the monitor registers later: its own metric wins on /metrics', async () => {
    const { registry, store } = setup();
    store.apply(key('late_metric', 'gauge'), { kind: 'set', value: 9 });
    expect(await registry.metrics()).toContain('late_metric{service="s"} 9');
    new Gauge({ name: 'late_metric', help: 'the monitor own', registers: [registry] }).set(1);
    const text = await registry.metrics();
    expect(text).not.toContain('late_metric{service="s"}');
    expect(text.match(/^# TYPE late_metric /gm)).toHaveLength(1);
    expect(promtool(text)).toEqual({ status: 0, output: '' });
  });

  it('sets and adds pre-aggregated histogram points with their own bounds, and refuses other bounds for the name', async () => {
    const { registry, store } = setup();
    const point = (cumulative: boolean) =>
      ({ kind: 'histogram', bounds: [10, 20], counts: [1, 2, 3], sum: 100, count: 6, cumulative }) as const;
    expect(store.apply(key('lat', 'histogram'), point(true))).toBeUndefined();
    expect(store.apply(key('lat', 'histogram'), point(true))).toBeUndefined();
    expect(store.apply(key('lat', 'histogram', {}, 't'), point(false))).toBeUndefined();
    expect(store.apply(key('lat', 'histogram', {}, 't'), point(false))).toBeUndefined();
    // A single observation lands in the name's bounds, not the configured default buckets.
    expect(store.apply(key('lat', 'histogram', {}, 't'), { kind: 'observe', value: 15 })).toBeUndefined();
    expect(
      store.apply(key('lat', 'histogram'), { ...point(true), bounds: [1, 2], counts: [0, 0, 0] })?.reason,
    ).toBe('bucket_mismatch');
    expect(store.apply(key('lat', 'histogram'), { ...point(true), counts: [1, 2] })?.reason).toBe(
      'invalid_value',
    );
    const text = await registry.metrics();
    expect(text).toContain(
      'lat_bucket{service="s",le="10"} 1\nlat_bucket{service="s",le="20"} 3\nlat_bucket{service="s",le="+Inf"} 6',
    );
    expect(text).toContain('lat_sum{service="s"} 100\nlat_count{service="s"} 6');
    expect(text).toContain('lat_bucket{service="t",le="20"} 7\nlat_bucket{service="t",le="+Inf"} 13');
    expect(text).toContain('lat_sum{service="t"} 215\nlat_count{service="t"} 13');
    expect(promtool(text)).toEqual({ status: 0, output: '' });
  });

  it('sets a cumulative counter total and a summary, and adds deltas', async () => {
    const { registry, store } = setup();
    store.apply(key('jobs', 'counter'), { kind: 'set', value: 10 });
    store.apply(key('jobs', 'counter'), { kind: 'set', value: 12 });
    store.apply(key('rpc_size', 'summary'), { kind: 'summary', sum: 50, count: 5, cumulative: true });
    store.apply(key('rpc_size', 'summary'), { kind: 'summary', sum: 70, count: 7, cumulative: true });
    store.apply(key('level', 'gauge'), { kind: 'add', value: 2 });
    store.apply(key('level', 'gauge'), { kind: 'add', value: -5 });
    const text = await registry.metrics();
    expect(text).toContain('jobs_total{service="s"} 12');
    expect(text).toContain('rpc_size_sum{service="s"} 70\nrpc_size_count{service="s"} 7');
    expect(text).toContain('level{service="s"} -3');
    expect(promtool(text)).toEqual({ status: 0, output: '' });
  });

  it('cuts caller input quoted in a rejection message', () => {
    const { store } = setup();
    const long = `bad-${'x'.repeat(5000)}`;
    const rejection = store.apply(key(long, 'gauge'), { kind: 'set', value: 1 });
    expect(rejection?.reason).toBe('invalid_name');
    expect(rejection!.message.length).toBeLessThan(200);
  });

  it('refuses names and label names longer than 200 characters', () => {
    const { store } = setup();
    expect(store.apply(key('n'.repeat(200), 'gauge'), { kind: 'set', value: 1 })).toBeUndefined();
    expect(store.apply(key('n'.repeat(201), 'gauge'), { kind: 'set', value: 1 })?.reason).toBe(
      'invalid_name',
    );
    expect(
      store.apply(key('g', 'gauge', { ['l'.repeat(201)]: 'v' }), { kind: 'set', value: 1 })?.reason,
    ).toBe('invalid_label_name');
  });

  // The limits count characters as code points: an emoji is two UTF-16 units but one character.
  it.each([
    ['emoji', '😀'],
    ['supplementary CJK', '𠀀'],
    ['BMP CJK', '中'],
    ['RTL (Hebrew)', 'ש'],
  ])('takes label values, service and description of %s at the bound, refuses one more', (_name, c) => {
    const { store } = setup({ max_label_value_length: 5, max_description_length: 8 });
    const set = { kind: 'set', value: 1 } as const;
    const sample = (name: string, o: { label?: number; service?: number; help?: number }) => ({
      ...key(name, 'gauge', o.label === undefined ? {} : { a: c.repeat(o.label) }, c.repeat(o.service ?? 1)),
      description: c.repeat(o.help ?? 0),
    });
    expect(store.apply(sample('value_at_cap', { label: 5 }), set)).toBeUndefined();
    expect(store.apply(sample('value_over', { label: 6 }), set)?.reason).toBe('label_value_too_long');
    expect(store.apply(sample('service_at_cap', { service: 5 }), set)).toBeUndefined();
    expect(store.apply(sample('service_over', { service: 6 }), set)?.reason).toBe('label_value_too_long');
    expect(store.apply(sample('help_at_cap', { help: 8 }), set)).toBeUndefined();
    expect(store.apply(sample('help_over', { help: 9 }), set)?.reason).toBe('description_too_long');
  });

  it('refuses a histogram with more than 64 bucket bounds', () => {
    const { store } = setup();
    const bounds = (n: number) => Array.from({ length: n }, (_, i) => i);
    const point = (n: number) =>
      ({
        kind: 'histogram',
        bounds: bounds(n),
        counts: new Array(n + 1).fill(0),
        sum: 0,
        count: 0,
        cumulative: true,
      }) as const;
    expect(store.apply(key('h64', 'histogram'), point(64))).toBeUndefined();
    expect(store.apply(key('h65', 'histogram'), point(65))?.reason).toBe('invalid_value');
  });

  it('holds max_series over all names at the bound, without leaving a refused new name behind', () => {
    const { clock, store } = setup({ max_series: 3 });
    expect(store.apply(key('a', 'gauge', {}, 's1'), { kind: 'set', value: 1 })).toBeUndefined();
    expect(store.apply(key('a', 'gauge', {}, 's2'), { kind: 'set', value: 1 })).toBeUndefined();
    expect(store.apply(key('b', 'gauge'), { kind: 'set', value: 1 })).toBeUndefined();
    expect(store.apply(key('a', 'gauge', {}, 's3'), { kind: 'set', value: 1 })?.reason).toBe('max_series');
    expect(store.apply(key('c', 'gauge'), { kind: 'set', value: 1 })?.reason).toBe('max_series');
    expect(store.metricNameCount).toBe(2);
    // Existing series keep taking samples at the bound.
    expect(store.apply(key('b', 'gauge'), { kind: 'set', value: 2 })).toBeUndefined();
    // Expired series make room again.
    clock.advance(60_000);
    expect(store.apply(key('c', 'gauge'), { kind: 'set', value: 1 })).toBeUndefined();
    expect(store.seriesCount).toBe(1);
  });

  it('lets an expired name come back with another type at once, even between periodic sweeps', () => {
    const { clock, store } = setup();
    store.apply(key('x', 'gauge'), { kind: 'set', value: 1 });
    clock.advance(59_999);
    // A write now runs the periodic sweep: nothing has expired yet, the next one is a second away.
    store.apply(key('y', 'gauge'), { kind: 'set', value: 1 });
    expect(store.apply(key('x', 'counter'), { kind: 'add', value: 1 })?.reason).toBe('type_mismatch');
    clock.advance(1);
    expect(store.apply(key('x', 'counter'), { kind: 'add', value: 1 })).toBeUndefined();
    // The gauge `x` is gone; `y` and the counter `x_total` are held.
    expect(store.metricNameCount).toBe(2);
    expect(store.seriesCount).toBe(2);
  });

  it('exports "" for a left-out label key even when it is named like an Object property', async () => {
    const { registry, store } = setup();
    store.apply(key('proto_keys', 'gauge', { constructor: 'a' }), { kind: 'set', value: 1 });
    store.apply(key('proto_keys', 'gauge', {}, 't'), { kind: 'set', value: 2 });
    const text = await registry.metrics();
    expect(text).toContain('proto_keys{constructor="",service="t"} 2');
    expect(promtool(text)).toEqual({ status: 0, output: '' });
  });
});
