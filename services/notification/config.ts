/**
 * The notification service's configuration: `NotificationConfig` of spec/notification-delivery.md
 * (sms_backends, push_backends, mailer, inbox) plus what the running service needs (server, log,
 * database, delivery retries, admin auth). Loaded by the shared loader from the `notification:`
 * section of the application file and `SVC_NOTIFICATION__*` variables.
 */
import { z } from 'zod';

import {
  type LoadConfigOptions,
  databaseSectionSchema,
  environmentSchema,
  httpUrl,
  loadConfig,
  logSectionSchema,
  nonEmptyString,
  duration,
  nonNegativeInt,
  positiveInt,
  requireApiTokensInProduction,
  serverSectionSchema,
} from '../../shared/config';
import {
  errorTrackingConfigSchema,
  healthConfigSchema,
  metricsConfigSchema,
  openTelemetryConfigSchema,
  tracingConfigSchema,
} from '../../shared/monitoring/config';
import { MailerConfigSchema } from './channels/email/config';
import { SmsBackendsSchema } from './channels/sms/config';
import { PushBackendsSchema } from './channels/push/config';

// The named-backend rules and the mailer section have their homes beside the channels; re-exported
// here because callers of the service config (tests, the composition root) look for them here.
export { primaryBackend } from './channels/backend-list';
export {
  MailerConfigSchema,
  NamedMailerConfigSchema,
  SMTPDriverConfigSchema,
  HttpApiDriverConfigSchema,
  type MailerConfig,
  type NamedMailerConfig,
} from './channels/email/config';
export {
  NamedSMSConfigSchema,
  SmsGatewayDriverConfigSchema,
  type NamedSMSConfig,
  type SmsGatewayDriverConfig,
} from './channels/sms/config';
export {
  NamedPushConfigSchema,
  PushDriverAConfigSchema,
  PushDriverBConfigSchema,
  type NamedPushConfig,
} from './channels/push/config';
// Each area's section has its home beside the area; this file composes them.
import { DeliveryConfigSchema } from './delivery/config';
import { MonitorReporterConfigSchema } from './monitor/config';
import { WebhooksConfigSchema } from './delivery/webhooks-config';
import { NOTIFICATION_SCOPES } from './rpc/scopes';

/** `InboxConfig` and the limits of the inbox API. */
export const InboxConfigSchema = z
  .strictObject({
    /** `database` (PostgreSQL / PGlite) or `memory` (tests, throwaway runs). */
    store_backend: z.enum(['database', 'memory']).default('database'),
    /** Messages (and their events) older than this many days are purged. */
    retention_days: positiveInt().default(30),
    /** Largest page getInbox returns; a larger request is capped, not refused. */
    max_page_size: positiveInt().default(50),
    /** How often the retention purge runs (once per interval across replicas). */
    purge_interval_seconds: positiveInt().default(3600),
    /** Rows deleted per purge statement. */
    purge_batch_size: positiveInt().default(1000),
    /** Longest title accepted, in characters. */
    max_title_length: positiveInt().default(200),
    /** Longest body accepted, in characters. */
    max_body_length: positiveInt().default(10000),
    /** Largest metadata object accepted, as UTF-8 JSON bytes. */
    max_metadata_bytes: positiveInt().default(16384),
    /**
     * Events buffered per watcher (WatchInbox or SSE). A reader whose buffer is full catches up from
     * the store; only one that stops reading (watch_stall_seconds) is closed with RESOURCE_EXHAUSTED.
     */
    watch_buffer_size: positiveInt().default(256),
    /** A watcher with events waiting that asks for none for this long is closed (RESOURCE_EXHAUSTED). */
    watch_stall_seconds: positiveInt().default(10),
    /**
     * Open watches of one user per process, per watching party: the user's own sessions (admin SSE)
     * have this many, and each API caller (by token name) as many of its own; beyond: RESOURCE_EXHAUSTED / 429.
     */
    max_watchers_per_user: positiveInt().default(16),
    /** Open watches (WatchInbox and SSE together) per process; beyond: RESOURCE_EXHAUSTED / 429. */
    max_watchers: positiveInt().default(10000),
  })
  .prefault({});

/**
 * Authentication of the admin endpoints (the spec leaves the scheme open; our decision: bearer JWT,
 * HS256 with `jwt_secret` or verified against `jwks_url`). With neither set, outside production, the
 * admin endpoints act as `demo_user`.
 */
export const AdminAuthConfigSchema = z
  .strictObject({
    /** Secret; HMAC key of HS256 tokens. */
    jwt_secret: z.string().min(32, { error: 'expected at least 32 characters' }).optional(),
    jwks_url: httpUrl().optional(),
    issuer: nonEmptyString().optional(),
    audience: nonEmptyString().optional(),
    clock_skew_seconds: nonNegativeInt().default(30),
    /** Longest lifetime (`exp` - `iat`) of an accepted admin JWT: seconds or "24h"; longer ones are refused. */
    max_token_lifetime: duration().default(24 * 3600),
    demo_user: nonEmptyString().default('demo'),
  })
  .prefault({});

/** The whole notification service configuration (`NotificationConfig`). */
export const NotificationConfigSchema = z
  .strictObject({
    /** Defaults to NODE_ENV, else `development`. `production` requires admin auth and API tokens. */
    environment: environmentSchema(),
    server: serverSectionSchema({ grpcPort: 50051, httpPort: 8080, scopes: NOTIFICATION_SCOPES }),
    log: logSectionSchema(),
    database: databaseSectionSchema('notification'),
    /** `/health` and its probes (the monitoring library's HealthConfig). */
    health: healthConfigSchema(),
    /** `/metrics` and the service's own metrics (the monitoring library's MetricsConfig). */
    metrics: metricsConfigSchema(),
    /** Tracing (the monitoring library's TracingConfig); the SDK starts when `exporter` is not `none`. */
    tracing: tracingConfigSchema('notification'),
    /** Where `tracing.exporter: otlp` sends spans (the monitoring library's OpenTelemetryConfig). */
    opentelemetry: openTelemetryConfigSchema(),
    /** Exceptions to an error tracker (the monitoring library's section); off while `dsn` is empty. */
    error_tracking: errorTrackingConfigSchema(),
    sms_backends: SmsBackendsSchema,
    push_backends: PushBackendsSchema,
    mailer: MailerConfigSchema,
    inbox: InboxConfigSchema,
    delivery: DeliveryConfigSchema,
    /** Signed provider receipts (delivery status callbacks, inbound STOP, email events). */
    webhooks: WebhooksConfigSchema,
    admin: z.strictObject({ auth: AdminAuthConfigSchema }).prefault({}),
    /** Reporting to the monitor service (latency samples, SLOs, exceptions); off without `grpc_address`. */
    monitor: MonitorReporterConfigSchema,
  })
  .superRefine(requireApiTokensInProduction)
  .superRefine((c, ctx) => {
    if (c.environment === 'production' && !c.admin.auth.jwt_secret && !c.admin.auth.jwks_url) {
      ctx.addIssue({
        code: 'custom',
        path: ['admin', 'auth', 'jwt_secret'],
        message:
          'in production the admin endpoints need auth: set admin.auth.jwt_secret or admin.auth.jwks_url',
      });
    }
  });

/** Validated notification config. */
export type NotificationConfig = z.infer<typeof NotificationConfigSchema>;
/** What may be passed in code: any part of the config, as it would be written in the file. */
export type NotificationConfigInput = z.input<typeof NotificationConfigSchema>;
/** The inbox section. */
export type InboxConfig = z.infer<typeof InboxConfigSchema>;
/** Admin endpoint authentication. */
export type AdminAuthConfig = z.infer<typeof AdminAuthConfigSchema>;

/**
 * Loads the notification config from defaults, the application file, `SVC_NOTIFICATION__*` and
 * `overrides` (highest). Calling it with nothing gives all defaults (plus file and environment).
 */
export function loadNotificationConfig(
  overrides?: Partial<NotificationConfigInput>,
  opts: Pick<LoadConfigOptions<NotificationConfig>, 'env' | 'file'> = {},
): Readonly<NotificationConfig> {
  return loadConfig({ ...opts, section: 'notification', schema: NotificationConfigSchema, overrides });
}
