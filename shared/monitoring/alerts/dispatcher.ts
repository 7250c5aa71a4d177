/**
 * AlertDispatcherProtocol and the logging dispatcher of spec/monitoring.md: the one interface through
 * which the library (SLOMonitor, services) raises operational alerts, and its default implementation,
 * which writes each alert to the structured logger.
 */
import { type Logger, silentLogger } from '../../logging/logger';
import { emitAlertTriggered, type MonitoringEventBus } from '../events/event-bus';

/** Free-form severity; the spec's examples are `low`, `medium`, `high` and `critical`. */
export type AlertSeverity = 'low' | 'medium' | 'high' | 'critical' | (string & {});

/** Structured fields attached to an alert; `tier` routes it (see TierAwareDispatcher). */
export type AlertContext = Readonly<Record<string, unknown>>;

/** Spec: AlertDispatcherProtocol. Both operations resolve when the alert was handed on. */
export interface AlertDispatcherProtocol {
  sendAlert(
    title: string,
    message: string,
    severity: AlertSeverity,
    context?: AlertContext | null,
  ): Promise<void>;
  sendMetricAlert(
    metricName: string,
    currentValue: number,
    threshold: number,
    context?: AlertContext | null,
  ): Promise<void>;
}

const SEVERITY_RANKS: Readonly<Record<string, number>> = {
  low: 0,
  medium: 1,
  warning: 1,
  high: 2,
  critical: 3,
};

/**
 * Order of severities, for a channel's minimum: low (0) < medium = warning (1) < high (2) <
 * critical (3), in any case. A severity outside these ranks as medium: an alert of a severity nobody
 * planned for is neither silenced by a "medium and up" channel nor made a page.
 */
export function severityRank(severity: AlertSeverity): number {
  return SEVERITY_RANKS[severity.trim().toLowerCase()] ?? 1;
}

/** Log level of an alert of this severity: `high` and `critical` (any case) are ERROR, the rest WARNING. */
export function alertLogLevel(severity: AlertSeverity): 'warn' | 'error' {
  const s = severity.toLowerCase();
  return s === 'high' || s === 'critical' ? 'error' : 'warn';
}

/**
 * Log level of a metric alert: ERROR when the value exceeds the threshold by more than 100 percent
 * (more than twice the threshold), else WARNING. A threshold of 0 or less has no "100 percent", so
 * any value above it is ERROR.
 */
export function metricAlertLogLevel(currentValue: number, threshold: number): 'warn' | 'error' {
  if (threshold <= 0) return currentValue > threshold ? 'error' : 'warn';
  return currentValue > threshold * 2 ? 'error' : 'warn';
}

/** Options of LoggingAlertDispatcher. */
export interface LoggingAlertDispatcherOptions {
  /** Where "alert triggered" is emitted (default: the process bus, `monitoringEvents`). */
  events?: MonitoringEventBus;
}

/**
 * The spec's "logging alert dispatcher": each alert is one log line at the level the rules above
 * give. The context goes in as a nested `context` object, so a context key such as `level` or `msg`
 * cannot overwrite the line's own fields; the logger's redaction applies to it. Each alert is also
 * emitted as "alert triggered" on the event bus.
 */
export class LoggingAlertDispatcher implements AlertDispatcherProtocol {
  constructor(
    private readonly logger: Logger = silentLogger(),
    private readonly options: LoggingAlertDispatcherOptions = {},
  ) {}

  async sendAlert(
    title: string,
    message: string,
    severity: AlertSeverity,
    context?: AlertContext | null,
  ): Promise<void> {
    const level = alertLogLevel(severity);
    this.logger[level]({ event: 'alert', alert: title, severity, context: context ?? {} }, message);
    emitAlertTriggered({ alert_name: title, severity }, this.options.events);
  }

  async sendMetricAlert(
    metricName: string,
    currentValue: number,
    threshold: number,
    context?: AlertContext | null,
  ): Promise<void> {
    const level = metricAlertLogLevel(currentValue, threshold);
    const severity = level === 'error' ? 'critical' : 'warning';
    this.logger[level](
      {
        event: 'metric_alert',
        metric: metricName,
        current_value: currentValue,
        threshold,
        severity,
        context: context ?? {},
      },
      `metric ${metricName} at ${currentValue}, threshold ${threshold}`,
    );
    emitAlertTriggered({ alert_name: metricName, severity }, this.options.events);
  }
}
