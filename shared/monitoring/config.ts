/**
 * The config schemas of the monitoring library: `metrics`, `health` and `tracing`. Each service's
 * config includes the sections it uses, so the keys, their defaults and their checks have one home.
 * The library's record types (`MetricsConfig`, `HealthConfig`, `TracingConfig` in ./types) are these
 * schemas' output.
 */
import { z } from 'zod';

import {
  bool,
  duration,
  fraction,
  httpUrl,
  nonEmptyString,
  positiveInt,
  port,
  positiveNumber,
  stringList,
} from '../config/fields';
import { DEFAULT_BUCKETS } from './instruments';

/**
 * `MetricsConfig`: the service's own metrics and its `/metrics` endpoint. The spec's
 * `collection_interval` is left out on purpose: prom-client computes process metrics when
 * `/metrics` is scraped, so there is no collection to schedule, and a key that does nothing is not
 * offered (push intervals are the backends' own `push_interval` / `export_interval`).
 */
export function metricsConfigSchema() {
  return z
    .strictObject({
      /** false: `/metrics` is not served and no request metrics are recorded. */
      enabled: bool().default(true),
      /** Prepended to every metric name the service exports (see `makeMetricName`). */
      prefix: z
        .string()
        .regex(/^([a-zA-Z_:][a-zA-Z0-9_:]*)?$/, {
          error: 'expected a Prometheus name prefix (letters, digits, _ and :)',
        })
        .default(''),
      /** Constant labels added to every metric the service exports. */
      default_labels: z
        .record(
          z.string().regex(/^[a-zA-Z_][a-zA-Z0-9_]*$/, {
            error: 'expected a Prometheus label name (letters, digits and _)',
          }),
          z.string(),
        )
        .default(() => ({})),
      /** Default bounds of duration histograms, seconds, increasing. */
      histogram_buckets: z
        .array(z.number({ error: 'expected a number' }))
        .min(1)
        .refine((b) => b.every((v, i) => i === 0 || v > b[i - 1]!), {
          error: 'expected bucket bounds in increasing order',
        })
        .default(() => [...DEFAULT_BUCKETS]),
      /** Secret. When set, `/metrics` requires `Authorization: Bearer <token>`. */
      auth_token: nonEmptyString().optional(),
      /** Distinct metric names a pull-metrics adapter (or the monitor's ingest) accepts; more are refused. */
      max_metric_names: positiveInt().default(1000),
      /** Distinct label-value sets per metric name; more are refused. */
      max_series_per_metric: positiveInt().default(1000),
    })
    .prefault({});
}

/** `HealthConfig`: the `/health` endpoint and its probes. */
export function healthConfigSchema() {
  return z
    .strictObject({
      /** false: `/health` and its probes are not served (the gRPC health service stays). */
      enabled: bool().default(true),
      path: z.string().startsWith('/', { error: 'expected an HTTP path starting with /' }).default('/health'),
      /** Include each check's result (status, message, details) in the answer. */
      include_details: bool().default(true),
      /** Seconds a check may take before it counts as UNHEALTHY. */
      timeout: duration().default(5.0),
      /** When non-empty, only these checks run. */
      checks: stringList().default(() => []),
      /** Secret. When set, `/health` and its probes require `Authorization: Bearer <token>`. */
      auth_token: nonEmptyString().optional(),
    })
    .prefault({});
}

/** Sampler of new traces. */
export const SAMPLER_TYPES = [
  'always_on',
  'always_off',
  'probability',
  'rate_limiting',
  'parent_based',
] as const;
/**
 * Where the OpenTelemetry SDK of a service process sends its spans: `none` (default; the SDK is not
 * started, nothing is patched), `console` (stdout) or `otlp` (OTLP/HTTP, the `opentelemetry` section).
 */
export const TRACE_EXPORTERS = ['none', 'console', 'otlp'] as const;
/** Trace context formats accepted and emitted. */
export const PROPAGATION_FORMATS = ['tracecontext', 'baggage', 'b3'] as const;

/** `TracingConfig`. `serviceName` is the default of `service_name`. */
export function tracingConfigSchema(serviceName: string) {
  return z
    .strictObject({
      enabled: bool().default(true),
      service_name: nonEmptyString().default(serviceName),
      /** Our decision for the spec's unshown values: the OpenTelemetry SDK's samplers. */
      sampler_type: z.enum(SAMPLER_TYPES).default('probability'),
      /** Used by the `probability` sampler. */
      sample_rate: fraction().default(1.0),
      /** Used by the `rate_limiting` sampler. */
      max_traces_per_second: positiveNumber().default(100),
      propagation_formats: z
        .array(z.enum(PROPAGATION_FORMATS))
        .min(1)
        .default(() => ['tracecontext' as const, 'baggage' as const]),
      max_attributes: positiveInt().default(128),
      max_events: positiveInt().default(128),
      max_links: positiveInt().default(128),
      /** See {@link TRACE_EXPORTERS}: the process SDK starts only when `enabled` and this is not `none`. */
      exporter: z.enum(TRACE_EXPORTERS).default('none'),
      /** Finished spans an in-process Tracer keeps for `getAllSpans` (oldest dropped). */
      max_spans: positiveInt().default(10_000),
    })
    .prefault({});
}

const SENTRY_DSN = /^(?:(\w+):)\/\/(?:(\w+)(?::(\w+)?)?@)((?:\[[:.%\w]+\]|[\w.-]+))(?::(\d+))?\/(.+)/;

/**
 * True when `dsn` has the shape of an error-tracking DSN: `http(s)://<public key>@<host>[/path]/<project id>`.
 * The value itself never appears in a message: it is a secret.
 */
export function isValidDsn(dsn: string): boolean {
  // Sentry's own DSN grammar (@sentry/core dsnFromString): a value it refuses is printed in full on
  // stderr by the SDK ("Invalid Sentry Dsn: <dsn>", key included), so refuse it here, where the
  // message never shows the value.
  if (!SENTRY_DSN.test(dsn)) return false;
  let url: URL;
  try {
    url = new URL(dsn);
  } catch {
    return false;
  }
  const project = url.pathname.split('/').filter(Boolean).pop();
  return (url.protocol === 'https:' || url.protocol === 'http:') && url.username !== '' && !!project;
}

/** `ErrorTrackingConfig`: error tracking through Sentry's SDK, off while `dsn` is blank. */
export function errorTrackingConfigSchema() {
  return z
    .strictObject({
      /** Secret. Empty or blank: error tracking is off and nothing is sent anywhere. */
      dsn: z
        .string()
        .default('')
        .refine((dsn) => dsn.trim() === '' || isValidDsn(dsn.trim()), {
          error: 'expected a DSN of the form https://<key>@<host>/<project>',
        }),
      /** Tag on captured events; empty means the service's `environment`. */
      environment: z.string().default(''),
      /** Fraction of transactions traced by the error tracker (0.0 to 1.0). */
      traces_sample_rate: fraction().default(0),
      /** Send personal data (IP addresses, user ids) with events. */
      send_default_pii: bool().default(false),
    })
    .prefault({});
}

/** Performance monitor settings (`PerformanceMonitorConfig`). */
export function performanceMonitorConfigSchema() {
  return z
    .strictObject({
      /** Seconds between CPU, memory and event-loop samples. */
      sampling_interval: positiveNumber().default(1.0),
      /** Samples kept per monitoring run; the oldest are dropped beyond it. */
      max_samples: positiveInt().default(3600),
    })
    .prefault({});
}

/** The validated `error_tracking` section. */
export type ErrorTrackingConfig = z.infer<ReturnType<typeof errorTrackingConfigSchema>>;
/** The validated performance monitor settings. */
export type PerformanceMonitorConfig = z.infer<ReturnType<typeof performanceMonitorConfigSchema>>;
/** `OpenTelemetryConfig`: OTLP over HTTP, for the process SDK's span exporter. */
export function openTelemetryConfigSchema() {
  return z
    .strictObject({
      endpoint: httpUrl().default('http://localhost:4318'),
      /** Sent with every export request; values are credentials and are redacted. */
      headers: z.record(z.string(), z.string()).default(() => ({})),
      /** Plain HTTP / no TLS verification. */
      insecure: bool().default(false),
      /** Seconds per export request. */
      timeout: duration().default(10),
      compression: z.enum(['none', 'gzip']).default('none'),
      batch_size: positiveInt().default(512),
      /** Seconds between exports. */
      export_interval: duration().default(5),
    })
    .prefault({});
}

/** The validated `opentelemetry` section. */
export type OpenTelemetrySectionConfig = z.infer<ReturnType<typeof openTelemetryConfigSchema>>;

/** The validated `metrics` section. */
export type MetricsConfig = z.infer<ReturnType<typeof metricsConfigSchema>>;
/** The validated `health` section. */
export type HealthConfig = z.infer<ReturnType<typeof healthConfigSchema>>;
/** The validated `tracing` section. */
export type TracingConfig = z.infer<ReturnType<typeof tracingConfigSchema>>;

/**
 * `PullMetricsConfig` (Prometheus-style scrape endpoint, optional push gateway): the section of the
 * pull-metrics backend (backends/pull-metrics.ts), which reads it.
 */
export function pullMetricsConfigSchema() {
  return z
    .strictObject({
      /** Port of the backend's own metrics server (the service's HTTP port also serves `/metrics`). */
      port: port().default(8000),
      path: z
        .string()
        .startsWith('/', { error: 'expected an HTTP path starting with /' })
        .default('/metrics'),
      enable_default_metrics: bool().default(true),
      push_gateway_url: httpUrl().optional(),
      /** Seconds between pushes to the gateway. */
      push_interval: duration().default(15),
      /** Persist received samples to `metrics_table`. */
      store_in_db: bool().default(false),
      metrics_table: z
        .string()
        .regex(/^[a-z_][a-z0-9_]{0,62}$/, { error: 'expected a lower-case SQL table name' })
        .default('metric_samples'),
    })
    .prefault({});
}

/** The `metrics` section with every default (what a service without the section gets). */
export const DEFAULT_METRICS_CONFIG: MetricsConfig = metricsConfigSchema().parse(undefined);
/** The `health` section with every default. */
export const DEFAULT_HEALTH_CONFIG: HealthConfig = healthConfigSchema().parse(undefined);
