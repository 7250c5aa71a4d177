/**
 * Every error the monitoring library throws, in one file. Each extends the project's DomainError so
 * the RPC layer maps it like any other; messages never carry secrets or driver text.
 */
import { DomainError, type DomainErrorCode } from '../errors';

/** Base of all monitoring errors. */
export class MonitoringError extends DomainError {
  readonly code: DomainErrorCode = 'FAILED_PRECONDITION';
}

/** A required backend or its client library is not available (spec: BackendNotAvailableError). */
export class BackendNotAvailableError extends MonitoringError {
  override readonly code = 'UNAVAILABLE' as const;
}

/** The pull-metrics client library is missing when `metricsApp` is asked for (spec: RuntimeError). */
export class MetricsClientUnavailableError extends MonitoringError {
  override readonly code = 'FAILED_PRECONDITION' as const;
}

/** Invalid metric parameters: bad name, label, value, or a metric name reused with another type. */
export class InvalidMetricError extends MonitoringError {
  override readonly code = 'INVALID_ARGUMENT' as const;
}

/**
 * A metric name or label series beyond `metrics.max_metric_names` / `metrics.max_series_per_metric`:
 * refused so remote input cannot grow the registry without bound.
 */
export class MetricLimitExceededError extends MonitoringError {
  override readonly code = 'RESOURCE_EXHAUSTED' as const;
}

/** More listeners than an event bus allows for one event kind (a listener leak, most likely). */
export class ListenerLimitExceededError extends MonitoringError {
  override readonly code = 'RESOURCE_EXHAUSTED' as const;
}

/** A requested metric does not exist. */
export class MetricNotFoundError extends MonitoringError {
  override readonly code = 'NOT_FOUND' as const;
}

/** `HealthChecker.remove` with an unregistered name (spec: KeyError). */
export class HealthCheckNotFoundError extends MonitoringError {
  override readonly code = 'NOT_FOUND' as const;
}

/** `HealthChecker.register` with a callable not decorated by `healthChecker` (spec: ValueError). */
export class InvalidHealthCheckError extends MonitoringError {
  override readonly code = 'INVALID_ARGUMENT' as const;
}

/** A monitoring component was configured inconsistently (for example `store_in_db` without a database). */
export class MonitoringConfigError extends MonitoringError {
  override readonly code = 'INVALID_ARGUMENT' as const;
}

/** Base of performance-monitor errors (start while already active). */
export class PerformanceMonitorError extends MonitoringError {}

/** Span errors. */
export class SpanError extends MonitoringError {}

/** An SLO definition or sample is invalid (percentile, window, threshold, objective, value). */
export class InvalidSLOError extends MonitoringError {
  override readonly code = 'INVALID_ARGUMENT' as const;
}

/** `SLOMonitor.register` with a name already registered (spec: ValueError). */
export class DuplicateSLOError extends MonitoringError {
  override readonly code = 'ALREADY_EXISTS' as const;
}

/** `SLOMonitor.register` beyond `max_slos`: refused so remote callers cannot grow it without bound. */
export class SLOLimitExceededError extends MonitoringError {
  override readonly code = 'RESOURCE_EXHAUSTED' as const;
}

/** An alert channel (a webhook) did not accept an alert after its retries. */
export class AlertDeliveryError extends MonitoringError {
  override readonly code = 'UNAVAILABLE' as const;
}
