/** The receipt keys of the notification config: defaults, env vars, and a bad public key refused at start. */
import { generateKeyPairSync } from 'node:crypto';
import { ConfigError } from '../../../shared/config';
import { loadNotificationConfig } from '../../../services/notification/config';

function mailerEnv(key: string): Record<string, string> {
  return {
    SVC_NOTIFICATION__MAILER__BACKENDS__0__NAME: 'sendgrid',
    SVC_NOTIFICATION__MAILER__BACKENDS__0__DRIVER: 'http_api',
    SVC_NOTIFICATION__MAILER__BACKENDS__0__FROM_EMAIL: 'a@example.com',
    SVC_NOTIFICATION__MAILER__BACKENDS__0__HTTP_API__BASE_URL: 'https://api.example.com',
    SVC_NOTIFICATION__MAILER__BACKENDS__0__HTTP_API__API_KEY: 'k',
    SVC_NOTIFICATION__MAILER__BACKENDS__0__HTTP_API__EVENT_WEBHOOK_PUBLIC_KEY: key,
  };
}

function issuesOf(env: Record<string, string>): string[] {
  try {
    loadNotificationConfig({}, { file: null, env });
  } catch (err) {
    if (err instanceof ConfigError) return err.issues.map((i) => `${i.key}: ${i.message}`);
    throw err;
  }
  return [];
}

describe('notification.webhooks and event_webhook_public_key', () => {
  it('defaults: no public base URL, 300 s max age, 1 MiB bodies, replay ids kept 7 days (100,000 in memory), inbound SMS kept 72 hours (100,000)', () => {
    const config = loadNotificationConfig({}, { file: null, env: {} });
    expect(config.webhooks).toEqual({
      max_age_seconds: 300,
      max_body_bytes: 1024 * 1024,
      replay_retention_hours: 168,
      replay_memory_max_entries: 100_000,
      inbound_sms_retention_hours: 72,
      inbound_sms_max_messages: 100_000,
      inbound_sms_watch: {
        buffer_size: 256,
        max_watchers: 64,
        max_watchers_per_caller: 8,
        stall_seconds: 30,
      },
    });
  });

  it('inbound SMS keys: at and past their bounds, named in the error', () => {
    const at = loadNotificationConfig(
      { webhooks: { inbound_sms_retention_hours: 24 * 366, inbound_sms_max_messages: 10_000_000 } },
      { file: null, env: {} },
    );
    expect(at.webhooks.inbound_sms_retention_hours).toBe(24 * 366);
    expect(() =>
      loadNotificationConfig(
        { webhooks: { inbound_sms_retention_hours: 24 * 366 + 1 } },
        { file: null, env: {} },
      ),
    ).toThrow(/webhooks\.inbound_sms_retention_hours/);
    expect(() =>
      loadNotificationConfig({ webhooks: { inbound_sms_max_messages: 0 } }, { file: null, env: {} }),
    ).toThrow(/webhooks\.inbound_sms_max_messages/);
  });

  it('reads the keys from the environment', () => {
    const config = loadNotificationConfig(
      {},
      {
        file: null,
        env: {
          SVC_NOTIFICATION__WEBHOOKS__PUBLIC_BASE_URL: 'https://notify.example.com',
          SVC_NOTIFICATION__WEBHOOKS__MAX_AGE_SECONDS: '60',
        },
      },
    );
    expect(config.webhooks).toMatchObject({
      public_base_url: 'https://notify.example.com',
      max_age_seconds: 60,
    });
  });

  it('accepts a P-256 key as base64 DER (as SendGrid shows it) and as PEM', () => {
    const { publicKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
    const der = publicKey.export({ format: 'der', type: 'spki' }).toString('base64');
    const pem = publicKey.export({ format: 'pem', type: 'spki' }).toString();
    expect(issuesOf(mailerEnv(der))).toEqual([]);
    expect(issuesOf(mailerEnv(pem))).toEqual([]);
  });

  it('refuses garbage, an RSA key and another curve, naming the key', () => {
    const rsa = generateKeyPairSync('rsa', { modulusLength: 1024 })
      .publicKey.export({ format: 'der', type: 'spki' })
      .toString('base64');
    const p384 = generateKeyPairSync('ec', { namedCurve: 'secp384r1' })
      .publicKey.export({ format: 'der', type: 'spki' })
      .toString('base64');
    for (const key of ['not a key', rsa, p384]) {
      const issues = issuesOf(mailerEnv(key));
      expect(issues).toHaveLength(1);
      expect(issues[0]).toMatch(
        /^notification\.mailer\.backends\[0\]\.http_api\.event_webhook_public_key: expected an ECDSA P-256 public key/,
      );
    }
  });
});
