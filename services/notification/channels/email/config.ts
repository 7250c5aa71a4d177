/**
 * Config of the mailer area (`notification.mailer`): the settings of each driver beside the drivers,
 * the named backends and the message limits. services/notification/config.ts only composes them.
 */
import { createPublicKey } from 'node:crypto';
import { z } from 'zod';

import {
  bool,
  emailAddress,
  httpUrl,
  itemName,
  nonEmptyString,
  port,
  positiveInt,
  parseSectionInCode,
} from '../../../../shared/config';
import { backendList, primaryFlag } from '../backend-list';

/** An ECDSA P-256 public key, base64 DER (SPKI) or PEM; checked at start so a typo stops the process. */
function ecPublicKey() {
  return z.string().refine(
    (value) => {
      try {
        const key = value.includes('-----BEGIN')
          ? createPublicKey(value)
          : createPublicKey({ key: Buffer.from(value.trim(), 'base64'), format: 'der', type: 'spki' });
        return key.asymmetricKeyType === 'ec' && key.asymmetricKeyDetails?.namedCurve === 'prime256v1';
      } catch {
        return false;
      }
    },
    { message: 'expected an ECDSA P-256 public key (base64 DER or PEM)' },
  );
}

/** SMTP mailer settings (nodemailer transport). */
export const SMTPDriverConfigSchema = z
  .strictObject({
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
    /** Refuse to send unless the server upgrades to TLS with STARTTLS (ignored when `secure`). */
    require_tls: bool().default(false),
    /** Verify the server's certificate; false only for test relays with self-signed certificates. */
    tls_reject_unauthorized: bool().default(true),
    /** How long to wait for the TCP (and TLS) connection. */
    connection_timeout_ms: positiveInt().default(10000),
    /** How long to wait for the server's greeting after connecting. */
    greeting_timeout_ms: positiveInt().default(10000),
    /** Longest silence on an open connection (per reply, DATA included). */
    socket_timeout_ms: positiveInt().default(60000),
    /** How long a health probe's result (connect + EHLO) is reused before probing again. */
    health_cache_ms: positiveInt().default(30000),
  })
  .superRefine((s, ctx) => {
    // A password without a user would be silently ignored by nodemailer: say so at start instead.
    if (s.password !== '' && s.user === '') {
      ctx.addIssue({ code: 'custom', path: ['user'], message: 'is required when password is set' });
    }
  });

/** `http_api` mailer settings: a SendGrid v3-compatible e-mail API authenticated with a bearer key. */
export const HttpApiDriverConfigSchema = z.strictObject({
  /** API root; the driver posts to `{base_url}/v3/mail/send`. */
  base_url: httpUrl(),
  /** Secret. */
  api_key: nonEmptyString(),
  /** Longest wait for the API's answer to one request. */
  timeout_ms: positiveInt().default(10000),
  /** Keep-alive connections to the API at most. */
  max_connections: positiveInt().default(10),
  /**
   * The event webhook's verification key (SendGrid: Mail Settings, Signed Event Webhook): an ECDSA
   * P-256 public key, base64 DER as the provider shows it, or PEM. Unset: the backend's
   * `/webhooks/email/{backend}/events` route answers 404.
   */
  event_webhook_public_key: ecPublicKey().optional(),
});

/** One named mailer backend (`NamedMailerConfig`). */
export const NamedMailerConfigSchema = z.strictObject({
  name: itemName(),
  primary: primaryFlag,
  driver: z.enum(['smtp', 'http_api']),
  /**
   * The sender of every message this backend sends: stamped at send time, so an email that fails over
   * to this backend leaves with this address (delivery.routing.email).
   */
  from_email: emailAddress(),
  /**
   * The sender's display name when the request gives none (`from_name` of SendEmail wins); one line,
   * at most 256 characters. Unset: no display name.
   */
  from_name: z
    .string()
    .min(1)
    .max(256)
    // eslint-disable-next-line no-control-regex -- refusing control characters is the point
    .regex(/^[^\u0000-\u001f\u007f]*$/, 'must be one line without control characters')
    .optional(),
  smtp: SMTPDriverConfigSchema.optional(),
  http_api: HttpApiDriverConfigSchema.optional(),
});

/** Largest attachment by default: 10 MiB. */
export const DEFAULT_MAX_ATTACHMENT_BYTES = 10 * 1024 * 1024;
/** Largest message by default: 25 MiB. */
export const DEFAULT_MAX_MESSAGE_BYTES = 25 * 1024 * 1024;

/** `MailerConfig`: named e-mail backends and the limits every message is held to. */
export const MailerConfigSchema = z
  .strictObject({
    backends: backendList(NamedMailerConfigSchema, 'mailer'),
    /** Largest attachment content, in bytes (before base64). */
    max_attachment_bytes: positiveInt().default(DEFAULT_MAX_ATTACHMENT_BYTES),
    /** Largest message: subject, headers, bodies and attachment contents together, in bytes. */
    max_message_bytes: positiveInt().default(DEFAULT_MAX_MESSAGE_BYTES),
    /** Most recipients (to + cc + bcc) of one message. */
    max_recipients: positiveInt().default(100),
  })
  .prefault({})
  .superRefine((m, ctx) => {
    if (m.max_attachment_bytes > m.max_message_bytes) {
      ctx.addIssue({
        code: 'custom',
        path: ['max_attachment_bytes'],
        message: 'must not be larger than max_message_bytes',
      });
    }
  });

/** SMTP driver settings. */
export type SMTPDriverConfig = z.infer<typeof SMTPDriverConfigSchema>;
/** http_api driver settings. */
export type HttpApiDriverConfig = z.infer<typeof HttpApiDriverConfigSchema>;
/** One named mailer backend. */
export type NamedMailerConfig = z.infer<typeof NamedMailerConfigSchema>;
/** The mailer section. */
export type MailerConfig = z.infer<typeof MailerConfigSchema>;
/** The mailer section as it may be written (defaults not yet applied). */
export type MailerConfigInput = z.input<typeof MailerConfigSchema>;

/**
 * Parses (and defaults) a mailer section given in code (`MailerModule.configure`); a ConfigError
 * naming each bad key (`notification.mailer.backends[0].http_api: ...`) for an invalid one.
 */
export function parseMailerConfig(input: MailerConfig | MailerConfigInput = {}): MailerConfig {
  return parseSectionInCode(MailerConfigSchema, input, 'notification', ['mailer']);
}
