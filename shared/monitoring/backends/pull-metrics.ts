/**
 * The pull-based metrics backend (Prometheus via prom-client): an adapter with counter/gauge/
 * histogram by name, `metricsApp` to mount at `/metrics`, its own metrics HTTP server (port 8000 by
 * default; a taken port logs a warning and start-up continues), an optional Pushgateway push every
 * `push_interval` seconds and optional persistence of samples to `metrics_table` through knex.
 */
import { createServer, type Server } from 'node:http';
import type { Knex } from 'knex';
import type * as Prom from 'prom-client';
import { type Logger, silentLogger } from '../../logging/logger';
import { type Clock, systemClock, type TimerHandle, type Timers, systemTimers } from '../../runtime/clock';
import {
  BackendNotAvailableError,
  InvalidMetricError,
  MetricLimitExceededError,
  MetricsClientUnavailableError,
  MonitoringConfigError,
} from '../errors';
import { collectProcessMetrics } from '../exposition';
import { isAuthorized, pathOf, sendMethodNotAllowed, sendNotFound, sendUnauthorized } from '../http/auth';
import { type RequestHandler, sendMetrics } from '../http/metrics-middleware';
import { counterExportName, sanitizeLabelName, sanitizeMetricName } from '../metric-names';
import { loadPromClient, type PromClientLoader, type PromClientModule } from '../prom-loader';
import type { Labels, MetricType, PullMetricsConfig } from '../types';
import { DummySpan, type MetricsBackend } from './backend';
import { cutText } from '../../text/cut';

/** Default port of the backend's metrics server. */
export const DEFAULT_PULL_METRICS_PORT = 8000;
/** Samples waiting for the database beyond this are dropped, oldest first. */
export const MAX_PENDING_SAMPLES = 10_000;
/** Default of `metrics.max_metric_names`: distinct metric names one adapter accepts. */
export const DEFAULT_MAX_METRIC_NAMES = 1000;
/** Default of `metrics.max_series_per_metric`: distinct label-value sets one metric name accepts. */
export const DEFAULT_MAX_SERIES_PER_METRIC = 1000;
/** Distinct "warned once" keys remembered; beyond it further distinct warnings are suppressed. */
export const MAX_WARNED_KEYS = 1000;

/** Why a sample was refused by the caps (the `reason` label of the rejection counter). */
export type MetricRejectionReason = 'max_metric_names' | 'max_series_per_metric';

interface AdapterMetric {
  type: MetricType;
  prom: Prom.Counter | Prom.Gauge | Prom.Histogram;
  keys: string[];
  keySet: Set<string>;
  /** Label-value sets seen, bounded by maxSeriesPerMetric. */
  series: Set<string>;
}

/** Options of PullMetricsAdapter. */
export interface PullMetricsAdapterOptions {
  registry?: Prom.Registry;
  loader?: PromClientLoader;
  /** Prefix for exported names. */
  prefix?: string;
  /** Histogram buckets. */
  buckets?: readonly number[];
  logger?: Logger;
  /** `metrics.max_metric_names` (1000). */
  max_metric_names?: number;
  /** `metrics.max_series_per_metric` (1000). */
  max_series_per_metric?: number;
}

/**
 * Records by metric name into prom-client. The label keys of a name are fixed at first use; a
 * later call that omits a known key exports "" for it, and an unknown key is dropped (warned once).
 * A new name beyond `max_metric_names`, or a new label-value set beyond `max_series_per_metric`, is
 * refused with MetricLimitExceededError and counted (`rejected`, and the exported counter
 * `pull_metrics_rejected_samples_total{reason}`), so remote input cannot grow the registry without
 * bound. Samples of names and series already known are always accepted.
 */
export class PullMetricsAdapter {
  /** The registry served (undefined without the client library). */
  readonly registry: Prom.Registry | undefined;
  private readonly prom: PromClientModule | undefined;
  private readonly metrics = new Map<string, AdapterMetric>();
  private readonly warned = new Set<string>();
  private readonly prefix: string;
  private readonly buckets: readonly number[] | undefined;
  private readonly logger: Logger;
  private readonly maxMetricNames: number;
  private readonly maxSeriesPerMetric: number;
  private readonly rejections: Record<MetricRejectionReason, number> = {
    max_metric_names: 0,
    max_series_per_metric: 0,
  };
  private rejectionCounter: Prom.Counter | undefined;

  constructor(options: PullMetricsAdapterOptions = {}) {
    this.prom = (options.loader ?? loadPromClient)();
    this.registry = this.prom ? (options.registry ?? new this.prom.Registry()) : undefined;
    this.prefix = options.prefix ?? '';
    this.buckets = options.buckets;
    this.logger = options.logger ?? silentLogger();
    this.maxMetricNames = Math.max(1, options.max_metric_names ?? DEFAULT_MAX_METRIC_NAMES);
    this.maxSeriesPerMetric = Math.max(1, options.max_series_per_metric ?? DEFAULT_MAX_SERIES_PER_METRIC);
  }

  /** Samples refused by the caps so far, by reason. */
  get rejected(): Readonly<Record<MetricRejectionReason, number>> {
    return { ...this.rejections };
  }

  /** Distinct metric names held. */
  get metricNameCount(): number {
    return this.metrics.size;
  }

  /** Adds `value` to the counter `name`. */
  async counter(name: string, value: number, tags?: Labels): Promise<void> {
    this.record(name, value, 'counter', tags);
  }

  /** Sets the gauge `name`. */
  async gauge(name: string, value: number, tags?: Labels): Promise<void> {
    this.record(name, value, 'gauge', tags);
  }

  /** Observes `value` on the histogram `name`. */
  async histogram(name: string, value: number, tags?: Labels): Promise<void> {
    this.record(name, value, 'histogram', tags);
  }

  /** Nothing to flush: prom-client is read at scrape time. */
  async flush(): Promise<void> {}

  /** Records synchronously; the async methods delegate here. */
  record(name: string, value: number, type: MetricType, tags?: Labels): void {
    if (typeof value !== 'number' || !Number.isFinite(value)) {
      throw new InvalidMetricError(`metric ${name}: value must be a finite number`);
    }
    if (type === 'counter' && value < 0)
      throw new InvalidMetricError(`metric ${name}: a counter cannot decrease`);
    if (!this.prom || !this.registry) return;
    const metric = this.metricFor(name, type, tags);
    if (!metric) return;
    const labels = this.labelsFor(name, metric, tags);
    const seriesKey = JSON.stringify(metric.keys.map((k) => labels[k]));
    if (!metric.series.has(seriesKey)) {
      if (metric.series.size >= this.maxSeriesPerMetric) {
        this.reject('max_series_per_metric', name, this.maxSeriesPerMetric);
      }
      metric.series.add(seriesKey);
    }
    if (metric.type === 'counter') (metric.prom as Prom.Counter).inc(labels, value);
    else if (metric.type === 'gauge') (metric.prom as Prom.Gauge).set(labels, value);
    else (metric.prom as Prom.Histogram).observe(labels, value);
  }

  /**
   * A request handler serving the registry (text 0.0.4, or OpenMetrics when asked for), streamed
   * (`sendMetrics`). Throws
   * MetricsClientUnavailableError without the client library.
   */
  get metricsApp(): RequestHandler {
    const registry = this.registry;
    if (!registry) {
      throw new MetricsClientUnavailableError(
        'metrics_app needs the Prometheus client library (prom-client)',
      );
    }
    return (req, res) => {
      if (req.method !== 'GET' && req.method !== 'HEAD') {
        sendMethodNotAllowed(res);
        return;
      }
      // Streamed, as the services' own /metrics: a large registry is never one string.
      void sendMetrics(req, res, registry, this.logger);
    };
  }

  private metricFor(name: string, type: MetricType, tags: Labels | undefined): AdapterMetric | undefined {
    const existing = this.metrics.get(name);
    if (existing) {
      if (existing.type === type) return existing;
      this.warnOnce(
        `type:${name}:${type}`,
        { metric: name, type, existing: existing.type },
        'metric type mismatch; dropped',
      );
      return undefined;
    }
    if (this.metrics.size >= this.maxMetricNames) this.reject('max_metric_names', name, this.maxMetricNames);
    const prom = this.prom!;
    const base = sanitizeMetricName(`${this.prefix}${name}`);
    const exportName = type === 'counter' ? counterExportName(base) : base;
    const keys = tags ? [...new Set(Object.keys(tags).map(sanitizeLabelName))] : [];
    const config = {
      name: exportName,
      help: `${name} (${type})`,
      labelNames: keys,
      registers: [this.registry!],
    };
    let created: AdapterMetric['prom'];
    try {
      if (type === 'counter') created = new prom.Counter(config);
      else if (type === 'gauge') created = new prom.Gauge(config);
      else
        created = new prom.Histogram({ ...config, ...(this.buckets ? { buckets: [...this.buckets] } : {}) });
    } catch (err) {
      throw new InvalidMetricError(`metric ${name}: ${err instanceof Error ? err.message : String(err)}`);
    }
    const metric: AdapterMetric = { type, prom: created, keys, keySet: new Set(keys), series: new Set() };
    this.metrics.set(name, metric);
    return metric;
  }

  private labelsFor(name: string, metric: AdapterMetric, tags: Labels | undefined): Record<string, string> {
    const out: Record<string, string> = {};
    for (const k of metric.keys) out[k] = '';
    if (tags) {
      for (const [rawKey, value] of Object.entries(tags)) {
        const key = sanitizeLabelName(rawKey);
        if (metric.keySet.has(key)) out[key] = String(value);
        else
          this.warnOnce(
            `label:${name}:${key}`,
            { metric: name, label: key },
            'label not known at first use; dropped',
          );
      }
    }
    return out;
  }

  private reject(reason: MetricRejectionReason, name: string, limit: number): never {
    this.rejections[reason]++;
    if (!this.rejectionCounter && this.prom && this.registry) {
      this.rejectionCounter = new this.prom.Counter({
        name: sanitizeMetricName(`${this.prefix}pull_metrics_rejected_samples_total`),
        help: 'Samples refused by metrics.max_metric_names or metrics.max_series_per_metric',
        labelNames: ['reason'],
        registers: [this.registry],
      });
    }
    this.rejectionCounter?.inc({ reason });
    this.warnOnce(`limit:${reason}`, { reason, limit }, 'metric limit reached; samples refused');
    // The name is caller input: cut it so the message stays bounded.
    throw new MetricLimitExceededError(
      `metric ${JSON.stringify(cutText(name, 100))}: ${reason} (${limit}) reached`,
    );
  }

  private warnOnce(key: string, fields: Record<string, unknown>, msg: string): void {
    if (this.warned.has(key)) return;
    // Keys include caller-chosen names and labels: past the bound, one last warning, then silence.
    if (this.warned.size >= MAX_WARNED_KEYS) {
      if (this.warned.size === MAX_WARNED_KEYS) {
        this.warned.add('\u0000suppressed');
        this.logger.warn(
          { limit: MAX_WARNED_KEYS },
          'too many distinct metric warnings; further ones suppressed',
        );
      }
      return;
    }
    this.warned.add(key);
    this.logger.warn(fields, msg);
  }
}

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
  private tableReady = false;

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
    if (o.enable_default_metrics) collectProcessMetrics(this.prom, this.registry, o.prefix ?? '');
    await this.startServer(o.port ?? DEFAULT_PULL_METRICS_PORT);
    if (o.push_gateway_url) {
      const seconds = o.push_interval && o.push_interval > 0 ? o.push_interval : 15;
      this.pushHandle = this.timers.setInterval(() => void this.pushNow(), seconds * 1000);
    }
    if (o.store_in_db) {
      await this.ensureTable();
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
    if (server) {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
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
    const gateway = new this.prom.Pushgateway(url, { timeout: 5000 }, this.registry);
    try {
      await gateway.push({ jobName: this.options.job_name ?? 'svc' });
      return true;
    } catch (err) {
      this.logger.warn({ err }, 'push to Pushgateway failed');
      return false;
    }
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
      await this.ensureTable();
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

  private async ensureTable(): Promise<void> {
    if (this.tableReady) return;
    const db = this.options.db!;
    const table = this.table;
    if (!(await db.schema.hasTable(table))) {
      try {
        await db.schema.createTable(table, (t) => {
          t.bigIncrements('id');
          t.string('name', 255).notNullable();
          t.string('metric_type', 16).notNullable();
          t.double('value').notNullable();
          t.jsonb('labels').notNullable();
          t.timestamp('recorded_at', { useTz: true }).notNullable();
          t.index(['name', 'recorded_at']);
        });
      } catch (err) {
        // Another replica may have created it first.
        if (!(await db.schema.hasTable(table))) throw err;
      }
    }
    this.tableReady = true;
  }

  private async startServer(port: number): Promise<void> {
    const path = this.options.path ?? '/metrics';
    const token = this.options.auth_token;
    const app = this.metricsApp;
    const server = createServer((req, res) => {
      if (pathOf(req) !== path) return sendNotFound(res);
      if (!isAuthorized(req, token)) return sendUnauthorized(res);
      app(req, res);
    });
    await new Promise<void>((resolve, reject) => {
      const onError = (err: NodeJS.ErrnoException): void => {
        server.off('listening', onListening);
        if (err.code === 'EADDRINUSE' || err.code === 'EACCES') {
          this.logger.warn(
            { port, code: err.code },
            'metrics server port unavailable; continuing without it',
          );
          resolve();
        } else {
          reject(err);
        }
      };
      const onListening = (): void => {
        server.off('error', onError);
        this.server = server;
        resolve();
      };
      server.once('error', onError);
      server.once('listening', onListening);
      server.listen(port, this.options.host);
    });
  }
}
