import { MetricsCollector } from '../../../../shared/monitoring/collector';
import { ListenerLimitExceededError } from '../../../../shared/monitoring/errors';
import {
  type AlertTriggeredEvent,
  emitAlertTriggered,
  type HealthProbeCompletedEvent,
  type MetricDataPointRecordedEvent,
  MonitoringEventBus,
  MonitoringEventKind,
  monitoringEvents,
} from '../../../../shared/monitoring/events/event-bus';
import { HealthChecker } from '../../../../shared/monitoring/health/checker';
import { HealthCheckResult, HealthStatus } from '../../../../shared/monitoring/health/result';
import { captureLogger, FakeClock, FakeTimers } from '../helpers';

describe('MonitoringEventBus', () => {
  it('delivers a payload to every listener of its kind, not to other kinds', () => {
    const bus = new MonitoringEventBus();
    const alerts: AlertTriggeredEvent[] = [];
    const probes: HealthProbeCompletedEvent[] = [];
    bus.on(MonitoringEventKind.ALERT_TRIGGERED, (e) => void alerts.push(e));
    bus.on(MonitoringEventKind.HEALTH_PROBE_COMPLETED, (e) => void probes.push(e));
    expect(emitAlertTriggered({ alert_name: 'latency', severity: 'critical' }, bus)).toBe(1);
    expect(alerts).toEqual([{ alert_name: 'latency', severity: 'critical' }]);
    expect(probes).toEqual([]);
  });

  it('a throwing listener is logged and the later listeners and the emitter carry on', async () => {
    const { logger, lines } = captureLogger();
    const bus = new MonitoringEventBus({ logger });
    const seen: string[] = [];
    bus.on(MonitoringEventKind.ALERT_TRIGGERED, () => {
      throw new Error('listener bug');
    });
    bus.on(MonitoringEventKind.ALERT_TRIGGERED, async () => {
      throw new Error('async listener bug');
    });
    bus.on(MonitoringEventKind.ALERT_TRIGGERED, (e) => void seen.push(e.alert_name));
    expect(() => emitAlertTriggered({ alert_name: 'a', severity: 'warning' }, bus)).not.toThrow();
    await new Promise((r) => setImmediate(r));
    expect(seen).toEqual(['a']);
    expect(lines.filter((l) => l.msg === 'monitoring event listener failed')).toHaveLength(2);
  });

  it('listeners cannot change the payload other listeners see', () => {
    const bus = new MonitoringEventBus();
    let second: MetricDataPointRecordedEvent | undefined;
    bus.on(MonitoringEventKind.METRIC_DATA_POINT_RECORDED, (e) => {
      expect(() => ((e as { value: number }).value = 99)).toThrow(TypeError);
    });
    bus.on(MonitoringEventKind.METRIC_DATA_POINT_RECORDED, (e) => void (second = e));
    bus.emit(MonitoringEventKind.METRIC_DATA_POINT_RECORDED, { metric_name: 'm', value: 1 });
    expect(second).toEqual({ metric_name: 'm', value: 1 });
  });

  it('accepts maxListeners per kind; one more is a ListenerLimitExceededError; unsubscribing frees a place', () => {
    const bus = new MonitoringEventBus({ maxListeners: 3 });
    const offs = [1, 2, 3].map(() => bus.on(MonitoringEventKind.ALERT_TRIGGERED, () => undefined));
    expect(() => bus.on(MonitoringEventKind.ALERT_TRIGGERED, () => undefined)).toThrow(
      ListenerLimitExceededError,
    );
    // Other kinds have their own bound.
    bus.on(MonitoringEventKind.HEALTH_PROBE_COMPLETED, () => undefined);
    offs[0]!();
    expect(bus.listenerCount(MonitoringEventKind.ALERT_TRIGGERED)).toBe(2);
    bus.on(MonitoringEventKind.ALERT_TRIGGERED, () => undefined);
    expect(bus.listenerCount(MonitoringEventKind.ALERT_TRIGGERED)).toBe(3);
  });

  it('a listener removed during an emit still gets that event, not the next', () => {
    const bus = new MonitoringEventBus();
    const calls: number[] = [];
    const off = bus.on(MonitoringEventKind.ALERT_TRIGGERED, () => {
      calls.push(1);
      off2();
    });
    const off2 = bus.on(MonitoringEventKind.ALERT_TRIGGERED, () => void calls.push(2));
    emitAlertTriggered({ alert_name: 'x', severity: 'warning' }, bus);
    emitAlertTriggered({ alert_name: 'x', severity: 'warning' }, bus);
    off();
    expect(calls).toEqual([1, 2, 1]);
    expect(bus.hasListeners(MonitoringEventKind.ALERT_TRIGGERED)).toBe(false);
  });

  it('emitAlertTriggered uses the process bus by default', () => {
    const seen: AlertTriggeredEvent[] = [];
    const off = monitoringEvents.on(MonitoringEventKind.ALERT_TRIGGERED, (e) => void seen.push(e));
    try {
      emitAlertTriggered({ alert_name: 'p0', severity: 'critical' });
    } finally {
      off();
    }
    expect(seen).toEqual([{ alert_name: 'p0', severity: 'critical' }]);
  });
});

describe('events emitted by the library', () => {
  it('HealthChecker emits "health probe completed" for each check run, not for a cached result', async () => {
    const bus = new MonitoringEventBus();
    const probes: HealthProbeCompletedEvent[] = [];
    bus.on(MonitoringEventKind.HEALTH_PROBE_COMPLETED, (e) => void probes.push(e));
    const clock = new FakeClock();
    const checker = new HealthChecker({ events: bus, clock, timers: new FakeTimers(clock), cacheTtl: 5 });
    checker.add('db', () => true);
    checker.add('cache', () => new HealthCheckResult({ component: 'cache', status: HealthStatus.DEGRADED }));
    checker.add('queue', () => {
      throw new Error('down');
    });
    await checker.runAll();
    expect(probes).toEqual([
      { check_name: 'cache', healthy: true },
      { check_name: 'db', healthy: true },
      { check_name: 'queue', healthy: false },
    ]);
    await checker.runAll();
    expect(probes).toHaveLength(3);
    clock.advance(5000);
    await checker.runAll();
    expect(probes).toHaveLength(6);
  });

  it('a throwing probe listener does not change the health result', async () => {
    const bus = new MonitoringEventBus();
    bus.on(MonitoringEventKind.HEALTH_PROBE_COMPLETED, () => {
      throw new Error('listener bug');
    });
    const checker = new HealthChecker({ events: bus });
    checker.add('db', () => true);
    const results = await checker.runAll();
    expect(results.db!.status).toBe(HealthStatus.HEALTHY);
  });

  it('MetricsCollector.increment, gauge and histogram emit "metric data point recorded"', () => {
    const bus = new MonitoringEventBus();
    const points: MetricDataPointRecordedEvent[] = [];
    const collector = new MetricsCollector({ events: bus });
    collector.increment('before.listening');
    bus.on(MonitoringEventKind.METRIC_DATA_POINT_RECORDED, (e) => void points.push(e));
    collector.increment('jobs', 2);
    collector.gauge('depth', 7);
    collector.histogram('latency', 0.25);
    expect(points).toEqual([
      { metric_name: 'jobs', value: 2 },
      { metric_name: 'depth', value: 7 },
      { metric_name: 'latency', value: 0.25 },
    ]);
  });

  it('a rejected record emits nothing', () => {
    const bus = new MonitoringEventBus();
    const points: MetricDataPointRecordedEvent[] = [];
    bus.on(MonitoringEventKind.METRIC_DATA_POINT_RECORDED, (e) => void points.push(e));
    const collector = new MetricsCollector({ events: bus });
    expect(() => collector.increment('jobs', -1)).toThrow();
    expect(points).toEqual([]);
  });
});
