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
  loadConfig,
  logSectionSchema,
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
import { InboxConfigSchema } from './inbox/config';
import { AdminAuthConfigSchema } from './admin/config';
import { NotifyConfigSchema } from './notify/config';
import { UsersConfigSchema } from './users/config';
import { TemplatesConfigSchema } from './templates/config';

export { InboxConfigSchema, type InboxConfig } from './inbox/config';
export { AdminAuthConfigSchema, type AdminAuthConfig } from './admin/config';

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
    /** Notify: categories, the default locale, one-click unsubscribe (notify/config.ts). */
    notify: NotifyConfigSchema,
    /** The user directory: its store and the bounds of one user (users/config.ts). */
    users: UsersConfigSchema,
    /** Templates: store, sizes, render limits (templates/config.ts). */
    templates: TemplatesConfigSchema,
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
