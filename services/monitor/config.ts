/**
 * The monitor service's configuration: `MonitorConfig` of spec/monitoring.md (metrics, tracing,
 * health, slo, alerts, error_tracking, opentelemetry, pull_metrics) plus what the running service needs
 * (server, log, watched targets, and the `database` it keeps its state in). Each area's section lives beside the area; this file composes them. Loaded by the shared loader from the `monitor:` section
 * of the application file and `SVC_MONITOR__*` variables. The spec's operations are
 * {@link validateForEnvironment} and {@link getBackendConfig}.
 */
import { z } from 'zod';

import {
  type LoadConfigOptions,
  bool,
  databaseSectionSchema,
  environmentSchema,
  loadConfig,
  logSectionSchema,
  nonEmptyString,
  positiveInt,
  requireApiTokensInProduction,
  serverSectionSchema,
  uniqueNames,
} from '../../shared/config';
import {
  errorTrackingConfigSchema,
  healthConfigSchema,
  metricsConfigSchema,
  openTelemetryConfigSchema,
  pullMetricsConfigSchema,
  tracingConfigSchema,
} from '../../shared/monitoring/config';
import { monitorAlertsConfigSchema } from './alerts/config';
import { onCallSchedulesSchema } from './oncall/schedules-config';
import { MONITOR_SCOPES } from './rpc/scopes';
import { SLOConfigSchema } from './slo/config';
import { TargetConfigSchema } from './targets/config';
import { WebConfigSchema } from './web/config';
import { checkEscalation, escalationConfigShape } from './oncall/escalation-config';
import { InboundSmsConsumerConfigSchema } from './oncall/inbound-sms-config';

// Each area's section has its home beside the area; this file composes them.
export { SLOSchema, SLOConfigSchema, type SLO, type SLOConfig } from './slo/config';
export { TargetConfigSchema, type TargetConfig } from './targets/config';
export { WebConfigSchema, type WebConfig } from './web/config';

/**
 * The `metrics`, `health` and `tracing` sections are the monitoring library's schemas (one home,
 * shared with the notification service): the monitor serves its own `/metrics` with `metrics.prefix`
 * and `metrics.default_labels` applied, and `/health` only when `health.enabled`. The monitor adds
 * the bounds of its metrics ingest (services/monitor/ingest/README.md) to the `metrics` section.
 */
export const MetricsConfigSchema = metricsConfigSchema()
  .unwrap()
  .extend({
    /**
     * Series ingested by RecordMetrics or OTLP that are not updated for this many seconds are
     * removed; a name left without series frees its `max_metric_names` slot.
     */
    series_ttl_seconds: positiveInt().default(3600),
    /**
     * Ingested series over all names (a tighter bound than max_metric_names x
     * max_series_per_metric); a new series beyond it is rejected.
     */
    max_series: positiveInt().default(100_000),
    /** Labels one ingested sample may carry (the `service` label not counted); more are rejected. */
    max_labels_per_sample: positiveInt().default(16),
    /** Characters (code points) of one ingested label value (the `service` value included); longer is rejected. */
    max_label_value_length: positiveInt().default(256),
    /** Characters (code points) of an ingested metric's description (its HELP text); longer is rejected. */
    max_description_length: positiveInt().default(1024),
    /**
     * Bytes the ingested series may take on one `/metrics` answer (each series' lines, its label
     * block repeated on each line); a new series beyond it is rejected (`max_ingest_bytes`).
     */
    max_ingest_bytes: positiveInt().default(64 * 1024 * 1024),
  })
  .prefault({});
/** `HealthConfig`. */
export const HealthConfigSchema = healthConfigSchema();
/**
 * `TracingConfig` (the library's keys; tracing itself is built by the monitor's traces area) plus
 * the span store's own bounds (services/monitor/traces/README.md). For the monitor, `max_spans` is
 * the span store's size and `max_attributes`/`max_events`/`max_links` apply to ingested spans.
 */
export const TracingConfigSchema = tracingConfigSchema('monitor')
  .unwrap()
  .extend({
    /** Seconds a stored span is kept before it expires. */
    span_ttl_seconds: positiveInt().default(3600),
    /** Spans stored per trace; more for the same trace are rejected (one trace cannot evict the rest). */
    max_spans_per_trace: positiveInt().default(1000),
    /** Longest string kept in a stored span (names, attribute keys and values), in characters. */
    max_string_length: positiveInt().default(4096),
    /** Most elements kept of a list attribute value (lists inside lists too); the rest are cut and counted. */
    max_list_length: positiveInt().default(128),
    /**
     * Estimated bytes one stored span may hold; attributes, events and links that do not fit are
     * dropped and counted (see services/monitor/traces/README.md).
     */
    max_span_bytes: positiveInt()
      .min(1024, { error: 'at least 1024' })
      .default(256 * 1024),
    /** Estimated bytes of all stored spans; the oldest are evicted to make room. */
    max_store_bytes: positiveInt().default(64 * 1024 * 1024),
    /** Stored spans waiting to be forwarded over OTLP (backend_type opentelemetry); more are dropped. */
    forward_queue_size: positiveInt().default(2048),
  })
  .superRefine((t, ctx) => {
    if (t.max_span_bytes > t.max_store_bytes) {
      ctx.addIssue({
        code: 'custom',
        path: ['max_span_bytes'],
        message: `at most max_store_bytes (${t.max_store_bytes})`,
      });
    }
  })
  .prefault({});
export { SAMPLER_TYPES, PROPAGATION_FORMATS } from '../../shared/monitoring/config';

/**
 * The `alerts` section (the monitoring library's schema plus the monitor's `notification` channel
 * type and the alert RPCs' bounds; see alerts/config.ts and alerts/README.md): business hours,
 * `digest_interval_seconds`, buffer bounds and the `channels` the tier-aware dispatcher routes to.
 */
export const AlertsConfigSchema = monitorAlertsConfigSchema();

/** `ErrorTrackingConfig`: the monitoring library's schema (one home). */
export const ErrorTrackingConfigSchema = errorTrackingConfigSchema();

/** `OpenTelemetryConfig` (OTLP over HTTP): the monitoring library's schema. */
export const OpenTelemetryConfigSchema = openTelemetryConfigSchema();

/** `PullMetricsConfig` (Prometheus-style scrape endpoint, optional push gateway): the monitoring library's schema. */
export const PullMetricsConfigSchema = pullMetricsConfigSchema();

/**
 * Monitoring backends. Our decision for the spec's unshown values: `noop` (default; nothing is
 * exported, the service still serves its own `/metrics`), `memory` (in-process tracer and metrics,
 * for tests), `pull_metrics` and `opentelemetry`.
 */
export const BACKEND_TYPES = ['noop', 'memory', 'pull_metrics', 'opentelemetry'] as const;

/** Where the monitor keeps its state: `database` (default) or `memory`. */
export const MONITOR_STORE_BACKENDS = ['database', 'memory'] as const;

/**
 * The `database` section: the shared connection keys (one home: shared/config) plus the one switch
 * of every monitor store, `store_backend`.
 */
export const MonitorDatabaseConfigSchema = databaseSectionSchema('monitor')
  .unwrap()
  .extend({
    /**
     * `database` (PostgreSQL at `url`, else PGlite in `data_dir`: SLOs registered by RPC, their
     * samples and target state survive a restart, and replicas share them) or `memory` (nothing is
     * opened or kept: tests, throwaway runs).
     */
    store_backend: z.enum(MONITOR_STORE_BACKENDS).default('database'),
  })
  .prefault({});

/** The whole monitor service configuration (`MonitorConfig`). */
export const MonitorConfigSchema = z
  .strictObject({
    /** Defaults to NODE_ENV, else `development`. */
    environment: environmentSchema(),
    enabled: bool().default(true),
    name: nonEmptyString().default('monitor'),
    backend_type: z.enum(BACKEND_TYPES).default('noop'),
    debug: bool().default(false),
    server: serverSectionSchema({ grpcPort: 50052, httpPort: 8081, scopes: MONITOR_SCOPES }),
    log: logSectionSchema(),
    /**
     * The monitor's database (SLOs registered by RPC and their samples, target state, job leases):
     * PostgreSQL at `url`, else the embedded PGlite in `data_dir`; `store_backend: memory` keeps
     * everything in process instead (tests, throwaway runs). See README.md, "The monitor service".
     */
    database: MonitorDatabaseConfigSchema,
    metrics: MetricsConfigSchema,
    tracing: TracingConfigSchema,
    health: HealthConfigSchema,
    slo: SLOConfigSchema,
    alerts: AlertsConfigSchema,
    error_tracking: ErrorTrackingConfigSchema,
    opentelemetry: OpenTelemetryConfigSchema,
    pull_metrics: PullMetricsConfigSchema,
    targets: z
      .array(TargetConfigSchema)
      .default(() => [])
      .superRefine(uniqueNames('target')),
    web: WebConfigSchema,
    /** On call (issue 28): schedules, escalation policies and paging; see services/monitor/oncall/README.md. */
    oncall: z
      .strictObject({
        /** Weekly on-call rotations with overrides (oncall/schedules-config.ts; WhoIsOnCall). */
        schedules: onCallSchedulesSchema(),
        /** Escalation policies and paging (oncall/escalation-config.ts). */
        ...escalationConfigShape(),
        /** `ACK <code>` replies, read from the notification service's inbound SMS stream (oncall/inbound-sms-config.ts). */
        inbound_sms: InboundSmsConsumerConfigSchema,
      })
      .prefault({}),
  })
  .superRefine(requireApiTokensInProduction)
  .superRefine((c, ctx) => checkEscalation(c.oncall, ctx, ['oncall'], c.environment))
  .superRefine((c, ctx) => {
    // A step naming a schedule that is not configured would page nobody: refused at load.
    const names = new Set(c.oncall.schedules.map((s) => s.name));
    c.oncall.escalation_policies.forEach((policy, p) =>
      policy.steps.forEach((step, s) =>
        step.targets.forEach((target, t) => {
          if ('schedule' in target && !names.has(target.schedule))
            ctx.addIssue({
              code: 'custom',
              path: ['oncall', 'escalation_policies', p, 'steps', s, 'targets', t, 'schedule'],
              message: `unknown schedule "${target.schedule}" (configured: ${[...names].join(', ') || 'none'})`,
            });
        }),
      ),
    );
  });

/** Validated monitor config. */
export type MonitorConfig = z.infer<typeof MonitorConfigSchema>;
/** What may be passed in code: any part of the config, as it would be written in the file. */
export type MonitorConfigInput = z.input<typeof MonitorConfigSchema>;
/** Metrics section. */
export type MetricsConfig = z.infer<typeof MetricsConfigSchema>;
/** Tracing section. */
export type TracingConfig = z.infer<typeof TracingConfigSchema>;
/** Health section. */
export type HealthConfig = z.infer<typeof HealthConfigSchema>;
/** Alerts section. */
export type AlertsConfig = z.infer<typeof AlertsConfigSchema>;
/** Error tracking section. */
export type ErrorTrackingConfig = z.infer<typeof ErrorTrackingConfigSchema>;
/** OpenTelemetry section. */
export type OpenTelemetryConfig = z.infer<typeof OpenTelemetryConfigSchema>;
/** Database section (with `store_backend`). */
export type MonitorDatabaseConfig = z.infer<typeof MonitorDatabaseConfigSchema>;
/** Pull-metrics section. */
export type PullMetricsConfig = z.infer<typeof PullMetricsConfigSchema>;

/**
 * Loads the monitor config from defaults, the application file, `SVC_MONITOR__*` and `overrides`
 * (highest). Calling it with nothing gives all defaults (plus file and environment).
 */
export function loadMonitorConfig(
  overrides?: Partial<MonitorConfigInput>,
  opts: Pick<LoadConfigOptions<MonitorConfig>, 'env' | 'file'> = {},
): Readonly<MonitorConfig> {
  return loadConfig({ ...opts, section: 'monitor', schema: MonitorConfigSchema, overrides });
}

/**
 * Config issues that are legal but unwise for an environment (`validate_for_environment`): the
 * service logs them as warnings at start. `env` defaults to `config.environment`; the stricter
 * checks apply to `production`.
 */
export function validateForEnvironment(config: MonitorConfig, env: string = config.environment): string[] {
  if (env !== 'production') return [];
  const issues: string[] = [];
  if (config.debug) issues.push('debug is on in production: set monitor.debug to false');
  if (config.tracing.enabled) {
    const samplesAll =
      config.tracing.sampler_type === 'always_on' ||
      (config.tracing.sampler_type === 'probability' && config.tracing.sample_rate >= 1.0);
    if (samplesAll) {
      issues.push(
        'tracing samples every request (sample_rate 1.0) in production: lower monitor.tracing.sample_rate',
      );
    }
  }
  if (config.backend_type === 'opentelemetry' && config.opentelemetry.insecure) {
    issues.push('opentelemetry.insecure is true in production: exports travel without TLS');
  }
  if (config.health.enabled && !config.health.auth_token) {
    issues.push('health endpoint has no auth_token in production: set monitor.health.auth_token');
  }
  if (config.metrics.enabled && !config.metrics.auth_token) {
    issues.push('metrics endpoint has no auth_token in production: set monitor.metrics.auth_token');
  }
  if (config.error_tracking.dsn.trim() === '') {
    issues.push('error tracking has no dsn in production: exceptions are only logged locally');
  } else if (config.error_tracking.send_default_pii) {
    issues.push('error_tracking.send_default_pii is true in production: personal data leaves the service');
  }
  return issues;
}

/**
 * The selected backend's section (`get_backend_config`): `opentelemetry` or `pull_metrics`; null for
 * the `memory` and `noop` backends, which have no settings.
 */
export function getBackendConfig(config: MonitorConfig): OpenTelemetryConfig | PullMetricsConfig | null {
  switch (config.backend_type) {
    case 'opentelemetry':
      return config.opentelemetry;
    case 'pull_metrics':
      return config.pull_metrics;
    default:
      return null;
  }
}

/** `MetricsConfig.make_metric_name`; its one home is the monitoring library. */
export { makeMetricName } from '../../shared/monitoring/metric-names';
