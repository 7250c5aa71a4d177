/**
 * Pushing a registry to a Prometheus Pushgateway (PUT `/metrics/job/<job>`, 5 s timeout). Failures
 * are logged and reported as false, never thrown: a push runs from a timer.
 */
import type * as Prom from 'prom-client';
import type { Logger } from '../../logging/logger';
import type { PromClientModule } from '../prom-loader';

/** Options of pushToGateway. */
export interface PushGatewayOptions {
  url: string;
  registry: Prom.Registry;
  jobName: string;
  logger: Logger;
}

/** Pushes `registry` now; true when the gateway took it. */
export async function pushToGateway(prom: PromClientModule, options: PushGatewayOptions): Promise<boolean> {
  const gateway = new prom.Pushgateway(options.url, { timeout: 5000 }, options.registry);
  try {
    await gateway.push({ jobName: options.jobName });
    return true;
  } catch (err) {
    options.logger.warn({ err }, 'push to Pushgateway failed');
    return false;
  }
}
