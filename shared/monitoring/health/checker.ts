/**
 * HealthChecker: named checks with per-check timeouts and categories, run concurrently. Optionally
 * caches each check's result for `cacheTtl` seconds (HealthCheckerRegistry sets it) and refreshes
 * in the background.
 */
import { type Logger, silentLogger } from '../../logging/logger';
import { type Clock, systemClock, type TimerHandle, type Timers, systemTimers } from '../../runtime/clock';
import { HealthCheckNotFoundError, InvalidHealthCheckError } from '../errors';
import { BaseHealthCheck, DEFAULT_CHECK_TIMEOUT, type HealthCheckLike, runCheck, stampOf } from './checks';
import {
  aggregateStatus,
  HealthCheckCategory,
  type HealthCheckResult,
  type HealthReport,
  type HealthReportSource,
  HealthStatus,
} from './result';
import { MonitoringEventKind, type MonitoringEventBus, monitoringEvents } from '../events/event-bus';

/** Options of HealthChecker. */
export interface HealthCheckerOptions {
  /** Seconds allowed to a check added without its own timeout (default 5). `null` means no limit. */
  defaultTimeout?: number | null;
  /** Seconds a result is reused before the check runs again (default 0: always run). */
  cacheTtl?: number;
  /** When non-empty, only checks with these names run (HealthConfig.checks). */
  only?: readonly string[];
  clock?: Clock;
  timers?: Timers;
  logger?: Logger;
  /** Where "health probe completed" is emitted (the process bus by default). */
  events?: MonitoringEventBus;
}

/** One registered check. */
export interface CheckEntry {
  name: string;
  check: HealthCheckLike;
  timeout: number | null | undefined;
  category: HealthCheckCategory;
}

interface CacheSlot {
  result?: HealthCheckResult;
  at?: number;
  inflight?: Promise<HealthCheckResult>;
}

/** Runs named health checks and aggregates their results. */
export class HealthChecker implements HealthReportSource {
  private readonly entries = new Map<string, CheckEntry>();
  private readonly cache = new Map<string, CacheSlot>();
  private readonly defaultTimeout: number | null;
  private readonly cacheTtlMs: number;
  private readonly clock: Clock;
  private readonly timers: Timers;
  private readonly logger: Logger;
  private readonly events: MonitoringEventBus;
  private refreshHandle: TimerHandle | undefined;
  private readonly only: ReadonlySet<string> | undefined;

  constructor(options: HealthCheckerOptions = {}) {
    this.only = options.only && options.only.length > 0 ? new Set(options.only) : undefined;
    this.defaultTimeout =
      options.defaultTimeout === undefined ? DEFAULT_CHECK_TIMEOUT : options.defaultTimeout;
    this.cacheTtlMs = Math.max(0, (options.cacheTtl ?? 0) * 1000);
    this.clock = options.clock ?? systemClock;
    this.timers = options.timers ?? systemTimers;
    this.logger = options.logger ?? silentLogger();
    this.events = options.events ?? monitoringEvents;
  }

  /**
   * Adds (or replaces) the check `name`: a check object or a callable returning a boolean, a mapping
   * or a HealthCheckResult. `timeout` is in seconds; a slower check is reported UNHEALTHY.
   */
  add(
    name: string,
    check: HealthCheckLike,
    timeout?: number | null,
    category: HealthCheckCategory = HealthCheckCategory.READINESS,
  ): this {
    if (typeof check !== 'function' && (typeof check !== 'object' || typeof check?.check !== 'function')) {
      throw new InvalidHealthCheckError(`health check ${name} must be a function or have a check() method`);
    }
    this.entries.set(name, { name, check, timeout, category });
    this.cache.delete(name);
    return this;
  }

  /** Removes the check `name`; HealthCheckNotFoundError when there is none. */
  remove(name: string): void {
    if (!this.entries.delete(name))
      throw new HealthCheckNotFoundError(`health check ${name} is not registered`);
    this.cache.delete(name);
  }

  /** True when a check `name` is registered. */
  has(name: string): boolean {
    return this.entries.has(name);
  }

  /** Names of the registered checks, sorted. */
  get checkNames(): string[] {
    return [...this.entries.keys()].sort();
  }

  /**
   * Adds a check decorated by `healthChecker` (name, timeout and category from its stamp), or a
   * BaseHealthCheck under its own name. InvalidHealthCheckError for an undecorated callable.
   */
  register(check: HealthCheckLike): this {
    if (check instanceof BaseHealthCheck) return this.add(check.name, check);
    const s = stampOf(check);
    if (!s) throw new InvalidHealthCheckError('health check is not decorated with healthChecker(name)');
    return this.add(s.name, check, s.timeout, s.category);
  }

  /** Runs every check concurrently; results by name. */
  async runAll(): Promise<Record<string, HealthCheckResult>> {
    return this.runEntries([...this.entries.values()]);
  }

  /** The aggregate of `results`. */
  aggregateStatus(
    results: Record<string, HealthCheckResult> | Iterable<HealthCheckResult>,
  ): ReturnType<typeof aggregateStatus> {
    const list =
      Symbol.iterator in results ? (results as Iterable<HealthCheckResult>) : Object.values(results);
    return aggregateStatus(list);
  }

  /** Runs every check and returns the aggregate with the results. */
  async runAllWithSummary(): Promise<HealthReport> {
    return this.report(await this.runAll());
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

  /** Re-runs every check every `intervalSeconds` so cached results stay fresh. */
  startBackgroundRefresh(intervalSeconds: number): void {
    this.stopBackgroundRefresh();
    this.refreshHandle = this.timers.setInterval(() => {
      this.refresh().catch((err: unknown) => this.logger.warn({ err }, 'health refresh failed'));
    }, intervalSeconds * 1000);
  }

  /** Stops the background refresh; safe to call when none runs. */
  stopBackgroundRefresh(): void {
    if (this.refreshHandle !== undefined) this.timers.clearInterval(this.refreshHandle);
    this.refreshHandle = undefined;
  }

  /** Runs every check now, ignoring cached results, and caches the new ones. */
  async refresh(): Promise<Record<string, HealthCheckResult>> {
    return this.runEntries([...this.entries.values()], true);
  }

  private async runCategory(category: HealthCheckCategory): Promise<HealthReport> {
    const entries = [...this.entries.values()].filter((e) => e.category === category);
    return this.report(await this.runEntries(entries));
  }

  private report(checks: Record<string, HealthCheckResult>): HealthReport {
    return { status: aggregateStatus(Object.values(checks)), timestamp: this.clock.now() / 1000, checks };
  }

  private async runEntries(all: CheckEntry[], force = false): Promise<Record<string, HealthCheckResult>> {
    const only = this.only;
    const entries = only ? all.filter((e) => only.has(e.name)) : all;
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    const results = await Promise.all(entries.map((e) => this.runEntry(e, force)));
    const out: Record<string, HealthCheckResult> = {};
    entries.forEach((e, i) => (out[e.name] = results[i]!));
    return out;
  }

  private runEntry(entry: CheckEntry, force: boolean): Promise<HealthCheckResult> {
    const run = (): Promise<HealthCheckResult> =>
      runCheck(entry.name, entry.check, {
        timeoutSeconds: entry.timeout === undefined ? this.defaultTimeout : entry.timeout,
        category: entry.category,
        clock: this.clock,
        timers: this.timers,
        logger: this.logger,
      }).then((result) => {
        this.events.emit(MonitoringEventKind.HEALTH_PROBE_COMPLETED, {
          check_name: entry.name,
          healthy: result.status !== HealthStatus.UNHEALTHY,
        });
        return result;
      });
    if (this.cacheTtlMs === 0) return run();
    let slot = this.cache.get(entry.name);
    if (!slot) {
      slot = {};
      this.cache.set(entry.name, slot);
    }
    if (slot.inflight) return slot.inflight;
    if (
      !force &&
      slot.result &&
      slot.at !== undefined &&
      this.clock.monotonic() - slot.at < this.cacheTtlMs
    ) {
      return Promise.resolve(slot.result);
    }
    const s = slot;
    const p = run().then((result) => {
      s.result = result;
      s.at = this.clock.monotonic();
      s.inflight = undefined;
      return result;
    });
    s.inflight = p;
    return p;
  }
}
