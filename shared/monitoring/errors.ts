/**
 * Every error the monitoring library throws, in one file, under the names the monitoring spec uses.
 * Each is a rung of the project's one error ladder (shared/errors): it extends the ladder class of its
 * code, so the one mapping per transport (shared/rpc/errors.ts, shared/http/errors.ts) answers it like
 * any other domain error. Messages never carry secrets or driver text.
 */
import {
  AlreadyExistsError,
  FailedPreconditionError,
  InvalidArgumentError,
  NotFoundError,
  ResourceExhaustedError,
  UnavailableError,
} from '../errors';

/** A required backend or its client library is not available (spec: BackendNotAvailableError). */
export class BackendNotAvailableError extends UnavailableError {}

/** The pull-metrics client library is missing when `metricsApp` is asked for (spec: RuntimeError). */
export class MetricsClientUnavailableError extends FailedPreconditionError {}

/** Invalid metric parameters: bad name, label, value, or a metric name reused with another type. */
export class InvalidMetricError extends InvalidArgumentError {}

/**
 * A metric name or label series beyond `metrics.max_metric_names` / `metrics.max_series_per_metric`:
 * refused so remote input cannot grow the registry without bound.
 */
export class MetricLimitExceededError extends ResourceExhaustedError {}

/** More listeners than an event bus allows for one event kind (a listener leak, most likely). */
export class ListenerLimitExceededError extends ResourceExhaustedError {}

/** A requested metric does not exist. */
export class MetricNotFoundError extends NotFoundError {}

/** `HealthChecker.remove` with an unregistered name (spec: KeyError). */
export class HealthCheckNotFoundError extends NotFoundError {}

/** `HealthChecker.register` with a callable not decorated by `healthChecker` (spec: ValueError). */
export class InvalidHealthCheckError extends InvalidArgumentError {}

/** A monitoring component was configured inconsistently (for example `store_in_db` without a database). */
export class MonitoringConfigError extends InvalidArgumentError {}

/** Performance-monitor errors (spec: PerformanceMonitorError, start while already active). */
export class PerformanceMonitorError extends FailedPreconditionError {}

/** Span errors. */
export class SpanError extends FailedPreconditionError {}

/** An SLO definition or sample is invalid (percentile, window, threshold, objective, value). */
export class InvalidSLOError extends InvalidArgumentError {}

/** `SLOMonitor.register` with a name already registered (spec: ValueError). */
export class DuplicateSLOError extends AlreadyExistsError {}

/** `SLOMonitor.register` beyond `max_slos`: refused so remote callers cannot grow it without bound. */
export class SLOLimitExceededError extends ResourceExhaustedError {}

/** An alert channel (a webhook) did not accept an alert after its retries. */
export class AlertDeliveryError extends UnavailableError {}
