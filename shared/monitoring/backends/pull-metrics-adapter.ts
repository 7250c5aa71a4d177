/**
 * The pull-metrics adapter: counters, gauges and histograms by name into a prom-client registry,
 * label keys fixed at first use, bounded by `metrics.max_metric_names` and
 * `metrics.max_series_per_metric`, and `metricsApp`, the handler serving the registry. The backend
 * (./pull-metrics.ts) adds its server, the Pushgateway push and the samples table.
 */
import type * as Prom from 'prom-client';
import { type Logger, silentLogger } from '../../logging/logger';
import { InvalidMetricError, MetricLimitExceededError, MetricsClientUnavailableError } from '../errors';
import { sendMethodNotAllowed } from '../http/auth';
import { type RequestHandler, sendMetrics } from '../http/metrics-middleware';
import { counterExportName, sanitizeLabelName, sanitizeMetricName } from '../metric-names';
import { loadPromClient, type PromClientLoader, type PromClientModule } from '../prom-loader';
import type { Labels, MetricType } from '../types';
import { cutText } from '../../text/cut';

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
