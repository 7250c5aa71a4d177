/** Runs the monitor service in-process on free ports, with real clients for tests. */
import { createClient, type Client } from '@connectrpc/connect';
import { createConnectTransport } from '@connectrpc/connect-node';
import { MonitorService } from '../../shared/gen/svc/monitor/v1/monitor_pb';
import { silentLogger } from '../../shared/logging/logger';
import type { Logger } from '../../shared/logging/logger';
import { createMonitorApp, type MonitorApp, type MonitorAppParts } from '../../services/monitor/app';
import { loadMonitorConfig, type MonitorConfigInput } from '../../services/monitor/config';
import { grpcClient, type GenericClient } from './grpc-clients';

/** A started monitor and clients of it; `close()` stops both. */
export interface RunningMonitorApp {
  app: MonitorApp;
  grpcAddress: string;
  baseUrl: string;
  /** MonitorService over gRPC (grpc-js). */
  monitorGrpc: GenericClient;
  /** MonitorService over Connect (JSON). */
  monitorConnect: Client<typeof MonitorService>;
  close(): Promise<void>;
}

/**
 * Starts the monitor on 127.0.0.1 with free ports, no drain delay, and config only from
 * `overrides` (no file, no environment), in memory unless `overrides.database.store_backend` says
 * `database`; `parts` replace built parts (a test double of a StatusSource).
 */
export async function startMonitorApp(
  overrides: MonitorConfigInput = {},
  logger: Logger = silentLogger(),
  parts: MonitorAppParts = {},
): Promise<RunningMonitorApp> {
  const config = loadMonitorConfig(
    {
      ...overrides,
      // In-process monitors keep their state in memory unless a test asks for the database (the
      // process and e2e tests run the default, `database`).
      database: { store_backend: 'memory', ...overrides.database },
      server: { host: '127.0.0.1', grpc_port: 0, http_port: 0, shutdown_drain_ms: 0, ...overrides.server },
    },
    { env: {}, file: null },
  );
  const app = await createMonitorApp(config, logger, parts);
  const ports = await app.start();
  const grpcAddress = `127.0.0.1:${ports.grpc}`;
  const baseUrl = `http://127.0.0.1:${ports.http}`;
  const monitorGrpc = grpcClient(MonitorService, grpcAddress);
  const monitorConnect = createClient(
    MonitorService,
    createConnectTransport({ baseUrl, httpVersion: '1.1', useBinaryFormat: false }),
  );
  return {
    app,
    grpcAddress,
    baseUrl,
    monitorGrpc,
    monitorConnect,
    async close() {
      monitorGrpc.close();
      await app.stop();
    },
  };
}

/**
 * Starts an in-process monitor that keeps its state in the PostgreSQL database at `url` (a test
 * database: test/support/database.ts), as a replica: call it twice with one URL for two monitors
 * sharing their state, job leases included. `overrides.database` may add keys (pool_max).
 */
export function startMonitorOnDatabase(
  url: string,
  overrides: MonitorConfigInput = {},
  logger: Logger = silentLogger(),
  parts: MonitorAppParts = {},
): Promise<RunningMonitorApp> {
  return startMonitorApp(
    { ...overrides, database: { ...overrides.database, url, store_backend: 'database' } },
    logger,
    parts,
  );
}
