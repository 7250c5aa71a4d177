/**
 * The in-process event bus of the monitoring library: the spec's event payloads (alert triggered,
 * health probe completed, metric data point recorded) delivered synchronously to listeners in the
 * same process. Emitting never fails the operation that emits: a listener that throws (or whose
 * promise rejects) is logged and skipped. Listeners per kind are bounded (`maxListeners`, 100), so a
 * forgotten unsubscribe shows up as an error instead of a slow leak.
 *
 * Who emits what (the default bus {@link monitoringEvents} unless a component is given another):
 * - `monitoring.alert_triggered`: the alert dispatchers, through {@link emitAlertTriggered}.
 * - `monitoring.health_probe_completed`: `HealthChecker`, each time a check actually runs (a result
 *   served from its cache is not a probe).
 * - `monitoring.metric_data_point_recorded`: `MetricsCollector.increment`, `gauge` and `histogram`,
 *   only when the kind has listeners (instruments updated directly do not emit: that path stays
 *   cheap).
 */
import { type Logger, silentLogger } from '../../logging/logger';
import { ListenerLimitExceededError } from '../errors';

/** Event kind names. */
export const MonitoringEventKind = {
  ALERT_TRIGGERED: 'monitoring.alert_triggered',
  HEALTH_PROBE_COMPLETED: 'monitoring.health_probe_completed',
  METRIC_DATA_POINT_RECORDED: 'monitoring.metric_data_point_recorded',
} as const;

/** One of the event kind names. */
export type MonitoringEventKind = (typeof MonitoringEventKind)[keyof typeof MonitoringEventKind];

/** "Monitoring alert triggered". */
export interface AlertTriggeredEvent {
  /** Name of the alert rule (or SLO). */
  alert_name: string;
  /** For example `warning`, `critical`. */
  severity: string;
}

/** "Health check probe completed". */
export interface HealthProbeCompletedEvent {
  check_name: string;
  /** True if the check passed: HEALTHY or DEGRADED (a degraded check still serves). */
  healthy: boolean;
}

/** "Metric data point recorded". */
export interface MetricDataPointRecordedEvent {
  metric_name: string;
  value: number;
}

/** Payload type of each kind. */
export interface MonitoringEventMap {
  'monitoring.alert_triggered': AlertTriggeredEvent;
  'monitoring.health_probe_completed': HealthProbeCompletedEvent;
  'monitoring.metric_data_point_recorded': MetricDataPointRecordedEvent;
}

/** A listener; its return value is ignored (a rejected promise is logged). */
export type MonitoringEventListener<K extends MonitoringEventKind> = (
  payload: Readonly<MonitoringEventMap[K]>,
) => unknown;

/** Default bound of listeners per event kind. */
export const DEFAULT_MAX_LISTENERS = 100;

/** Options of MonitoringEventBus. */
export interface MonitoringEventBusOptions {
  /** Listeners allowed per kind (100). */
  maxListeners?: number;
  logger?: Logger;
}

type AnyListener = (payload: unknown) => unknown;

/** Synchronous, typed, bounded in-process event bus. */
export class MonitoringEventBus {
  private readonly listeners = new Map<MonitoringEventKind, AnyListener[]>();
  private readonly maxListeners: number;
  private logger: Logger;

  constructor(options: MonitoringEventBusOptions = {}) {
    this.maxListeners = Math.max(1, options.maxListeners ?? DEFAULT_MAX_LISTENERS);
    this.logger = options.logger ?? silentLogger();
  }

  /** Where failing listeners are reported (the process bus starts silent; services set their logger). */
  setLogger(logger: Logger): void {
    this.logger = logger;
  }

  /**
   * Adds a listener; returns the function that removes it. ListenerLimitExceededError beyond
   * `maxListeners` for the kind.
   */
  on<K extends MonitoringEventKind>(kind: K, listener: MonitoringEventListener<K>): () => void {
    const list = this.listeners.get(kind) ?? [];
    if (list.length >= this.maxListeners) {
      throw new ListenerLimitExceededError(
        `event ${kind}: at most ${this.maxListeners} listeners (remove unused ones)`,
      );
    }
    // Copy on write: an emit in progress keeps iterating the list it started with.
    this.listeners.set(kind, [...list, listener as AnyListener]);
    return () => this.off(kind, listener);
  }

  /** Removes a listener (the first registration of it); unknown listeners are ignored. */
  off<K extends MonitoringEventKind>(kind: K, listener: MonitoringEventListener<K>): void {
    const list = this.listeners.get(kind);
    if (!list) return;
    const i = list.indexOf(listener as AnyListener);
    if (i < 0) return;
    const next = [...list.slice(0, i), ...list.slice(i + 1)];
    if (next.length === 0) this.listeners.delete(kind);
    else this.listeners.set(kind, next);
  }

  /** Number of listeners of a kind. */
  listenerCount(kind: MonitoringEventKind): number {
    return this.listeners.get(kind)?.length ?? 0;
  }

  /** True when a kind has listeners; emitters on hot paths check this before building a payload. */
  hasListeners(kind: MonitoringEventKind): boolean {
    return this.listeners.has(kind);
  }

  /** Delivers `payload` to every listener of `kind`; resolves nothing, never throws. Returns the count reached. */
  emit<K extends MonitoringEventKind>(kind: K, payload: MonitoringEventMap[K]): number {
    const list = this.listeners.get(kind);
    if (!list) return 0;
    const frozen = Object.freeze({ ...payload });
    for (const listener of list) {
      try {
        const out = listener(frozen);
        if (out instanceof Promise) out.catch((err: unknown) => this.failed(kind, err));
      } catch (err) {
        this.failed(kind, err);
      }
    }
    return list.length;
  }

  /** Removes every listener. */
  clear(): void {
    this.listeners.clear();
  }

  private failed(kind: MonitoringEventKind, err: unknown): void {
    this.logger.warn({ err, event: kind }, 'monitoring event listener failed');
  }
}

/** The process's event bus, used by the library's components unless they are given another. */
export const monitoringEvents = new MonitoringEventBus();

/** Emits "monitoring alert triggered" (for the alert dispatchers). */
export function emitAlertTriggered(
  payload: AlertTriggeredEvent,
  bus: MonitoringEventBus = monitoringEvents,
): number {
  return bus.emit(MonitoringEventKind.ALERT_TRIGGERED, payload);
}
