import { HealthChecker } from '../../../shared/monitoring/health/checker';
import { FunctionHealthCheck, healthChecker } from '../../../shared/monitoring/health/checks';
import {
  HealthCheckerRegistry,
  HealthCheckRegistry,
  NoopHealthCheckRegistry,
} from '../../../shared/monitoring/health/registry';
import {
  aggregateStatus,
  HealthCheckCategory,
  HealthCheckResult,
  HealthStatus,
} from '../../../shared/monitoring/health/result';
import { HealthCheckNotFoundError, InvalidHealthCheckError } from '../../../shared/monitoring/errors';
import { captureLogger, FakeClock, FakeTimers, settle } from './helpers';

class ConnectionError extends Error {}

function result(status: HealthStatus): HealthCheckResult {
  return new HealthCheckResult({ component: 'x', status });
}

function never(): Promise<boolean> {
  return new Promise(() => undefined);
}

describe('HealthCheckResult', () => {
  it('isHealthy and isDegraded follow the status', () => {
    expect(result(HealthStatus.HEALTHY).isHealthy()).toBe(true);
    expect(result(HealthStatus.DEGRADED).isDegraded()).toBe(true);
    expect(result(HealthStatus.UNHEALTHY).isHealthy()).toBe(false);
  });

  it('toDict gives the JSON form with lower-case status and ISO time', () => {
    const r = new HealthCheckResult({
      component: 'db',
      status: HealthStatus.DEGRADED,
      message: 'slow',
      durationMs: 12,
      details: { lag: 3 },
      checkedAt: Date.UTC(2026, 0, 1),
      category: HealthCheckCategory.READINESS,
    });
    expect(r.toDict()).toEqual({
      component: 'db',
      status: 'degraded',
      message: 'slow',
      error: null,
      duration_ms: 12,
      details: { lag: 3 },
      checked_at: '2026-01-01T00:00:00.000Z',
      category: 'readiness',
    });
  });
});

describe('aggregate status', () => {
  it('is HEALTHY when every check is healthy', () => {
    expect(aggregateStatus([result(HealthStatus.HEALTHY), result(HealthStatus.HEALTHY)])).toBe(
      HealthStatus.HEALTHY,
    );
  });

  it('is DEGRADED when one is degraded and none unhealthy', () => {
    expect(aggregateStatus([result(HealthStatus.HEALTHY), result(HealthStatus.DEGRADED)])).toBe(
      HealthStatus.DEGRADED,
    );
  });

  it('is UNHEALTHY when any is unhealthy', () => {
    expect(aggregateStatus([result(HealthStatus.DEGRADED), result(HealthStatus.UNHEALTHY)])).toBe(
      HealthStatus.UNHEALTHY,
    );
  });

  it('is UNHEALTHY when any is UNKNOWN', () => {
    expect(aggregateStatus([result(HealthStatus.UNKNOWN)])).toBe(HealthStatus.UNHEALTHY);
  });
});

describe('HealthChecker', () => {
  it('accepts callables returning a boolean, a mapping or a HealthCheckResult', async () => {
    const checker = new HealthChecker();
    checker.add('bool', () => false);
    checker.add('map', () => ({ status: 'degraded', message: 'lagging', lag: 5 }));
    checker.add('result', async () => result(HealthStatus.HEALTHY));
    const r = await checker.runAll();
    expect(r.bool!.status).toBe(HealthStatus.UNHEALTHY);
    expect(r.map!.status).toBe(HealthStatus.DEGRADED);
    expect(r.map!.details).toEqual({ lag: 5 });
    expect(r.result!.status).toBe(HealthStatus.HEALTHY);
  });

  it('accepts a check object', async () => {
    const checker = new HealthChecker();
    checker.add('fn', new FunctionHealthCheck('fn', () => ({ healthy: false })));
    expect((await checker.runAll()).fn!.status).toBe(HealthStatus.UNHEALTHY);
  });

  it('has, checkNames (sorted) and remove', () => {
    const checker = new HealthChecker();
    checker.add('b', () => true).add('a', () => true);
    checker.remove('b');
    expect(checker.has('a')).toBe(true);
    expect(checker.has('b')).toBe(false);
    expect(checker.checkNames).toEqual(['a']);
  });

  it('remove of an unregistered name throws HealthCheckNotFoundError', () => {
    expect(() => new HealthChecker().remove('ghost')).toThrow(HealthCheckNotFoundError);
  });

  it('a failing check reports the error type only and logs the detail', async () => {
    const { logger, lines } = captureLogger();
    const checker = new HealthChecker({ logger });
    checker.add('connection', () => {
      throw new ConnectionError('password=hunter2 at db:5432');
    });
    const r = (await checker.runAll()).connection!;
    expect(r.status).toBe(HealthStatus.UNHEALTHY);
    expect(r.message).toBe('ConnectionError: connection check failed');
    expect(r.error).toBe('ConnectionError');
    expect(JSON.stringify(r.toDict())).not.toContain('hunter2');
    expect(lines.some((l) => JSON.stringify(l).includes('password=hunter2'))).toBe(true);
  });

  it('a check slower than its timeout is UNHEALTHY and does not hold the others', async () => {
    const timers = new FakeTimers();
    const checker = new HealthChecker({ timers });
    checker.add('slow', never, 2);
    checker.add('fast', () => true, 2);
    const run = checker.runAll();
    await settle();
    timers.advance(2000);
    const r = await run;
    expect(r.slow!.status).toBe(HealthStatus.UNHEALTHY);
    expect(r.slow!.error).toBe('TimeoutError');
    expect(r.fast!.status).toBe(HealthStatus.HEALTHY);
  });

  it('runs checks concurrently', async () => {
    const checker = new HealthChecker();
    const started: string[] = [];
    const gates: Array<() => void> = [];
    for (const name of ['a', 'b', 'c']) {
      checker.add(name, () => {
        started.push(name);
        return new Promise<boolean>((resolve) => gates.push(() => resolve(true)));
      });
    }
    const run = checker.runAll();
    await settle();
    expect(started.sort()).toEqual(['a', 'b', 'c']);
    gates.forEach((g) => g());
    expect(Object.keys(await run)).toEqual(['a', 'b', 'c']);
  });

  it('measures durations with the injected clock', async () => {
    const clock = new FakeClock();
    const checker = new HealthChecker({ clock });
    checker.add('db', async () => {
      clock.advance(40);
      return true;
    });
    expect((await checker.runAll()).db!.durationMs).toBe(40);
  });

  it('runLiveness, runReadiness and runStartup run only their category; add defaults to READINESS', async () => {
    const checker = new HealthChecker();
    checker.add('live', () => true, null, HealthCheckCategory.LIVENESS);
    checker.add('ready', () => false);
    checker.add('boot', () => ({ status: 'degraded' }), null, HealthCheckCategory.STARTUP);
    const [live, ready, startup] = await Promise.all([
      checker.runLiveness(),
      checker.runReadiness(),
      checker.runStartup(),
    ]);
    expect(Object.keys(live.checks)).toEqual(['live']);
    expect(live.status).toBe(HealthStatus.HEALTHY);
    expect(ready.status).toBe(HealthStatus.UNHEALTHY);
    expect(startup.status).toBe(HealthStatus.DEGRADED);
  });

  it('runAllWithSummary returns the aggregate, a timestamp and the results', async () => {
    const clock = new FakeClock();
    const checker = new HealthChecker({ clock });
    checker.add('a', () => true).add('b', () => ({ status: 'degraded' }));
    const summary = await checker.runAllWithSummary();
    expect(summary.status).toBe(HealthStatus.DEGRADED);
    expect(summary.timestamp).toBe(clock.now() / 1000);
    expect(Object.keys(summary.checks)).toEqual(['a', 'b']);
  });

  it('aggregateStatus of run results follows the aggregate rule', async () => {
    const checker = new HealthChecker();
    checker.add('a', () => true).add('b', () => false);
    expect(checker.aggregateStatus(await checker.runAll())).toBe(HealthStatus.UNHEALTHY);
  });

  it('register reads the name, timeout and category stamped by the healthChecker wrapper', async () => {
    const checker = new HealthChecker();
    checker.register(healthChecker('cache', { category: HealthCheckCategory.LIVENESS })(() => true));
    expect(checker.checkNames).toEqual(['cache']);
    expect(Object.keys((await checker.runLiveness()).checks)).toEqual(['cache']);
  });

  it('register of a callable not decorated by healthChecker throws InvalidHealthCheckError', () => {
    expect(() => new HealthChecker().register(() => true)).toThrow(InvalidHealthCheckError);
  });

  it('the healthChecker decorator on a method stamps it bound to its instance', async () => {
    class Service {
      constructor(private readonly up: boolean) {}
      @healthChecker('service')
      checkService(): boolean {
        return this.up;
      }
    }
    const checker = new HealthChecker();
    checker.register(new Service(false).checkService);
    expect((await checker.runAll()).service!.status).toBe(HealthStatus.UNHEALTHY);
  });

  it('the healthChecker decorator follows the TypeScript 5 standard decorator protocol', async () => {
    const initializers: Array<(this: unknown) => void> = [];
    const method = function (this: { up: boolean }): boolean {
      return this.up;
    };
    const context = {
      kind: 'method',
      name: 'check',
      static: false,
      private: false,
      addInitializer: (fn: (this: unknown) => void) => initializers.push(fn),
    } as unknown as ClassMethodDecoratorContext;
    healthChecker('std')(method, context);
    const instance: { up: boolean; check?: () => boolean } = { up: true };
    initializers.forEach((fn) => fn.call(instance));
    const checker = new HealthChecker();
    checker.register(instance.check!);
    expect((await checker.runAll()).std!.status).toBe(HealthStatus.HEALTHY);
  });
});

describe('BaseHealthCheck.healthCheck', () => {
  it('bounds check() by the timeout and reports UNHEALTHY when it is exceeded', async () => {
    const check = new FunctionHealthCheck('slow', never);
    const r = await check.healthCheck(0.01);
    expect(r.status).toBe(HealthStatus.UNHEALTHY);
    expect(r.error).toBe('TimeoutError');
  });
});

describe('HealthCheckRegistry (legacy)', () => {
  it('a failing non-critical readiness check degrades the aggregate', async () => {
    const registry = new HealthCheckRegistry();
    registry.add('ok', () => true);
    registry.add('cache', () => false, null, false);
    expect((await registry.runReadiness()).status).toBe(HealthStatus.DEGRADED);
  });

  it('a failing critical readiness check makes the aggregate unhealthy', async () => {
    const registry = new HealthCheckRegistry();
    registry.add('cache', () => false, null, false);
    registry.add('db', () => false, null, true);
    expect((await registry.runReadiness()).status).toBe(HealthStatus.UNHEALTHY);
  });

  it('runCheck returns the result mapping of a registered check', async () => {
    const registry = new HealthCheckRegistry();
    registry.add('db', () => true, null, true, HealthCheckCategory.LIVENESS);
    expect(await registry.runCheck('db')).toMatchObject({
      component: 'db',
      status: 'healthy',
      category: 'liveness',
    });
  });

  it('runCheck of an unregistered name returns a mapping with status unknown', async () => {
    expect(await new HealthCheckRegistry().runCheck('ghost')).toMatchObject({
      component: 'ghost',
      status: 'unknown',
    });
  });

  it('runLiveness and runStartup run only their category', async () => {
    const registry = new HealthCheckRegistry();
    registry.add('live', () => true, null, true, HealthCheckCategory.LIVENESS);
    registry.add('boot', () => false, null, true, HealthCheckCategory.STARTUP);
    expect(Object.keys((await registry.runLiveness()).checks)).toEqual(['live']);
    expect((await registry.runStartup()).status).toBe(HealthStatus.UNHEALTHY);
  });

  it('healthCheck bounds every check by its timeout', async () => {
    const timers = new FakeTimers();
    const registry = new HealthCheckRegistry({ timers });
    registry.add('slow', never);
    const run = registry.healthCheck(1);
    await settle();
    timers.advance(1000);
    expect((await run).checks.slow!.status).toBe(HealthStatus.UNHEALTHY);
  });
});

describe('NoopHealthCheckRegistry', () => {
  it('ignores checks and reports healthy with an empty aggregate', async () => {
    const noop = new NoopHealthCheckRegistry();
    noop.add('db', () => false);
    const [all, live, ready, startup, hc] = await Promise.all([
      noop.runAll(),
      noop.runLiveness(),
      noop.runReadiness(),
      noop.runStartup(),
      noop.healthCheck(),
    ]);
    for (const r of [all, live, ready, startup, hc])
      expect(r).toMatchObject({ status: 'healthy', checks: {} });
  });
});

describe('HealthCheckerRegistry', () => {
  it('getOrCreate returns the same checker for a key and ignores later options', () => {
    const registry = new HealthCheckerRegistry({ timers: new FakeTimers() });
    const first = registry.getOrCreate('api', { cache_ttl: 1 });
    const second = registry.getOrCreate('api', { cache_ttl: 99, db_provider: () => Promise.resolve() });
    expect(second).toBe(first);
    expect(second.has('database')).toBe(false);
  });

  it('caches results for cache_ttl seconds', async () => {
    const clock = new FakeClock();
    const timers = new FakeTimers();
    const registry = new HealthCheckerRegistry({ clock, timers });
    const checker = registry.getOrCreate('default', { cache_ttl: 5 });
    let runs = 0;
    checker.add('db', () => ++runs > 0);
    await checker.runAll();
    clock.advance(4999);
    await checker.runAll();
    expect(runs).toBe(1);
    clock.advance(1);
    await checker.runAll();
    expect(runs).toBe(2);
  });

  it('bounds checks by check_timeout', async () => {
    const timers = new FakeTimers();
    const checker = new HealthCheckerRegistry({ timers }).getOrCreate('default', {
      check_timeout: 2,
      cache_ttl: 0,
    });
    checker.add('slow', never);
    const run = checker.runAll();
    await settle();
    timers.advance(2000);
    expect((await run).slow!.status).toBe(HealthStatus.UNHEALTHY);
  });

  it('adds a database readiness check when given a db_provider', async () => {
    const checker = new HealthCheckerRegistry({ timers: new FakeTimers() }).getOrCreate('default', {
      db_provider: { raw: () => Promise.reject(new ConnectionError('refused')) },
    });
    const r = (await checker.runReadiness()).checks.database!;
    expect(r.message).toBe('ConnectionError: database check failed');
  });

  it('refreshes results in the background every cache_ttl', async () => {
    const timers = new FakeTimers();
    const checker = new HealthCheckerRegistry({ timers }).getOrCreate('default', { cache_ttl: 5 });
    let runs = 0;
    checker.add('db', () => ++runs > 0);
    timers.advance(5000);
    await settle();
    timers.advance(5000);
    await settle();
    expect(runs).toBe(2);
  });

  it('cleanup stops background refresh, clears the registry and may be called repeatedly', () => {
    const timers = new FakeTimers();
    const registry = new HealthCheckerRegistry({ timers });
    registry.getOrCreate('a');
    registry.getOrCreate('b');
    expect(timers.pending).toBe(2);
    registry.cleanup();
    registry.cleanup();
    expect(timers.pending).toBe(0);
    expect(registry.listCheckers()).toEqual([]);
    expect(registry.getChecker('a')).toBeUndefined();
  });
});

describe('HealthChecker with HealthConfig.checks', () => {
  it('runs only the configured check names', async () => {
    const checker = new HealthChecker({ only: ['db'] });
    checker.add('db', () => true).add('cache', () => false);
    const summary = await checker.runAllWithSummary();
    expect(Object.keys(summary.checks)).toEqual(['db']);
    expect(summary.status).toBe(HealthStatus.HEALTHY);
  });
});
