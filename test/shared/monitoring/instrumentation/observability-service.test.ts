import { MetricsCollector, NoopMetricsCollector } from '../../../../shared/monitoring/collector';
import { ObservabilityService } from '../../../../shared/monitoring/instrumentation/observability-service';
import { NoopTracer, Tracer } from '../../../../shared/monitoring/tracing';

describe('ObservabilityService', () => {
  it('falls back to the no-op tracer and collector', () => {
    const obs = new ObservabilityService();
    expect(obs.tracer).toBeInstanceOf(NoopTracer);
    expect(obs.meter).toBeInstanceOf(NoopMetricsCollector);
    expect(obs.trace('x', { a: 1 }, () => 7)).toBe(7);
    obs.counter('c').increment();
  });

  it('trace runs the function in a span with the attributes', async () => {
    const tracer = new Tracer({ service_name: 'o' });
    const obs = new ObservabilityService(tracer, new MetricsCollector());
    await obs.trace('checkout', { cart: 'c1' }, async () => undefined);
    const [span] = tracer.getAllSpans();
    expect(span!.name).toBe('checkout');
    expect(span!.attributes).toEqual({ cart: 'c1' });
  });

  it('counter gives a MetricProxy that counts locally and in the collector', async () => {
    const collector = new MetricsCollector();
    const obs = new ObservabilityService(null, collector);
    const c = obs.counter('orders');
    c.increment();
    c.increment(2);
    expect(c.value).toBe(3);
    expect(await collector.registry.metrics()).toMatch(/orders_total 3/);
  });

  it('timed records elapsed seconds as a histogram, also when the function throws', async () => {
    const collector = new MetricsCollector();
    const obs = new ObservabilityService(null, collector);
    await obs.timed('op.duration', async () => undefined);
    expect(() =>
      obs.timed('op.duration', () => {
        throw new Error('x');
      }),
    ).toThrow('x');
    expect(await collector.registry.metrics()).toMatch(/op_duration_count 2/);
  });
});
