/**
 * TargetsArea: the services the monitor watches. One watcher per configured target probes it every
 * `interval_seconds` (never two probes of one target at once), keeps its state (target-state.ts),
 * sets `up{target}` and the probe latency on `/metrics`, raises one alert when it goes down and one
 * when it recovers (target-alerts.ts), and offers each target as a readiness check that reads the
 * last state (never probes on demand). The status page reads `states()` and `onChange()`.
 */
import { performance } from 'node:perf_hooks';
import { SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { ResourceExhaustedError } from '../../../shared/errors';
import { type Logger, redactUrlCredentials } from '../../../shared/logging/logger';
import type { AlertDispatcherProtocol } from '../../../shared/monitoring/alerts/dispatcher';
import type { MetricsCollector } from '../../../shared/monitoring/collector';
import type { HealthChecker } from '../../../shared/monitoring/health/checker';
import {
  HealthCheckCategory,
  HealthCheckResult,
  HealthStatus,
} from '../../../shared/monitoring/health/result';
import type { Gauge, Histogram } from '../../../shared/monitoring/instruments';
import type { TargetConfig } from './config';
import { GrpcHealthProbe, type ProbeOutcome, probeHttp } from './probes';
import { type TargetAlert, TargetAlertQueue, targetAlert } from './target-alerts';
import { type TargetState, type TargetTransition, TargetTracker } from './target-state';
import type { TargetStateStore } from './store';
import type { TargetHistoryStore } from './history';
import { InProcessJobLease, type JobLease } from '../../../shared/storage/periodic-job';

/** Longest default probe timeout: a slow target is a failing one. */
export const MAX_DEFAULT_TIMEOUT_MS = 5000;
/** Listeners `onChange` accepts at once (the status page needs one). */
export const MAX_TARGET_LISTENERS = 32;
/** How long stop() waits for queued alerts to be handed to the dispatcher. */
const STOP_ALERT_DRAIN_MS = 5000;
/** Prefix of each target's health check name: `target.<name>`. */
export const TARGET_CHECK_PREFIX = 'target.';

/** Called with a target's new state after each finished probe. */
export type TargetStateListener = (state: TargetState) => void;

/** Options of TargetsArea. */
export interface TargetsAreaOptions {
  targets: readonly TargetConfig[];
  /** Where "down" and "recovered" alerts go. */
  alerts: AlertDispatcherProtocol;
  /** Resolves the "down" alert when the target recovers (the AlertHub's `resolve`); see target-alerts.ts. */
  resolve?: (dedupKey: string, recovered: TargetAlert) => Promise<void>;
  /** The monitor's collector: `up` and `target_probe_duration_seconds` are created on it. */
  collector: MetricsCollector;
  logger: Logger;
  /**
   * Where each target's state is kept (the monitor's database): loaded at start and before each
   * probe, saved after it, so a restart and the other replicas see it. Without one, in memory.
   */
  store?: TargetStateStore;
  /**
   * Who probes a target per interval (`probe:<name>`): a DatabaseJobLease on the database's clock
   * when replicas share the store, so each round runs once across them; the others take the state
   * the prober kept. Without one, every round runs here.
   */
  lease?: JobLease;
  /** Issue 29: where each probe's result is added to the target's minute buckets (the page's charts). */
  history?: TargetHistoryStore;
}

/** The store and lease of targets shared across restarts and replicas. */
interface SharedTargetState {
  store: TargetStateStore;
  lease: JobLease;
}

/** The probe timeout of a target: `timeout_ms`, else its interval capped at {@link MAX_DEFAULT_TIMEOUT_MS}. */
export function probeTimeoutMs(target: TargetConfig): number {
  return target.timeout_ms ?? Math.min(target.interval_seconds * 1000, MAX_DEFAULT_TIMEOUT_MS);
}

const tracer = trace.getTracer('svc.monitor.targets');

/** Probes one target in a loop: the next probe is scheduled when the previous one has finished. */
class TargetWatcher {
  readonly tracker: TargetTracker;
  private readonly grpc: GrpcHealthProbe | undefined;
  private readonly intervalMs: number;
  private readonly timeoutMs: number;
  /** Sent with every HTTP probe: the target's `headers` and its `bearer_token`. */
  private readonly httpHeaders: Record<string, string>;
  // One long-lived signal for stop(); each probe adds one listener and removes it when it ends.
  private readonly abort = new AbortController();
  private timer: NodeJS.Timeout | undefined;
  private inflight: Promise<void> | undefined;
  private stopped = false;

  constructor(
    private readonly target: TargetConfig,
    private readonly latency: Histogram,
    private readonly logger: Logger,
    private readonly onProbed: (state: TargetState, transition: TargetTransition | null) => void,
    private readonly shared?: SharedTargetState,
    private readonly history?: TargetHistoryStore,
  ) {
    this.intervalMs = target.interval_seconds * 1000;
    this.timeoutMs = probeTimeoutMs(target);
    this.tracker = new TargetTracker({
      name: target.name,
      grpcAddress: target.grpc_address ?? null,
      // What is shown (alerts, health details, the page) never carries a password of the URL.
      httpUrl: target.http_url ? redactUrlCredentials(target.http_url) : null,
    });
    this.httpHeaders = { ...target.headers };
    if (target.bearer_token !== undefined) this.httpHeaders.authorization = `Bearer ${target.bearer_token}`;
    this.grpc = target.grpc_address ? new GrpcHealthProbe(target.grpc_address, this.intervalMs) : undefined;
  }

  start(): void {
    this.schedule(0);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    this.timer = undefined;
    this.abort.abort();
    await this.inflight;
    this.grpc?.close();
  }

  private schedule(delayMs: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.inflight = this.run().finally(() => (this.inflight = undefined));
    }, delayMs);
    // The server keeps the process alive, not a probe timer.
    this.timer.unref();
  }

  /** Takes the kept state, if any, in place of this watcher's; tells the listeners when it changed. */
  async adopt(notify: boolean): Promise<void> {
    if (!this.shared) return;
    const kept = await this.shared.store.load(this.target.name);
    if (kept && this.tracker.restore(kept) && notify && !this.stopped)
      this.onProbed(this.tracker.snapshot(), null);
  }

  private async run(): Promise<void> {
    const started = performance.now();
    try {
      if (!this.shared) await this.probeAndRecord();
      else {
        // One round per interval across the replicas (the database's clock); a replica whose turn it
        // is not takes the state the prober kept, so its page and health checks show the same.
        const ran = await this.shared.lease.runIfDue(
          `probe:${this.target.name}`,
          new Date(),
          this.intervalMs * 0.9,
          async () => {
            await this.adopt(false);
            await this.probeAndRecord();
          },
        );
        if (!ran) await this.adopt(true);
      }
    } catch (err) {
      // A bug here must not end the watching of this target for the life of the process.
      this.logger.error({ err, target: this.target.name }, 'target probe failed unexpectedly');
    }
    this.schedule(Math.max(0, this.intervalMs - (performance.now() - started)));
  }

  private async probeAndRecord(): Promise<void> {
    const started = performance.now();
    const outcome = await this.probe();
    const elapsedMs = performance.now() - started;
    // A probe cut short by stop() says nothing about the target.
    if (this.stopped) return;
    const at = new Date();
    const latencyMs = Math.round(elapsedMs * 1000) / 1000;
    const transition = this.tracker.record(outcome, at, latencyMs);
    const state = this.tracker.snapshot();
    this.onProbed(state, transition);
    await this.shared?.store.save(this.target.name, state);
    if (this.history) {
      const probe = { atMs: at.getTime(), ok: outcome.ok, latencyMs };
      // The chart misses one point at worst: a history write never stops the probing.
      await this.history
        .record(this.target.name, outcome.ok ? probe : { ...probe, error: outcome.reason })
        .catch((err: unknown) =>
          this.logger.warn({ err, target: this.target.name }, 'target history write failed'),
        );
    }
  }

  /**
   * One probe of every configured kind, in parallel, inside a CLIENT span "probe target" that starts
   * a trace of its own: the gRPC instrumentation's call span is its child, so the trace continues in
   * the target's process (no-op when the process runs no OpenTelemetry SDK).
   */
  private probe(): Promise<ProbeOutcome> {
    const { name, grpc_address: grpcAddress, http_url: httpUrl } = this.target;
    const shownUrl = this.tracker.snapshot().httpUrl;
    return tracer.startActiveSpan(
      'probe target',
      {
        kind: SpanKind.CLIENT,
        root: true,
        attributes: {
          'monitor.target': name,
          ...(grpcAddress ? { 'monitor.target.grpc_address': grpcAddress } : {}),
          ...(shownUrl ? { 'monitor.target.http_url': shownUrl } : {}),
        },
      },
      async (span) => {
        try {
          const probes: Promise<ProbeOutcome>[] = [];
          if (this.grpc) probes.push(this.timed('grpc', this.grpc.check(this.timeoutMs, this.abort.signal)));
          if (httpUrl)
            probes.push(
              this.timed('http', probeHttp(httpUrl, this.timeoutMs, this.abort.signal, this.httpHeaders)),
            );
          const outcomes = await Promise.all(probes);
          const failed = outcomes.find((o): o is { ok: false; reason: string } => !o.ok);
          const outcome: ProbeOutcome = failed ?? { ok: true };
          span.setAttribute('monitor.target.up', outcome.ok);
          if (!outcome.ok) span.setStatus({ code: SpanStatusCode.ERROR, message: outcome.reason });
          return outcome;
        } finally {
          span.end();
        }
      },
    );
  }

  private async timed(kind: 'grpc' | 'http', probe: Promise<ProbeOutcome>): Promise<ProbeOutcome> {
    const started = performance.now();
    const outcome = await probe;
    if (!this.stopped) {
      this.latency.observe((performance.now() - started) / 1000, { target: this.target.name, kind });
    }
    return outcome;
  }
}

/** The watched targets of the monitor. */
export class TargetsArea {
  private readonly watchers = new Map<string, TargetWatcher>();
  private readonly listeners = new Set<TargetStateListener>();
  private readonly alerts: TargetAlertQueue;
  private readonly up: Gauge;
  private readonly logger: Logger;
  private started = false;
  private readonly hasStore: boolean;

  constructor(options: TargetsAreaOptions) {
    this.hasStore = options.store !== undefined;
    this.logger = options.logger.child({ component: 'targets' });
    this.alerts = new TargetAlertQueue(options.alerts, this.logger, undefined, options.resolve);
    // Series are bounded by the configured targets: one `up` per target, one histogram per kind.
    this.up = options.collector.createGauge(
      'up',
      'Whether the watched target answers its health probes (1 up, 0 down); absent until known',
      undefined,
      { labelNames: ['target'] },
    );
    const latency = options.collector.createHistogram(
      'target_probe_duration_seconds',
      'Time of one health probe of a watched target, by probe kind (grpc, http)',
      undefined,
      undefined,
      { labelNames: ['target', 'kind'] },
    );
    for (const target of options.targets) {
      this.watchers.set(
        target.name,
        new TargetWatcher(
          target,
          latency,
          this.logger,
          (state, transition) => this.probed(state, transition),
          options.store
            ? { store: options.store, lease: options.lease ?? new InProcessJobLease() }
            : undefined,
          options.history,
        ),
      );
    }
  }

  /**
   * Starts probing every target (the first probe at once). With a store, each target's kept state is
   * loaded first, so a target that was down before a restart is down from the first read on.
   */
  start(): Promise<void> | void {
    if (this.started) return;
    this.started = true;
    if (!this.hasStore) {
      for (const watcher of this.watchers.values()) watcher.start();
      return;
    }
    return (async () => {
      await Promise.all([...this.watchers.values()].map((w) => w.adopt(true)));
      for (const watcher of this.watchers.values()) watcher.start();
    })();
  }

  /**
   * Stops probing: cancels the probes in flight, closes the gRPC channels, and waits (a bounded time)
   * for queued alerts to reach the dispatcher. Listeners are dropped.
   */
  async stop(): Promise<void> {
    await Promise.all([...this.watchers.values()].map((w) => w.stop()));
    this.listeners.clear();
    await this.alerts.drain(STOP_ALERT_DRAIN_MS);
  }

  /** Every target's state, in config order. */
  states(): TargetState[] {
    return [...this.watchers.values()].map((w) => w.tracker.snapshot());
  }

  /**
   * Calls `listener` with a target's state after each finished probe; returns the function that
   * removes it. ResourceExhaustedError beyond {@link MAX_TARGET_LISTENERS} listeners.
   */
  onChange(listener: TargetStateListener): () => void {
    if (this.listeners.size >= MAX_TARGET_LISTENERS) {
      throw new ResourceExhaustedError(`at most ${MAX_TARGET_LISTENERS} target state listeners`);
    }
    // A wrapper, so the same function added twice is two listeners and each unsubscribe removes one.
    const entry: TargetStateListener = (state) => listener(state);
    this.listeners.add(entry);
    return () => {
      this.listeners.delete(entry);
    };
  }

  /**
   * Adds one READINESS check per target, `target.<name>`, to `checker`: HEALTHY when up, DEGRADED
   * when down or not known yet, never UNHEALTHY, so a watched service that is down never takes the
   * monitor itself out of rotation. The check reads the last probe's state.
   */
  addHealthChecks(checker: HealthChecker): void {
    for (const [name, watcher] of this.watchers) {
      const component = TARGET_CHECK_PREFIX + name;
      checker.add(
        component,
        () => targetHealth(component, watcher.tracker.snapshot()),
        null,
        HealthCheckCategory.READINESS,
      );
    }
  }

  private probed(state: TargetState, transition: TargetTransition | null): void {
    if (state.up !== null) this.up.set(state.up ? 1 : 0, { target: state.name });
    if (transition) {
      const alert = targetAlert(transition, state);
      this.logger.info(
        { target: state.name, state: transition, consecutiveFailures: state.consecutiveFailures },
        `target ${transition}`,
      );
      this.alerts.push(alert);
    }
    for (const listener of this.listeners) {
      try {
        listener(state);
      } catch (err) {
        this.logger.warn({ err }, 'target state listener failed');
      }
    }
  }
}

/** The health check result of a target in `state`. */
export function targetHealth(component: string, state: TargetState): HealthCheckResult {
  const details = {
    target: state.name,
    grpc_address: state.grpcAddress,
    http_url: state.httpUrl,
    up: state.up,
    consecutive_failures: state.consecutiveFailures,
    last_probe_at: state.lastProbeAt?.toISOString() ?? null,
    last_latency_ms: state.lastLatencyMs,
    last_error: state.lastError,
  };
  const base = {
    component,
    details,
    category: HealthCheckCategory.READINESS,
    durationMs: state.lastLatencyMs,
  };
  if (state.up === true)
    return new HealthCheckResult({ ...base, status: HealthStatus.HEALTHY, message: 'up' });
  if (state.up === false) {
    return new HealthCheckResult({
      ...base,
      status: HealthStatus.DEGRADED,
      message: `down: ${state.lastError ?? 'unknown'}`,
      error: state.lastError,
    });
  }
  return new HealthCheckResult({ ...base, status: HealthStatus.DEGRADED, message: 'state not known yet' });
}
