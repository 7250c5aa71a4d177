/**
 * The pull-based metrics backend (Prometheus via prom-client): the adapter recording by name
 * (./pull-metrics-adapter.ts), its own metrics HTTP server (./pull-metrics-server.ts; port 8000 by
 * default, a taken port logs a warning and start-up continues), an optional Pushgateway push every
 * `push_interval` seconds (./push-gateway.ts) and optional persistence of samples to `metrics_table`
 * through knex. The table is created by a migration (../migrations), which the composition root
 * runs; the backend only checks that it exists.
 */
import type { Server } from 'node:http';
import type { Knex } from 'knex';
import type * as Prom from 'prom-client';
import { type Logger, silentLogger } from '../../logging/logger';
import { type Clock, systemClock, type TimerHandle, type Timers, systemTimers } from '../../runtime/clock';
import { BackendNotAvailableError, MonitoringConfigError } from '../errors';
import { collectProcessMetrics } from '../exposition';
import type { RequestHandler } from '../http/metrics-middleware';
import { loadPromClient, type PromClientLoader, type PromClientModule } from '../prom-loader';
import type { Labels, MetricType, PullMetricsConfig } from '../types';
import { DummySpan, type MetricsBackend } from './backend';
import { PullMetricsAdapter } from './pull-metrics-adapter';
import { startMetricsServer, stopMetricsServer } from './pull-metrics-server';
import { pushToGateway } from './push-gateway';

export * from './pull-metrics-adapter';
export { type MetricsServerOptions, startMetricsServer, stopMetricsServer } from './pull-metrics-server';
export { type PushGatewayOptions, pushToGateway } from './push-gateway';

/** Default port of the backend's metrics server. */
export const DEFAULT_PULL_METRICS_PORT = 8000;
/** Samples waiting for the database beyond this are dropped, oldest first. */
export const MAX_PENDING_SAMPLES = 10_000;

/** Options of PullMetricsBackend: the config record plus what the process provides. */
export interface PullMetricsBackendOptions extends Partial<PullMetricsConfig> {
  registry?: Prom.Registry;
  loader?: PromClientLoader;
  /** Host the metrics server binds; all interfaces by default. */
  host?: string;
  /** Database for `store_in_db`. */
  db?: Knex;
  /** Pushgateway job name (default `svc`). */
  job_name?: string;
  /** Seconds between writes of pending samples to the database (default 5). */
  sample_flush_interval?: number;
  prefix?: string;
  logger?: Logger;
  timers?: Timers;
  clock?: Clock;
  /** `metrics.max_metric_names` (1000). */
  max_metric_names?: number;
  /** `metrics.max_series_per_metric` (1000). */
  max_series_per_metric?: number;
}

interface PendingSample {
  name: string;
  metric_type: MetricType;
  value: number;
  labels: string;
  recorded_at: Date;
}

/** The pull-metrics backend. */
export class PullMetricsBackend implements MetricsBackend {
  /** The adapter recording into the registry. */
  readonly adapter: PullMetricsAdapter;
  private readonly prom: PromClientModule;
  private readonly options: PullMetricsBackendOptions;
  private readonly logger: Logger;
  private readonly timers: Timers;
  private readonly clock: Clock;
  private server: Server | undefined;
  private pushHandle: TimerHandle | undefined;
  private flushHandle: TimerHandle | undefined;
  private pending: PendingSample[] = [];
  private dropped = 0;

  constructor(options: PullMetricsBackendOptions = {}) {
    const prom = (options.loader ?? loadPromClient)();
    if (!prom) {
      throw new BackendNotAvailableError(
        'the pull-metrics backend needs the Prometheus client library (prom-client)',
      );
    }
    if (options.store_in_db && !options.db) {
      throw new MonitoringConfigError('pull_metrics.store_in_db needs a database');
    }
    this.prom = prom;
    this.options = options;
    this.logger = options.logger ?? silentLogger();
    this.timers = options.timers ?? systemTimers;
    this.clock = options.clock ?? systemClock;
    this.adapter = new PullMetricsAdapter({
      registry: options.registry,
      loader: () => prom,
      prefix: options.prefix,
      logger: this.logger,
      max_metric_names: options.max_metric_names,
      max_series_per_metric: options.max_series_per_metric,
    });
  }

  /** The registry served. */
  get registry(): Prom.Registry {
    return this.adapter.registry!;
  }

  /** The request handler to mount at `/metrics` (container key `pull_metrics_app`). */
  get metricsApp(): RequestHandler {
    return this.adapter.metricsApp;
  }

  /** The port the metrics server listens on, or undefined when it is not running. */
  get port(): number | undefined {
    const address = this.server?.address();
    return address && typeof address === 'object' ? address.port : undefined;
  }

  /** Starts process metrics, the metrics server, the push loop and the database writer. */
  async initialize(): Promise<void> {
    const o = this.options;
    // Checked first: a start that fails for it leaves nothing running.
    if (o.store_in_db) await this.checkTable();
    if (o.enable_default_metrics) collectProcessMetrics(this.prom, this.registry, o.prefix ?? '');
    this.server = await startMetricsServer({
      port: o.port ?? DEFAULT_PULL_METRICS_PORT,
      host: o.host,
      path: o.path ?? '/metrics',
      token: o.auth_token,
      handler: this.metricsApp,
      logger: this.logger,
    });
    if (o.push_gateway_url) {
      const seconds = o.push_interval && o.push_interval > 0 ? o.push_interval : 15;
      this.pushHandle = this.timers.setInterval(() => void this.pushNow(), seconds * 1000);
    }
    if (o.store_in_db) {
      const seconds = o.sample_flush_interval && o.sample_flush_interval > 0 ? o.sample_flush_interval : 5;
      this.flushHandle = this.timers.setInterval(() => void this.flushSamples(), seconds * 1000);
    }
  }

  /** Stops the loops, writes pending samples, closes the server. */
  async shutdown(): Promise<void> {
    if (this.pushHandle !== undefined) this.timers.clearInterval(this.pushHandle);
    if (this.flushHandle !== undefined) this.timers.clearInterval(this.flushHandle);
    this.pushHandle = this.flushHandle = undefined;
    if (this.options.store_in_db) await this.flushSamples();
    const server = this.server;
    this.server = undefined;
    await stopMetricsServer(server);
  }

  /** Records one sample (and queues it for the database when `store_in_db`). */
  recordMetric(name: string, value: number, metricType: MetricType, labels?: Labels): void {
    this.adapter.record(name, value, metricType, labels);
    if (!this.options.store_in_db) return;
    if (this.pending.length >= MAX_PENDING_SAMPLES) {
      this.pending.shift();
      this.dropped++;
    }
    this.pending.push({
      name,
      metric_type: metricType,
      value,
      labels: JSON.stringify(labels ?? {}),
      recorded_at: new Date(this.clock.now()),
    });
  }

  /** Spans are not this backend's business. */
  export(_spans: readonly unknown[]): void {}

  /** A span that records nothing. */
  createSpan(name: string, _parentContext?: unknown): DummySpan {
    return new DummySpan(name);
  }

  /** Pushes the registry to the Pushgateway now (PUT); failures are logged, never thrown. */
  async pushNow(): Promise<boolean> {
    const url = this.options.push_gateway_url;
    if (!url) return false;
    return pushToGateway(this.prom, {
      url,
      registry: this.registry,
      jobName: this.options.job_name ?? 'svc',
      logger: this.logger,
    });
  }

  /** Writes pending samples to `metrics_table`; resolves to how many were written. */
  async flushSamples(): Promise<number> {
    const db = this.options.db;
    if (!db || this.pending.length === 0) return 0;
    const rows = this.pending;
    this.pending = [];
    if (this.dropped > 0) {
      this.logger.warn({ dropped: this.dropped }, 'metric samples dropped: database writes fell behind');
      this.dropped = 0;
    }
    try {
      await db.batchInsert(this.table, rows, 500);
      return rows.length;
    } catch (err) {
      this.logger.warn({ err, samples: rows.length }, 'writing metric samples failed; samples dropped');
      return 0;
    }
  }

  private get table(): string {
    return this.options.metrics_table ?? 'metrics';
  }

  /**
   * The samples table is made by the library's migration (../migrations, `pullMetricsMigrations`),
   * run by the composition root before the backend starts; without it the start fails saying so.
   */
  private async checkTable(): Promise<void> {
    const table = this.table;
    if (!(await this.options.db!.schema.hasTable(table))) {
      throw new MonitoringConfigError(
        `pull_metrics.store_in_db: table ${JSON.stringify(table)} does not exist; ` +
          'run pullMetricsMigrations(metrics_table) (shared/monitoring/migrations) before the backend starts',
      );
    }
  }
}
