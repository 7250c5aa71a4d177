import { Registry } from 'prom-client';
import { InvalidMetricError } from '../../../shared/monitoring/errors';
import { Counter, Gauge, Histogram, Summary } from '../../../shared/monitoring/instruments';
import { promtool } from './helpers';

describe('Counter', () => {
  it('increment adds to the count through record', () => {
    const c = new Counter('jobs');
    const record = jest.spyOn(c, 'record');
    c.increment();
    c.increment(4);
    expect(record).toHaveBeenCalledTimes(2);
    expect(c.getCount()).toBe(5);
  });

  it('reset sets the count back to zero', () => {
    const c = new Counter('jobs');
    c.increment(3);
    c.reset();
    expect(c.getCount()).toBe(0);
  });

  it('a negative amount is an InvalidMetricError and changes nothing', () => {
    const c = new Counter('jobs');
    c.increment(2);
    expect(() => c.increment(-1)).toThrow(InvalidMetricError);
    expect(c.getCount()).toBe(2);
  });

  it('a non-finite amount is an InvalidMetricError', () => {
    const c = new Counter('jobs');
    expect(() => c.record(Number.NaN)).toThrow(InvalidMetricError);
    expect(() => c.record(Infinity)).toThrow(InvalidMetricError);
  });

  it('is exported with a _total suffix once bound to a registry', async () => {
    const registry = new Registry();
    const c = new Counter('jobs.done', 'Jobs done', undefined, { registry });
    c.increment(3);
    expect(c.exportName).toBe('jobs_done_total');
    expect(await registry.metrics()).toContain('jobs_done_total 3');
  });

  it('reset also clears the exported series', async () => {
    const registry = new Registry();
    const c = new Counter('jobs', 'Jobs', undefined, { registry, labelNames: ['kind'] });
    c.increment(1, { kind: 'a' });
    c.reset();
    expect(await registry.metrics()).not.toContain('kind="a"');
  });
});

describe('Gauge', () => {
  it('set, increment and decrement move the value', () => {
    const g = new Gauge('queue');
    g.set(10);
    g.increment(5);
    g.decrement(3);
    expect(g.getValue()).toBe(12);
  });

  it('increment and decrement delegate to record', () => {
    const g = new Gauge('queue');
    const record = jest.spyOn(g, 'record');
    g.increment();
    g.decrement();
    expect(record).toHaveBeenCalledTimes(2);
  });

  it('keeps one value per label set', () => {
    const g = new Gauge('queue', '', undefined, { labelNames: ['q'] });
    g.set(1, { q: 'a' });
    g.set(7, { q: 'b' });
    expect(g.getValue({ q: 'a' })).toBe(1);
    expect(g.getValue({ q: 'b' })).toBe(7);
  });

  it('keeps a label set as one series whatever order its labels are written in', () => {
    const g = new Gauge('queue', '', undefined, { labelNames: ['q', 'r'] });
    g.set(3, { q: 'a', r: 'b' });
    g.increment(2, { r: 'b', q: 'a' });
    // Values that would run together under a plain separator stay apart.
    g.set(9, { q: 'a:b', r: '' });
    g.set(4, { q: 'a', r: ':b' });
    expect(g.getValue({ q: 'a', r: 'b' })).toBe(5);
    expect(g.getValue({ r: 'b', q: 'a' })).toBe(5);
    expect(g.getValue({ q: 'a:b', r: '' })).toBe(9);
    expect(g.getValue({ q: 'a', r: ':b' })).toBe(4);
    expect(g.getValue({ q: 'b', r: 'a' })).toBe(0);
  });

  it('reset sets the value to zero', () => {
    const g = new Gauge('queue');
    g.set(4);
    g.reset();
    expect(g.getValue()).toBe(0);
  });
});

describe('Histogram', () => {
  it('observe keeps the observations in order', () => {
    const h = new Histogram('latency');
    h.observe(0.2);
    h.observe(0.05);
    expect(h.getObservations()).toEqual([0.2, 0.05]);
  });

  it('getBucketCounts counts cumulatively per upper bound, +Inf last', () => {
    const h = new Histogram('latency', '', undefined, { buckets: [1, 5, 10] });
    for (const v of [0.5, 1, 3, 7, 20]) h.observe(v);
    expect([...h.getBucketCounts()]).toEqual([
      [1, 2],
      [5, 3],
      [10, 4],
      [Infinity, 5],
    ]);
  });

  it('keeps only the most recent maxObservations', () => {
    const h = new Histogram('latency', '', undefined, { maxObservations: 3 });
    for (const v of [1, 2, 3, 4, 5]) h.observe(v);
    expect(h.getObservations()).toEqual([3, 4, 5]);
  });

  it('reset clears observations and buckets', () => {
    const h = new Histogram('latency', '', undefined, { buckets: [1] });
    h.observe(0.5);
    h.reset();
    expect(h.getObservations()).toEqual([]);
    expect(h.getBucketCounts().get(Infinity)).toBe(0);
  });

  it('exports its buckets to prom-client', async () => {
    const registry = new Registry();
    const h = new Histogram('latency_seconds', 'Latency', undefined, { registry, buckets: [0.1, 1] });
    h.observe(0.5);
    const text = await registry.metrics();
    expect(text).toContain('latency_seconds_bucket{le="0.1"} 0');
    expect(text).toContain('latency_seconds_bucket{le="1"} 1');
  });
});

describe('Summary', () => {
  it('observe keeps observations and reset clears them', () => {
    const s = new Summary('size');
    s.observe(3);
    s.observe(4);
    expect(s.getObservations()).toEqual([3, 4]);
    s.reset();
    expect(s.getObservations()).toEqual([]);
  });
});

describe('instrument labels', () => {
  it('label keys are fixed at first use and an omitted key exports an empty string', async () => {
    const registry = new Registry();
    const c = new Counter('calls', 'Calls', undefined, { registry });
    c.increment(1, { method: 'get', route: '/a' });
    c.increment(1, { method: 'post' });
    const text = await registry.metrics();
    expect(text).toContain('calls_total{method="post",route=""} 1');
  });

  it('a label key not known at first use is an InvalidMetricError', () => {
    const c = new Counter('calls', 'Calls', undefined, { registry: new Registry() });
    c.increment(1, { method: 'get' });
    expect(() => c.increment(1, { user: 'x' })).toThrow(InvalidMetricError);
  });

  it('constant labels appear on every sample', async () => {
    const registry = new Registry();
    const g = new Gauge('temp', 'Temperature', { site: 'lab' }, { registry });
    g.set(21);
    expect(await registry.metrics()).toContain('temp{site="lab"} 21');
  });

  it('label values with quotes, backslashes and newlines are escaped and pass promtool', async () => {
    const registry = new Registry();
    const c = new Counter('odd', 'Odd "labels" \\ here', undefined, { registry });
    c.increment(1, { path: 'a"b\\c\nd' });
    const text = await registry.metrics();
    expect(text).toContain('odd_total{path="a\\"b\\\\c\\nd"} 1');
    expect(promtool(text)).toEqual({ status: 0, output: '' });
  });

  it('an invalid label name is an InvalidMetricError', () => {
    const c = new Counter('calls', 'Calls', undefined, { registry: new Registry() });
    expect(() => c.increment(1, { 'bad-name': 'x' })).toThrow(InvalidMetricError);
  });
});
