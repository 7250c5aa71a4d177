/**
 * Config records the monitoring library consumes, with the spec's snake_case field names, so the
 * schema built by the config loader is structurally compatible. Only the fields the library reads are
 * declared; the loader may carry more.
 */

/** Label set of one sample: label name to value. */
export type Labels = Readonly<Record<string, string>>;

/** The backend `metric_type` argument. */
export type MetricType = 'counter' | 'gauge' | 'histogram';

/** `MetricsConfig`: names, labels and buckets applied to every metric the collector creates. */
export interface MetricsConfig {
  enabled: boolean;
  /** Prefix for all metric names (`svc` makes `requests` into `svc_requests`). */
  prefix: string;
  /** Constant labels added to all metrics. */
  default_labels: Record<string, string>;
  /** Default histogram buckets (seconds or whatever the metric measures). */
  histogram_buckets: number[];
  /** Seconds between collections of process metrics. */
  collection_interval: number;
}

/** `HealthConfig`: the `/health` endpoint. */
export interface HealthConfig {
  enabled: boolean;
  path: string;
  include_details: boolean;
  /** Seconds allowed per check. */
  timeout: number;
  /** Names of the checks to run. */
  checks: string[];
  /** When set, `/health` and its probes need `Authorization: Bearer <token>`. */
  auth_token?: string | null;
}

/** `PullMetricsConfig`: the pull-based (Prometheus) metrics backend. */
export interface PullMetricsConfig {
  port: number;
  path: string;
  enable_default_metrics: boolean;
  push_gateway_url?: string | null;
  /** Seconds between pushes to the Pushgateway. */
  push_interval: number;
  store_in_db: boolean;
  metrics_table: string;
  auth_token?: string | null;
}

/** `OpenTelemetryConfig`: where and how OTLP exports go. */
export interface OpenTelemetryConfig {
  endpoint?: string | null;
  headers: Record<string, string>;
  insecure: boolean;
  /** Seconds per export request. */
  timeout: number;
  compression: 'none' | 'gzip';
  batch_size: number;
  /** Seconds between metric exports. */
  export_interval: number;
}

/** One exporter request handed to an exporter registry. */
export interface ExporterConfig {
  type: string;
  endpoint?: string | null;
  headers?: Record<string, string>;
  /** Seconds. */
  timeout?: number;
  compression?: 'none' | 'gzip';
}
