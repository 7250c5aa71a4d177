/**
 * What every service process exposes about itself, from the monitoring library: `/health` with its
 * probes (`/health/live`, `/health/ready`, `/health/startup`), `/metrics` (process, RPC and
 * library metrics of the process registry), and the gRPC health status, which follows readiness.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Registry } from 'prom-client';
import {
  collectProcessMetrics,
  HealthCheckCategory,
  HealthChecker,
  HealthCheckProvider,
  loadPromClient,
  MetricsMiddleware,
  watchReadiness,
  type ReadinessWatch,
} from '../monitoring';
import type { RpcServer } from '../rpc/server';
import type { Logger } from '../logging/logger';

/** The `health` settings a service exposes (the monitor's HealthConfig shape). */
export interface ServiceHealthSettings {
  path: string;
  include_details: boolean;
  /** Default per-check timeout, seconds. */
  timeout: number;
  /** When non-empty, only these checks run. */
  checks: readonly string[];
  auth_token?: string | undefined;
}

export const DEFAULT_HEALTH_SETTINGS: ServiceHealthSettings = {
  path: '/health',
  include_details: true,
  timeout: 5,
  checks: [],
};

export interface ServiceObservabilityOptions {
  server: RpcServer;
  registry: Registry;
  logger: Logger;
  health?: ServiceHealthSettings;
  /** Guards `/metrics` with a bearer token when set. */
  metricsAuthToken?: string | undefined;
  /** How often readiness is re-evaluated for the gRPC health status. */
  readinessIntervalMs?: number;
}

export class ServiceObservability {
  /** Register service checks here (`notifications.inbox`, ...). */
  readonly checker: HealthChecker;
  private started = false;
  private watch: ReadinessWatch | undefined;

  constructor(private readonly opts: ServiceObservabilityOptions) {
    const health = opts.health ?? DEFAULT_HEALTH_SETTINGS;
    const prom = loadPromClient();
    if (prom) collectProcessMetrics(prom, opts.registry);
    this.checker = new HealthChecker({
      defaultTimeout: health.timeout,
      only: [...health.checks],
      logger: opts.logger.child({ component: 'health' }),
    });
    // Built-in checks of every process. Liveness: answering at all means the event loop turns.
    this.checker.add('process.alive', () => true, null, HealthCheckCategory.LIVENESS);
    this.checker.add('process.started', () => this.started, null, HealthCheckCategory.STARTUP);
    // Readiness fails as soon as shutdown begins, so balancers stop sending traffic.
    this.checker.add(
      'server.accepting',
      () => !opts.server.isShuttingDown,
      null,
      HealthCheckCategory.READINESS,
    );

    const provider = HealthCheckProvider.fromConfig({ ...health, checks: [...health.checks] }, this.checker, {
      logger: opts.logger,
    });
    const metrics = new MetricsMiddleware({ registry: opts.registry, auth_token: opts.metricsAuthToken });
    const base = provider.path === '/' ? '' : provider.path;
    const healthPaths = [provider.path, `${base}/live`, `${base}/ready`, `${base}/startup`];
    opts.server.routes.add(
      ...healthPaths.map((path) => ({
        methods: ['GET', 'HEAD'],
        path,
        handler: (req: IncomingMessage, res: ServerResponse) => provider.handle(req, res),
      })),
      {
        methods: ['GET', 'HEAD'],
        path: metrics.path,
        handler: (req: IncomingMessage, res: ServerResponse) => metrics.handle(req, res),
      },
    );
  }

  /** Marks start-up complete and lets readiness drive the gRPC health status. */
  async start(): Promise<void> {
    this.started = true;
    const { server } = this.opts;
    this.watch = watchReadiness(this.checker, this.opts.readinessIntervalMs ?? 5000, (serving) =>
      server.health.setServing(serving && !server.isShuttingDown),
    );
    await this.watch.poll();
  }

  stop(): void {
    this.watch?.stop();
  }
}
