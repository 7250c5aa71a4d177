/**
 * Config records the monitoring library consumes, with the spec's snake_case field names, so the
 * schema built by the config loader is structurally compatible. Only the fields the library reads are
 * declared; the loader may carry more.
 */

/** Label set of one sample: label name to value. */
export type Labels = Readonly<Record<string, string>>;

/** The backend `metric_type` argument. */
export type MetricType = 'counter' | 'gauge' | 'histogram';

// `MetricsConfig`, `HealthConfig` and `TracingConfig` are the schemas' output: see ./config.

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
