/**
 * Wiring of the monitor service: builds every component from the config and serves them on the two
 * ports. Used by main.ts and by tests that run the service in-process.
 */
import { Registry } from 'prom-client';
import { MonitorService } from '../../shared/gen/svc/monitor/v1/monitor_pb';
import { RpcServer, registration, serverOptionsFromConfig } from '../../shared/rpc/server';
import type { Logger } from '../../shared/logging/logger';
import { ServiceObservability } from '../../shared/runtime/observability';
import type { MonitorConfig } from './config';

export interface MonitorApp {
  server: RpcServer;
  registry: Registry;
  start(): Promise<{ grpc: number; http: number }>;
  stop(): Promise<void>;
}

export async function createMonitorApp(config: MonitorConfig, logger: Logger): Promise<MonitorApp> {
  const registry = new Registry();

  const server = new RpcServer({
    name: 'monitor',
    logger,
    registry,
    ...serverOptionsFromConfig(config.server),
    // The monitor RPCs are not built yet: every method answers UNIMPLEMENTED.
    services: [registration(MonitorService, {})],
  });

  const observability = new ServiceObservability({
    server,
    registry,
    logger,
    health: config.health,
    metricsAuthToken: config.metrics_auth_token,
  });

  return {
    server,
    registry,
    async start() {
      const ports = await server.start();
      await observability.start();
      return ports;
    },
    async stop() {
      await server.shutdown();
      observability.stop();
    },
  };
}
