/**
 * Health registries: the legacy HealthCheckRegistry (critical and non-critical checks), the no-op
 * registry, and HealthCheckerRegistry (one cached HealthChecker per key, refreshed in the background).
 */
import { type Logger, silentLogger } from '../../logging/logger';
import { type Clock, systemClock, type Timers, systemTimers } from '../../runtime/clock';
import { HealthChecker } from './checker';
import { DEFAULT_CHECK_TIMEOUT, type HealthCheckLike, runCheck } from './checks';
import {
  HealthCheckCategory,
  HealthCheckResult,
  type HealthCheckResultDict,
  type HealthReport,
  type HealthReportSource,
  HealthStatus,
} from './result';

/** Shared options of the registries. */
export interface HealthRegistryOptions {
  clock?: Clock;
  timers?: Timers;
  logger?: Logger;
}

interface LegacyEntry {
  name: string;
  check: HealthCheckLike;
  timeout: number | null | undefined;
  critical: boolean;
  category: HealthCheckCategory;
}

/**
 * The legacy registry. Its aggregate treats criticality: a failing non-critical check degrades, a
 * failing critical one makes the aggregate UNHEALTHY. A check added without a category is a
 * READINESS check.
 */
export class HealthCheckRegistry implements HealthReportSource {
  private readonly entries = new Map<string, LegacyEntry>();
  private readonly clock: Clock;
  private readonly timers: Timers;
  private readonly logger: Logger;

  constructor(options: HealthRegistryOptions = {}) {
    this.clock = options.clock ?? systemClock;
    this.timers = options.timers ?? systemTimers;
    this.logger = options.logger ?? silentLogger();
  }

  /** Adds (or replaces) a check. `timeout` in seconds. */
  add(
    name: string,
    check: HealthCheckLike,
    timeout?: number | null,
    critical = true,
    category?: HealthCheckCategory | null,
  ): this {
    this.entries.set(name, {
      name,
      check,
      timeout,
      critical,
      category: category ?? HealthCheckCategory.READINESS,
    });
    return this;
  }

  /** Runs one check; a mapping with status `unknown` when the name is registered in no probe list. */
  async runCheck(name: string): Promise<HealthCheckResultDict> {
    const entry = this.entries.get(name);
    if (!entry) {
      return new HealthCheckResult({
        component: name,
        status: HealthStatus.UNKNOWN,
        message: `health check ${name} is not registered`,
        checkedAt: this.clock.now(),
      }).toDict();
    }
    return (await this.run(entry)).toDict();
  }

  /** Runs every check. */
  runAll(): Promise<HealthReport> {
    return this.runEntries([...this.entries.values()]);
  }

  /** Same as runAll (the endpoint's name for it). */
  runAllWithSummary(): Promise<HealthReport> {
    return this.runAll();
  }

  /** Runs the LIVENESS checks. */
  runLiveness(): Promise<HealthReport> {
    return this.runCategory(HealthCheckCategory.LIVENESS);
  }

  /** Runs the READINESS checks. */
  runReadiness(): Promise<HealthReport> {
    return this.runCategory(HealthCheckCategory.READINESS);
  }

  /** Runs the STARTUP checks. */
  runStartup(): Promise<HealthReport> {
    return this.runCategory(HealthCheckCategory.STARTUP);
  }

  /** Runs every check, each bounded by its own timeout or by `timeout` seconds, whichever is shorter. */
  healthCheck(timeout = DEFAULT_CHECK_TIMEOUT): Promise<HealthReport> {
    return this.runEntries(
      [...this.entries.values()].map((e) => ({
        ...e,
        timeout: e.timeout && e.timeout > 0 ? Math.min(e.timeout, timeout) : timeout,
      })),
    );
  }

  private runCategory(category: HealthCheckCategory): Promise<HealthReport> {
    return this.runEntries([...this.entries.values()].filter((e) => e.category === category));
  }

  private run(entry: LegacyEntry): Promise<HealthCheckResult> {
    return runCheck(entry.name, entry.check, {
      timeoutSeconds: entry.timeout === undefined ? DEFAULT_CHECK_TIMEOUT : entry.timeout,
      category: entry.category,
      clock: this.clock,
      timers: this.timers,
      logger: this.logger,
    });
  }

  private async runEntries(entries: LegacyEntry[]): Promise<HealthReport> {
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    const results = await Promise.all(entries.map((e) => this.run(e)));
    const checks: Record<string, HealthCheckResult> = {};
    let status = HealthStatus.HEALTHY;
    entries.forEach((e, i) => {
      const r = results[i]!;
      checks[e.name] = r;
      if (r.status === HealthStatus.HEALTHY) return;
      if (r.status === HealthStatus.DEGRADED || !e.critical) {
        if (status === HealthStatus.HEALTHY) status = HealthStatus.DEGRADED;
      } else {
        status = HealthStatus.UNHEALTHY;
      }
    });
    return { status, timestamp: this.clock.now() / 1000, checks };
  }
}

/** A registry that ignores checks and always reports healthy. */
export class NoopHealthCheckRegistry implements HealthReportSource {
  constructor(private readonly clock: Clock = systemClock) {}

  /** Ignored. */
  add(..._args: unknown[]): this {
    return this;
  }

  /** Unknown: nothing is ever registered. */
  async runCheck(name: string): Promise<HealthCheckResultDict> {
    return new HealthCheckResult({ component: name, status: HealthStatus.UNKNOWN }).toDict();
  }

  runAll(): Promise<HealthReport> {
    return Promise.resolve(this.empty());
  }
  runAllWithSummary(): Promise<HealthReport> {
    return Promise.resolve(this.empty());
  }
  runLiveness(): Promise<HealthReport> {
    return Promise.resolve(this.empty());
  }
  runReadiness(): Promise<HealthReport> {
    return Promise.resolve(this.empty());
  }
  runStartup(): Promise<HealthReport> {
    return Promise.resolve(this.empty());
  }
  /** Healthy. */
  healthCheck(_timeout = DEFAULT_CHECK_TIMEOUT): Promise<HealthReport> {
    return Promise.resolve(this.empty());
  }

  private empty(): HealthReport {
    return { status: HealthStatus.HEALTHY, timestamp: this.clock.now() / 1000, checks: {} };
  }
}

/** Something a database check can ping: a knex instance, a `{ ping() }` object or a function. */
export type DbProvider =
  | { raw(sql: string): PromiseLike<unknown> }
  | { ping(): PromiseLike<unknown> }
  | (() => PromiseLike<unknown>);

/** Options of HealthCheckerRegistry.getOrCreate (first call per key only). */
export interface GetOrCreateOptions {
  /** When given, a READINESS check `database` pings it. */
  db_provider?: DbProvider | null;
  /** Seconds a result is cached (default 5). */
  cache_ttl?: number;
  /** Seconds allowed per check (default 2). */
  check_timeout?: number;
}

/** Default `cache_ttl` of HealthCheckerRegistry (seconds). */
export const DEFAULT_CACHE_TTL = 5.0;
/** Default `check_timeout` of HealthCheckerRegistry (seconds). */
export const DEFAULT_REGISTRY_CHECK_TIMEOUT = 2.0;

function databaseCheck(db: DbProvider): () => Promise<boolean> {
  return async () => {
    if (typeof db === 'function') await db();
    else if ('ping' in db) await db.ping();
    else await db.raw('select 1');
    return true;
  };
}

/** One cached HealthChecker per key, each refreshed in the background every `cache_ttl` seconds. */
export class HealthCheckerRegistry {
  private readonly checkers = new Map<string, HealthChecker>();
  private readonly clock: Clock;
  private readonly timers: Timers;
  private readonly logger: Logger;

  constructor(options: HealthRegistryOptions = {}) {
    this.clock = options.clock ?? systemClock;
    this.timers = options.timers ?? systemTimers;
    this.logger = options.logger ?? silentLogger();
  }

  /**
   * The checker for `key`, created on the first call; later calls return the same instance and
   * ignore their options.
   */
  getOrCreate(key = 'default', options: GetOrCreateOptions = {}): HealthChecker {
    const existing = this.checkers.get(key);
    if (existing) return existing;
    const cacheTtl = options.cache_ttl ?? DEFAULT_CACHE_TTL;
    const checker = new HealthChecker({
      cacheTtl,
      defaultTimeout: options.check_timeout ?? DEFAULT_REGISTRY_CHECK_TIMEOUT,
      clock: this.clock,
      timers: this.timers,
      logger: this.logger.child({ healthChecker: key }),
    });
    if (options.db_provider) checker.add('database', databaseCheck(options.db_provider));
    if (cacheTtl > 0) checker.startBackgroundRefresh(cacheTtl);
    this.checkers.set(key, checker);
    return checker;
  }

  /** The checker for `key`, if created. */
  getChecker(key = 'default'): HealthChecker | undefined {
    return this.checkers.get(key);
  }

  /** Keys of the created checkers. */
  listCheckers(): string[] {
    return [...this.checkers.keys()];
  }

  /** Stops every background refresh and forgets the checkers; safe to call repeatedly. */
  cleanup(): void {
    for (const checker of this.checkers.values()) checker.stopBackgroundRefresh();
    this.checkers.clear();
  }
}
