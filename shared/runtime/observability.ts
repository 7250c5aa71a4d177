/**
 * What every service process exposes about itself, from the monitoring library: `/health` with its
 * probes (`/health/live`, `/health/ready`, `/health/startup`), `/metrics` (process, RPC, HTTP and
 * library metrics of the process registry), request metrics for every answer of the HTTP port, and
 * the gRPC health status, which follows readiness. The `health` and `metrics` config sections (the
 * library's schemas) decide what is served and how.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Registry } from 'prom-client';
import {
  collectProcessMetrics,
  DEFAULT_HEALTH_CONFIG,
  DEFAULT_METRICS_CONFIG,
  HealthCheckCategory,
  HealthChecker,
  HealthCheckProvider,
  type HealthConfig,
  loadPromClient,
  makeMetricName,
  MetricsCollector,
  type MetricsConfig,
  MetricsMiddleware,
  watchReadiness,
  type ReadinessWatch,
} from '../monitoring';
import type { RpcServer } from '../rpc/server';
import type { Logger } from '../logging/logger';

/** Options of ServiceObservability. */
export interface ServiceObservabilityOptions {
  server: RpcServer;
  registry: Registry;
  logger: Logger;
  /** The `health` section; all defaults when omitted. */
  health?: HealthConfig;
  /** The `metrics` section; all defaults when omitted. */
  metrics?: MetricsConfig;
  /** How often readiness is re-evaluated for the gRPC health status. */
  readinessIntervalMs?: number;
  /**
   * The service's collector (made from `metrics`), shared with the RpcServer so RPC metrics get the
   * same prefix, default labels and buckets; one is made from `metrics` when omitted.
   */
  collector?: MetricsCollector;
}

/** The service's health checker, `/health`, `/metrics` and HTTP request metrics. */
export class ServiceObservability {
  /** Register service checks here (`notifications.inbox`, ...). */
  readonly checker: HealthChecker;
  /**
   * Creates the service's own instruments with the configured prefix, default labels and buckets,
   * on the process registry.
   */
  readonly collector: MetricsCollector;
  private started = false;
  private watch: ReadinessWatch | undefined;

  constructor(private readonly opts: ServiceObservabilityOptions) {
    const health = opts.health ?? DEFAULT_HEALTH_CONFIG;
    const metrics = opts.metrics ?? DEFAULT_METRICS_CONFIG;
    this.collector = opts.collector ?? new MetricsCollector({ registry: opts.registry, config: metrics });
    const prom = loadPromClient();
    if (prom && metrics.enabled) {
      // prom-client prepends the prefix as is; join it the way every other metric's is (`svc_`).
      const prefix = makeMetricName(metrics, '');
      collectProcessMetrics(prom, opts.registry, prefix, metrics.default_labels);
    }
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

    if (health.enabled) {
      const provider = HealthCheckProvider.fromConfig(health, this.checker, { logger: opts.logger });
      const base = provider.path === '/' ? '' : provider.path;
      const healthPaths = [provider.path, `${base}/live`, `${base}/ready`, `${base}/startup`];
      opts.server.routes.add(
        ...healthPaths.map((path) => ({
          methods: ['GET', 'HEAD'],
          path,
          handler: (req: IncomingMessage, res: ServerResponse) => provider.handle(req, res),
        })),
      );
    }
    if (metrics.enabled) {
      const middleware = new MetricsMiddleware({
        collector: this.collector,
        auth_token: metrics.auth_token,
        buckets: metrics.histogram_buckets,
        logger: opts.logger,
      });
      opts.server.routes.add({
        methods: ['GET', 'HEAD'],
        path: middleware.path,
        handler: (req: IncomingMessage, res: ServerResponse) => middleware.handle(req, res),
      });
      // Every answer of the HTTP port, Connect RPCs and 404s included, is counted and timed.
      opts.server.observeHttpRequests((req, res) => middleware.record(req, res));
    }
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

  /** Stops the readiness watch. */
  stop(): void {
    this.watch?.stop();
  }
}
