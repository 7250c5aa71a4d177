/** Reporting to the monitor service: import from here. */
export {
  DeclaredSloSchema,
  MAX_DECLARED_SLOS,
  MonitorReporterConfigSchema,
  type DeclaredSlo,
  type MonitorReporterConfig,
} from './config';
export { MonitorCallError, MonitorClient, type ExceptionReport, type MonitorSink } from './monitor-client';
export {
  MAX_SAMPLES_PER_CALL,
  MonitorReporter,
  deliveryLatencyMetric,
  type DropReason,
  type MonitorReporterOptions,
  type ReportKind,
} from './reporter';
export { receiptChannels } from './default-slos';
export { errorType, MAX_MESSAGE_LENGTH, MAX_STACK_LENGTH, scrubText, stackFrames } from './scrub';

import type { Registry } from 'prom-client';
import type { Logger } from '../../../shared/logging/logger';
import type { MonitorReporterConfig } from './config';
import type { Channel } from '../delivery/driver';
import { MonitorClient } from './monitor-client';
import { MonitorReporter } from './reporter';

/**
 * The reporter the `monitor` section asks for: undefined without `grpc_address` (the service runs
 * alone). Logs where it reports, never the token.
 */
export function createMonitorReporter(
  config: MonitorReporterConfig,
  deps: { registry: Registry; logger: Logger; receiptChannels?: readonly Channel[] },
): MonitorReporter | undefined {
  if (!config.grpc_address) return undefined;
  const sink = new MonitorClient({ ...config, grpc_address: config.grpc_address });
  deps.logger.info(
    {
      component: 'monitor-reporter',
      address: config.grpc_address,
      tls: config.tls,
      authenticated: config.api_token !== undefined,
      slos: config.slos.length,
    },
    'reporting to the monitor',
  );
  return new MonitorReporter({
    config,
    sink,
    registry: deps.registry,
    logger: deps.logger,
    receiptChannels: deps.receiptChannels,
  });
}
