import { Registry } from 'prom-client';
import { MetricsCollector, NoopMetricsCollector } from '../../../../shared/monitoring/collector';
import { traced } from '../../../../shared/monitoring/instrumentation/traced';
import {
  type AlertDispatcherLike,
  MonitorModule,
  MonitorProvider,
} from '../../../../shared/monitoring/module';
import { NoopTracer, Tracer, getGlobalTracer } from '../../../../shared/monitoring/tracing';
import { NoopMetricsBackend } from '../../../../shared/monitoring/backends/backend';
import { LoggingAlertDispatcher } from '../../../../shared/monitoring/alerts/dispatcher';

describe('MonitorProvider', () => {
  afterEach(async () => {
    await MonitorProvider.current().shutdown();
  });

  it('without any provider built, current() is a stub with no-op collector and tracer', () => {
    const p = MonitorProvider.current();
    expect(p.collector).toBeInstanceOf(NoopMetricsCollector);
    expect(p.tracer).toBeInstanceOf(NoopTracer);
    expect(p.healthRegistry.getOrCreate('x')).toBeDefined();
  });

  it('fromConfig builds a collector on the given registry and a Tracer honouring max_spans', async () => {
    const registry = new Registry();
    const p = MonitorProvider.fromConfig(
      { name: 'svc', tracing: { max_spans: 2, sampler_type: 'always_on' } },
      { registry },
    );
    expect(p.collector).toBeInstanceOf(MetricsCollector);
    p.collector.increment('hits');
    expect(await registry.metrics()).toMatch(/hits_total 1/);
    expect(p.tracer).toBeInstanceOf(Tracer);
    for (const n of ['a', 'b', 'c']) p.tracer.startSpan(n).end();
    expect(p.tracer.getAllSpans().map((s) => s.name)).toEqual(['b', 'c']);
    expect(MonitorProvider.current()).toBe(p);
  });

  it('its tracer becomes the tracer of the helpers until shutdown', async () => {
    const p = MonitorModule.configure(null, { tracing: {} });
    traced('helper.op')(() => 1)();
    expect(p.tracer.getAllSpans().map((s) => s.name)).toEqual(['helper.op']);
    await p.shutdown();
    expect(getGlobalTracer()).toBeInstanceOf(NoopTracer);
    expect(MonitorProvider.current()).not.toBe(p);
  });

  it('disabled metrics and tracing give the no-op versions', () => {
    const p = MonitorProvider.fromConfig({ metrics: { enabled: false }, tracing: { enabled: false } });
    expect(p.collector).toBeInstanceOf(NoopMetricsCollector);
    expect(p.tracer).toBeInstanceOf(NoopTracer);
  });

  it('shutdown cleans the health checker registry up and may be called twice', async () => {
    const p = MonitorProvider.fromConfig({});
    p.healthRegistry.getOrCreate('db');
    expect(p.healthRegistry.listCheckers()).toEqual(['db']);
    await p.shutdown();
    await p.shutdown();
    expect(p.healthRegistry.listCheckers()).toEqual([]);
  });

  it('an alert dispatcher: the one given, else the default hook, else none', () => {
    const given: AlertDispatcherLike = {
      sendAlert: async () => undefined,
      sendMetricAlert: async () => undefined,
    };
    expect(MonitorProvider.fromConfig({}, { alertDispatcher: given, register: false }).alertDispatcher).toBe(
      given,
    );
    expect(MonitorProvider.fromConfig({}, { register: false }).alertDispatcher).toBeInstanceOf(
      LoggingAlertDispatcher,
    );
    const original = MonitorProvider.defaultAlertDispatcher;
    const made: AlertDispatcherLike = { ...given };
    MonitorProvider.defaultAlertDispatcher = () => made;
    try {
      expect(MonitorProvider.fromConfig({}, { register: false }).alertDispatcher).toBe(made);
      MonitorProvider.defaultAlertDispatcher = null;
      expect(MonitorProvider.fromConfig({}, { register: false }).alertDispatcher).toBeNull();
    } finally {
      MonitorProvider.defaultAlertDispatcher = original;
    }
  });
});

describe('MonitorModule', () => {
  afterEach(async () => {
    await MonitorProvider.current().shutdown();
  });

  it('configure defaults the backend to the no-op metrics backend', () => {
    expect(MonitorModule.configure().backend).toBeInstanceOf(NoopMetricsBackend);
  });

  it('withSlo builds the SLO monitor on the provider', () => {
    const { provider, slo } = MonitorModule.withSlo({ createSloMonitor: (p) => ({ owner: p }) });
    expect(slo.owner).toBe(provider);
  });

  it('stub has no-op metrics and tracing', () => {
    const p = MonitorModule.stub({ name: 'x' });
    expect(p.collector).toBeInstanceOf(NoopMetricsCollector);
    expect(p.tracer).toBeInstanceOf(NoopTracer);
    expect(p.name).toBe('x');
  });
});
