/**
 * The module's wiring to the alerts and SLO areas: the logging dispatcher is the default, `withSlo`
 * builds a real SLOMonitor on the provider's dispatcher with the `slo` section's bounds, and the
 * health checker registry is cleaned up at shutdown.
 */
import {
  HealthCheckResult,
  HealthStatus,
  LoggingAlertDispatcher,
  MonitorModule,
  MonitorProvider,
  SLO,
  SLOMonitor,
  type AlertDispatcherProtocol,
} from '../../../shared/monitoring';
import { captureLogger, FakeTimers, settle } from './helpers';

describe('MonitorModule wiring', () => {
  afterEach(async () => {
    await MonitorProvider.current().shutdown();
  });

  it('without a dispatcher configured, alerts go to the logging dispatcher on the provider logger', async () => {
    const { logger, lines } = captureLogger();
    const p = MonitorProvider.fromConfig({}, { logger, register: false });
    expect(p.alertDispatcher).toBeInstanceOf(LoggingAlertDispatcher);
    await p.alertDispatcher!.sendAlert('disk', 'disk almost full', 'critical', { host: 'a1' });
    expect(lines).toEqual([
      expect.objectContaining({ level: 50, alert: 'disk', msg: 'disk almost full', context: { host: 'a1' } }),
    ]);
  });

  it('withSlo without a factory builds an SLOMonitor that alerts through the provider dispatcher', async () => {
    const sent: string[] = [];
    const dispatcher: AlertDispatcherProtocol = {
      sendAlert: async (title) => void sent.push(title),
      sendMetricAlert: async () => undefined,
    };
    const { provider, slo } = MonitorModule.withSlo(null, null, {}, { alertDispatcher: dispatcher });
    expect(slo).toBeInstanceOf(SLOMonitor);
    expect(provider.alertDispatcher).toBe(dispatcher);
    slo.register(
      new SLO({ name: 'p99', metric: 'lat', percentile: 0.99, thresholdMs: 100, windowSeconds: 60 }),
    );
    for (let i = 0; i < 10; i++) slo.recordSample('lat', 500);
    const violations = await slo.evaluateAndDispatch();
    expect(violations.map((v) => v.slo.name)).toEqual(['p99']);
    expect(sent).toHaveLength(1);
    expect(sent[0]).toContain('p99');
  });

  it('withSlo applies the slo section: max_samples_per_metric bounds the samples kept', () => {
    const { slo } = MonitorModule.withSlo(null, null, { slo: { max_samples_per_metric: 3 } });
    slo.register(new SLO({ name: 'p50', metric: 'lat', percentile: 0.5, thresholdMs: 1, windowSeconds: 60 }));
    for (let i = 0; i < 5; i++) slo.recordSample('lat', i);
    expect(slo.sampleCount('lat')).toBe(3);
  });

  it('withSlo applies the slo section: max_slos bounds the SLOs registered', () => {
    const { slo } = MonitorModule.withSlo(null, null, { slo: { max_slos: 1 } });
    const make = (name: string) =>
      new SLO({ name, metric: 'lat', percentile: 0.5, thresholdMs: 1, windowSeconds: 60 });
    slo.register(make('a'));
    expect(() => slo.register(make('b'))).toThrow(/1/);
  });

  it('shutdown stops the background refresh of every health checker of the registry', async () => {
    const timers = new FakeTimers();
    const p = MonitorProvider.fromConfig({}, { timers, register: false });
    let runs = 0;
    p.healthRegistry.getOrCreate('db', { cache_ttl: 1 }).add('ping', async () => {
      runs++;
      return new HealthCheckResult({ component: 'ping', status: HealthStatus.HEALTHY });
    });
    expect(timers.pending).toBe(1);
    timers.advance(1000);
    await settle();
    expect(runs).toBe(1);
    await p.shutdown();
    expect(timers.pending).toBe(0);
    timers.advance(10_000);
    await settle();
    expect(runs).toBe(1);
    expect(p.healthRegistry.listCheckers()).toEqual([]);
  });
});
