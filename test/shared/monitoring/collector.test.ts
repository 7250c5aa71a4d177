import { Registry } from 'prom-client';
import {
  createMetricsCollector,
  MetricProxy,
  MetricsCollector,
  NoopMetricsCollector,
} from '../../../shared/monitoring/collector';
import { InvalidMetricError, MetricNotFoundError } from '../../../shared/monitoring/errors';
import { Counter, type Histogram } from '../../../shared/monitoring/instruments';
import { makeMetricName } from '../../../shared/monitoring/metric-names';
import { promtool } from './helpers';

describe('MetricsCollector', () => {
  it('createCounter registers the counter under its name', () => {
    const collector = new MetricsCollector();
    const c = collector.createCounter('requests', 'Requests');
    expect(collector.getMetric('requests')).toBe(c);
  });

  it('create* with an existing name and the same type returns the same instrument', () => {
    const collector = new MetricsCollector();
    expect(collector.createGauge('queue')).toBe(collector.createGauge('queue'));
  });

  it('create* with an existing name and another type is an InvalidMetricError', () => {
    const collector = new MetricsCollector();
    collector.createGauge('queue');
    expect(() => collector.createCounter('queue')).toThrow(InvalidMetricError);
  });

  it('getMetric answers undefined and requireMetric throws MetricNotFoundError for an unknown name', () => {
    const collector = new MetricsCollector();
    expect(collector.getMetric('nope')).toBeUndefined();
    expect(() => collector.requireMetric('nope')).toThrow(MetricNotFoundError);
  });

  it('getAllMetrics lists every instrument by name', () => {
    const collector = new MetricsCollector();
    collector.createCounter('a');
    collector.createSummary('b');
    expect([...collector.getAllMetrics().keys()].sort()).toEqual(['a', 'b']);
  });

  it('registerMetric binds an instrument built elsewhere so it is exported', async () => {
    const collector = new MetricsCollector();
    const c = collector.registerMetric(new Counter('external', 'External'));
    c.increment(2);
    expect(await collector.registry.metrics()).toContain('external_total 2');
  });

  it('clear forgets its instruments and removes them from the registry, leaving other metrics', async () => {
    const registry = new Registry();
    const other = new Counter('other', 'Other', undefined, { registry });
    other.increment();
    const collector = new MetricsCollector({ registry });
    collector.createCounter('mine', 'Mine').increment();
    collector.clear();
    const text = await registry.metrics();
    expect(collector.getAllMetrics().size).toBe(0);
    expect(text).not.toContain('mine_total');
    expect(text).toContain('other_total 1');
  });

  it('increment, gauge and histogram by name create and record', async () => {
    const collector = new MetricsCollector();
    collector.increment('hits', 2, { route: '/a' });
    collector.gauge('depth', 4);
    collector.histogram('wait', 0.3);
    expect((collector.getMetric('hits') as Counter).getCount()).toBe(2);
    expect((collector.getMetric('wait') as Histogram).getObservations()).toEqual([0.3]);
    expect(await collector.registry.metrics()).toContain('hits_total{route="/a"} 2');
  });

  it('applies the config prefix to exported names', async () => {
    const collector = new MetricsCollector({ config: { prefix: 'svc' } });
    collector.createGauge('queue.depth', 'Depth').set(3);
    expect(await collector.registry.metrics()).toContain('svc_queue_depth 3');
  });

  it('adds the config default labels to every metric', async () => {
    const collector = new MetricsCollector({ config: { default_labels: { service: 'monitor' } } });
    collector.increment('hits', 1, { route: '/a' });
    expect(await collector.registry.metrics()).toContain('hits_total{service="monitor",route="/a"} 1');
  });

  it('uses the config histogram buckets when none are given', () => {
    const collector = new MetricsCollector({ config: { histogram_buckets: [0.5, 2] } });
    expect(collector.createHistogram('wait').buckets).toEqual([0.5, 2]);
  });

  it('output with every instrument kind passes promtool', async () => {
    const collector = new MetricsCollector({ config: { prefix: 'svc', default_labels: { env: 'test' } } });
    collector.createCounter('jobs', 'Jobs run').increment(3);
    collector.createGauge('queue_depth', 'Queue depth').set(2);
    collector.createHistogram('job_duration_seconds', 'Job duration').observe(0.2);
    collector.createSummary('payload_bytes', 'Payload size').observe(512);
    expect(promtool(await collector.registry.metrics())).toEqual({ status: 0, output: '' });
  });
});

describe('makeMetricName', () => {
  it('joins prefix and name with an underscore', () => {
    expect(makeMetricName({ prefix: 'svc' }, 'requests')).toBe('svc_requests');
  });

  it('leaves the name alone without a prefix', () => {
    expect(makeMetricName({ prefix: '' }, 'requests')).toBe('requests');
  });
});

describe('NoopMetricsCollector', () => {
  it('create* return the collector itself, which records nothing', () => {
    const noop = new NoopMetricsCollector();
    const c = noop.createCounter('x');
    c.increment(5);
    expect(c).toBe(noop);
    expect(c.getCount()).toBe(0);
    expect(noop.getAllMetrics().size).toBe(0);
  });
});

describe('MetricProxy', () => {
  it('increment records through the collector and tracks the value locally', () => {
    const collector = new MetricsCollector();
    const proxy = new MetricProxy('calls', collector, 'counter');
    proxy.increment();
    proxy.increment(2);
    expect(proxy.value).toBe(3);
    expect((collector.getMetric('calls') as Counter).getCount()).toBe(3);
  });

  it('a histogram proxy records observations', () => {
    const collector = new MetricsCollector();
    new MetricProxy('wait', collector, 'histogram').record(0.7);
    expect((collector.getMetric('wait') as Histogram).getObservations()).toEqual([0.7]);
  });
});

describe('createMetricsCollector', () => {
  it('gives the no-op collector when metrics are disabled', () => {
    expect(createMetricsCollector({ enabled: false })).toBeInstanceOf(NoopMetricsCollector);
  });

  it('gives a MetricsCollector on the given registry when enabled', () => {
    const registry = new Registry();
    const collector = createMetricsCollector({ enabled: true }, registry);
    expect(collector).toBeInstanceOf(MetricsCollector);
    expect((collector as MetricsCollector).registry).toBe(registry);
  });
});
