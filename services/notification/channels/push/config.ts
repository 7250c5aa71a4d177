/**
 * The push channel's config schemas (`push_backends` entries): one definition beside the drivers that
 * read them; the service config (../../config.ts) composes them.
 */
import { backendList } from '../backend-list';
import { readFileSync } from 'node:fs';
import { z } from 'zod';

import { httpUrl, itemName, nonEmptyString, positiveInt } from '../../../../shared/config';
import { primaryFlag } from '../backend-list';

const PEM_PRIVATE_KEY =
  /-----BEGIN (?:EC |RSA |ENCRYPTED )?PRIVATE KEY-----[\s\S]+-----END (?:EC |RSA |ENCRYPTED )?PRIVATE KEY-----/;

const pemPrivateKey = () =>
  z.string().regex(PEM_PRIVATE_KEY, { error: 'expected a PEM private key (-----BEGIN PRIVATE KEY-----)' });

/** The fields of a Google service-account key file the driver uses (others are ignored). */
export const ServiceAccountSchema = z.object({
  client_email: nonEmptyString(),
  /** Secret: the PKCS#8 PEM of the RSA signing key. */
  private_key: pemPrivateKey(),
  token_uri: httpUrl().default('https://oauth2.googleapis.com/token'),
});

/** The HTTP/2 settings both push drivers share. */
const http2Fields = {
  /** Streams open at once on the backend's one HTTP/2 session; more wait for a free one. */
  max_concurrent_streams: positiveInt(1000).default(100),
  /** One request (connect included) is given up after this long (retryable). */
  timeout_ms: positiveInt().default(10000),
};

/**
 * Driver settings of `push_driver_a` (Firebase Cloud Messaging). Exactly one of: `service_account`
 * or `service_account_file` (HTTP v1 with OAuth2 access tokens, `project_id` required), or
 * `server_key` (the legacy `/fcm/send` protocol).
 */
export const PushDriverAConfigSchema = z
  .strictObject({
    project_id: nonEmptyString().optional(),
    /** Secret (its private_key): the service account, as the fields of its key file. */
    service_account: ServiceAccountSchema.optional(),
    /** A path to a service-account key file (JSON), read once at startup. */
    service_account_file: nonEmptyString().optional(),
    /** Secret: legacy server key; with it the legacy protocol is spoken. */
    server_key: nonEmptyString().optional(),
    base_url: httpUrl().default('https://fcm.googleapis.com'),
    ...http2Fields,
  })
  .superRefine((c, ctx) => {
    const v1 = [c.service_account, c.service_account_file].filter((x) => x !== undefined).length;
    const legacy = c.server_key !== undefined ? 1 : 0;
    if (v1 + legacy !== 1) {
      ctx.addIssue({
        code: 'custom',
        path: ['service_account'],
        message: 'exactly one of service_account, service_account_file or server_key is required',
      });
    }
    if (v1 === 1 && c.project_id === undefined) {
      ctx.addIssue({ code: 'custom', path: ['project_id'], message: 'required with a service account' });
    }
  });

/**
 * Driver settings of `push_driver_b` (APNs): HTTP/2 with ES256 provider tokens (JWT signed with
 * `private_key`, header `kid` = key_id, claim `iss` = team_id), sending to `topic` (the app's bundle id).
 */
export const PushDriverBConfigSchema = z.strictObject({
  key_id: nonEmptyString(),
  team_id: nonEmptyString(),
  /** Secret: the PKCS#8 PEM of the P-256 signing key. */
  private_key: pemPrivateKey(),
  topic: nonEmptyString(),
  base_url: httpUrl().default('https://api.push.apple.com'),
  /** `apns-push-type` of every notification sent. */
  push_type: z.enum(['alert', 'background']).default('alert'),
  ...http2Fields,
});

/** One named push backend (`NamedPushConfig`). */
export const NamedPushConfigSchema = z.strictObject({
  name: itemName(),
  primary: primaryFlag,
  driver: z.enum(['push_driver_a', 'push_driver_b']),
  push_driver_a: PushDriverAConfigSchema.optional(),
  push_driver_b: PushDriverBConfigSchema.optional(),
});

/** Validated FCM settings. */
export type PushDriverAConfig = z.infer<typeof PushDriverAConfigSchema>;
/** Validated APNs settings. */
export type PushDriverBConfig = z.infer<typeof PushDriverBConfigSchema>;
/** One named push backend. */
export type NamedPushConfig = z.infer<typeof NamedPushConfigSchema>;
/** A service account as the FCM driver uses it. */
export type ServiceAccount = z.infer<typeof ServiceAccountSchema>;

/**
 * The service account of an FCM v1 config: the inline one, or the key file read and validated now
 * (a missing or malformed file is a startup error naming the path, never its content).
 */
export function resolveServiceAccount(config: PushDriverAConfig): ServiceAccount | undefined {
  if (config.service_account) return config.service_account;
  if (config.service_account_file === undefined) return undefined;
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(config.service_account_file, 'utf8'));
  } catch {
    throw new Error(
      `push_driver_a.service_account_file: cannot read JSON from ${config.service_account_file}`,
    );
  }
  const parsed = ServiceAccountSchema.safeParse(raw);
  if (!parsed.success) {
    const fields = parsed.error.issues.map((i) => i.path.join('.')).join(', ');
    throw new Error(`push_driver_a.service_account_file: invalid key file (${fields})`);
  }
  return parsed.data;
}

/** The `push_backends` list: unique names, at most one primary, each with its driver's settings. */
export const PushBackendsSchema = backendList(NamedPushConfigSchema, 'push');
