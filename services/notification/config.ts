/**
 * The notification service's configuration: `NotificationConfig` of spec/notification-delivery.md
 * (sms_backends, push_backends, mailer, inbox) plus what the running service needs (server, log,
 * database, delivery retries, admin auth). Loaded by the shared loader from the `notification:`
 * section of the application file and `SVC_NOTIFICATION__*` variables.
 */
import { z } from 'zod';

import {
  type LoadConfigOptions,
  bool,
  databaseSectionSchema,
  emailAddress,
  e164,
  environmentSchema,
  httpUrl,
  loadConfig,
  logSectionSchema,
  itemName,
  nonEmptyString,
  nonNegativeInt,
  port,
  positiveInt,
  serverSectionSchema,
} from '../../shared/config';

/** Driver settings of the `sms_gateway` SMS driver. */
export const SmsGatewayDriverConfigSchema = z.strictObject({
  account_sid: nonEmptyString(),
  /** Secret. */
  auth_token: nonEmptyString(),
  /** Sender number in international (E.164) format, e.g. +15551234567. */
  from_number: e164(),
  /** Provider API root; tests and staging point it at a local server. */
  base_url: httpUrl().default('https://api.sms-gateway.example.com'),
});

/** Driver settings of `push_driver_a` (server-key authenticated HTTP push API). */
export const PushDriverAConfigSchema = z.strictObject({
  /** Secret. */
  server_key: nonEmptyString(),
  base_url: httpUrl().default('https://push-a.example.com'),
});

const PEM_PRIVATE_KEY =
  /-----BEGIN (?:EC |ENCRYPTED )?PRIVATE KEY-----[\s\S]+-----END (?:EC |ENCRYPTED )?PRIVATE KEY-----/;

/**
 * Driver settings of `push_driver_b`. The spec does not show them; our decision: an APNs-style
 * HTTP/2 provider authenticated with ES256 provider tokens (JWT signed with `private_key`, header
 * `kid` = key_id, claim `iss` = team_id), sending to `topic` (the app's bundle id).
 */
export const PushDriverBConfigSchema = z.strictObject({
  key_id: nonEmptyString(),
  team_id: nonEmptyString(),
  /** Secret: the PKCS#8 PEM of the P-256 signing key. */
  private_key: z
    .string()
    .regex(PEM_PRIVATE_KEY, { error: 'expected a PEM private key (-----BEGIN PRIVATE KEY-----)' }),
  topic: nonEmptyString(),
  base_url: httpUrl().default('https://push-b.example.com'),
});

/** SMTP mailer settings (nodemailer transport). */
export const SMTPDriverConfigSchema = z.strictObject({
  host: nonEmptyString(),
  port: port().default(587),
  /** TLS from the first byte (port 465); false means STARTTLS when the server offers it. */
  secure: bool().default(false),
  user: z.string().default(''),
  /** Secret. */
  password: z.string().default(''),
  /** Reuse connections (nodemailer pool). */
  pool: bool().default(true),
  max_connections: positiveInt().default(5),
});

/** `http_api` mailer settings: a REST e-mail API authenticated with a bearer API key. */
export const HttpApiDriverConfigSchema = z.strictObject({
  base_url: httpUrl(),
  /** Secret. */
  api_key: nonEmptyString(),
});

const primary = bool().default(false);

/** One named SMS backend (`NamedSMSConfig`). */
export const NamedSMSConfigSchema = z.strictObject({
  name: itemName(),
  primary,
  driver: z.literal('sms_gateway').default('sms_gateway'),
  sms_gateway: SmsGatewayDriverConfigSchema.optional(),
});

/** One named push backend (`NamedPushConfig`). */
export const NamedPushConfigSchema = z.strictObject({
  name: itemName(),
  primary,
  driver: z.enum(['push_driver_a', 'push_driver_b']),
  push_driver_a: PushDriverAConfigSchema.optional(),
  push_driver_b: PushDriverBConfigSchema.optional(),
});

/** One named mailer backend (`NamedMailerConfig`). */
export const NamedMailerConfigSchema = z.strictObject({
  name: itemName(),
  primary,
  driver: z.enum(['smtp', 'http_api']),
  from_email: emailAddress(),
  smtp: SMTPDriverConfigSchema.optional(),
  http_api: HttpApiDriverConfigSchema.optional(),
});

interface NamedBackend {
  name: string;
  primary: boolean;
  driver: string;
}

/**
 * Rules every backend list follows: names are unique; at most one backend is `primary` (when none
 * is, the first one is the primary: see {@link primaryBackend}); the section named after the chosen
 * driver is present.
 */
function backendList<S extends z.ZodType<NamedBackend>>(element: S, what: string) {
  return z
    .array(element, { error: `expected a list of ${what} backends` })
    .default(() => [])
    .superRefine((list, ctx) => {
      const seen = new Map<string, number>();
      let primaryAt: number | undefined;
      list.forEach((backend, i) => {
        const earlier = seen.get(backend.name);
        if (earlier !== undefined) {
          ctx.addIssue({
            code: 'custom',
            path: [i, 'name'],
            message: `duplicate ${what} backend name "${backend.name}" (already used by entry [${earlier}])`,
          });
        } else seen.set(backend.name, i);
        if (backend.primary) {
          if (primaryAt !== undefined) {
            ctx.addIssue({
              code: 'custom',
              path: [i, 'primary'],
              message: `only one ${what} backend may be primary; entry [${primaryAt}] is primary already`,
            });
          } else primaryAt = i;
        }
        if ((backend as unknown as Record<string, unknown>)[backend.driver] === undefined) {
          ctx.addIssue({
            code: 'custom',
            path: [i, backend.driver],
            message: `settings are required when driver is "${backend.driver}"`,
          });
        }
      });
    });
}

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
    /** Open watches (WatchInbox and SSE together) of one user per process; beyond: RESOURCE_EXHAUSTED / 429. */
    max_watchers_per_user: positiveInt().default(16),
    /** Open watches (WatchInbox and SSE together) per process; beyond: RESOURCE_EXHAUSTED / 429. */
    max_watchers: positiveInt().default(10000),
  })
  .prefault({});

/** `MailerConfig`: named e-mail backends. */
export const MailerConfigSchema = z
  .strictObject({
    backends: backendList(NamedMailerConfigSchema, 'mailer'),
  })
  .prefault({});

/** Retry policy of the delivery pipeline (exponential backoff with jitter). */
export const DeliveryConfigSchema = z
  .strictObject({
    max_attempts: positiveInt().default(5),
    base_delay_ms: nonNegativeInt().default(500),
    max_delay_ms: nonNegativeInt().default(60000),
  })
  .prefault({})
  .superRefine((d, ctx) => {
    if (d.base_delay_ms > d.max_delay_ms) {
      ctx.addIssue({ code: 'custom', path: ['max_delay_ms'], message: 'must be at least base_delay_ms' });
    }
  });

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
    demo_user: nonEmptyString().default('demo'),
  })
  .prefault({});

/** The whole notification service configuration (`NotificationConfig`). */
export const NotificationConfigSchema = z
  .strictObject({
    /** Defaults to NODE_ENV, else `development`. `production` requires admin auth. */
    environment: environmentSchema(),
    server: serverSectionSchema({ grpcPort: 50051, httpPort: 8080 }),
    log: logSectionSchema(),
    database: databaseSectionSchema('notification'),
    sms_backends: backendList(NamedSMSConfigSchema, 'SMS'),
    push_backends: backendList(NamedPushConfigSchema, 'push'),
    mailer: MailerConfigSchema,
    inbox: InboxConfigSchema,
    delivery: DeliveryConfigSchema,
    admin: z.strictObject({ auth: AdminAuthConfigSchema }).prefault({}),
  })
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
/** One named SMS backend. */
export type NamedSMSConfig = z.infer<typeof NamedSMSConfigSchema>;
/** One named push backend. */
export type NamedPushConfig = z.infer<typeof NamedPushConfigSchema>;
/** One named mailer backend. */
export type NamedMailerConfig = z.infer<typeof NamedMailerConfigSchema>;
/** The mailer section. */
export type MailerConfig = z.infer<typeof MailerConfigSchema>;
/** The inbox section. */
export type InboxConfig = z.infer<typeof InboxConfigSchema>;
/** Delivery retry policy. */
export type DeliveryConfig = z.infer<typeof DeliveryConfigSchema>;
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

/**
 * The backend that also receives unnamed sends: the one marked `primary`, else the first; undefined
 * for an empty list.
 */
export function primaryBackend<B extends { primary: boolean }>(backends: readonly B[]): B | undefined {
  return backends.find((b) => b.primary) ?? backends[0];
}
