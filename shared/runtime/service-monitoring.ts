/**
 * The monitoring library's process-wide parts that every service wires the same way at start, written
 * once: the defaults of the `metered` and `monitor` helpers (the service's collector and logger), and
 * the error tracker of the `error_tracking` section, closed (flushed) at stop through the lifecycle.
 * The RPC server reports each unexpected error (answered as INTERNAL) to the tracker through
 * {@link ServiceMonitoring.onUnexpectedError}.
 */
import type { Logger } from '../logging/logger';
import type { MetricsCollectorProtocol } from '../monitoring/collector';
import type { ErrorTrackingConfig } from '../monitoring/config';
import { type ErrorTrackerProtocol, setupErrorTracking } from '../monitoring/errors/error-tracking';
import { configureInstrumentation } from '../monitoring/instrumentation/wrap-callable';
import type { ServiceLifecycle } from './lifecycle';

/** What {@link startServiceMonitoring} needs from the service. */
export interface ServiceMonitoringOptions {
  /** The service's one collector (metrics of `metered`). */
  collector: MetricsCollectorProtocol;
  logger: Logger;
  /** The `error_tracking` section. */
  errorTracking: Partial<ErrorTrackingConfig>;
  /** The service's `environment`: the tracker's environment when the section leaves it empty. */
  environment: string;
}

/** The parts built: the tracker, and the hook the RPC server calls for unexpected errors. */
export interface ServiceMonitoring {
  readonly tracker: ErrorTrackerProtocol;
  /**
   * Captures an error the caller saw as INTERNAL; undefined when tracking is off, because the RPC
   * layer already logs the cause and the no-op tracker would log it a second time.
   */
  readonly onUnexpectedError: ((err: unknown) => void) | undefined;
}

/**
 * Configures the instrumentation defaults and sets error tracking up. The tracker is registered as
 * an area, started now, so it is closed also when the service fails before `start()` (an exporter
 * would only be stopped after a start); it is closed after the server has stopped, so errors of the
 * last calls are still sent.
 */
export async function startServiceMonitoring(
  lifecycle: ServiceLifecycle,
  options: ServiceMonitoringOptions,
): Promise<ServiceMonitoring> {
  const { collector, logger } = options;
  configureInstrumentation({ collector, logger });
  const tracker = setupErrorTracking(options.errorTracking, {
    logger: logger.child({ component: 'error-tracking' }),
    defaultEnvironment: options.environment,
  });
  await lifecycle.area('error-tracking', {
    stop: async () => {
      if (!(await tracker.close())) logger.warn('error tracking: events still pending at stop were lost');
    },
  });
  return {
    tracker,
    onUnexpectedError: tracker.active ? (err) => void tracker.captureException(err) : undefined,
  };
}
