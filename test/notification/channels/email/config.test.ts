/**
 * The mailer config keys, through the service's loader (file, environment, code).
 */
import { ConfigError } from '../../../../shared/config';
import { loadNotificationConfig } from '../../../../services/notification/config';

function issuesOf(env: Record<string, string>): string[] {
  try {
    loadNotificationConfig(undefined, { file: null, env });
  } catch (err) {
    if (err instanceof ConfigError) return err.issues.map((i) => `${i.key}: ${i.message}`);
    throw err;
  }
  return [];
}

const smtpEnv = {
  SVC_NOTIFICATION__MAILER__BACKENDS__0__NAME: 'relay',
  SVC_NOTIFICATION__MAILER__BACKENDS__0__DRIVER: 'smtp',
  SVC_NOTIFICATION__MAILER__BACKENDS__0__FROM_EMAIL: 'noreply@example.com',
  SVC_NOTIFICATION__MAILER__BACKENDS__0__SMTP__HOST: 'mx.example.com',
};

describe('mailer config', () => {
  it('reads the smtp TLS and timeout keys from the environment', () => {
    const config = loadNotificationConfig(undefined, {
      file: null,
      env: {
        ...smtpEnv,
        SVC_NOTIFICATION__MAILER__BACKENDS__0__SMTP__REQUIRE_TLS: 'true',
        SVC_NOTIFICATION__MAILER__BACKENDS__0__SMTP__TLS_REJECT_UNAUTHORIZED: 'false',
        SVC_NOTIFICATION__MAILER__BACKENDS__0__SMTP__GREETING_TIMEOUT_MS: '2500',
        SVC_NOTIFICATION__MAILER__MAX_ATTACHMENT_BYTES: '1000',
      },
    });

    expect(config.mailer.backends[0]?.smtp).toMatchObject({
      require_tls: true,
      tls_reject_unauthorized: false,
      greeting_timeout_ms: 2500,
      connection_timeout_ms: 10000,
    });
    expect(config.mailer.max_attachment_bytes).toBe(1000);
    expect(config.mailer.max_message_bytes).toBe(25 * 1024 * 1024);
  });

  it('defaults the http_api timeout and connection cap', () => {
    const config = loadNotificationConfig(
      {
        mailer: {
          backends: [
            {
              name: 'api',
              driver: 'http_api',
              from_email: 'a@example.com',
              http_api: { base_url: 'https://api.example.com', api_key: 'k' },
            },
          ],
        },
      },
      { file: null, env: {} },
    );

    expect(config.mailer.backends[0]?.http_api).toEqual({
      base_url: 'https://api.example.com',
      api_key: 'k',
      timeout_ms: 10000,
      max_connections: 10,
    });
  });

  it('reads a backend from_name and refuses one with a line break, naming the key', () => {
    const config = loadNotificationConfig(undefined, {
      file: null,
      env: { ...smtpEnv, SVC_NOTIFICATION__MAILER__BACKENDS__0__FROM_NAME: 'Acme Billing' },
    });
    expect(config.mailer.backends[0]?.from_name).toBe('Acme Billing');
    expect(
      issuesOf({
        ...smtpEnv,
        SVC_NOTIFICATION__MAILER__BACKENDS__0__FROM_NAME: 'Acme\r\nBcc: x@evil.example',
      }),
    ).toEqual([
      'notification.mailer.backends[0].from_name: must be one line without control characters, got "Acme\\r\\nBcc: x@evil.example"',
    ]);
  });

  it('refuses a password without a user', () => {
    expect(issuesOf({ ...smtpEnv, SVC_NOTIFICATION__MAILER__BACKENDS__0__SMTP__PASSWORD: 'pw' })).toEqual([
      'notification.mailer.backends[0].smtp.user: is required when password is set',
    ]);
  });

  it('refuses an attachment limit above the message limit', () => {
    expect(
      issuesOf({
        SVC_NOTIFICATION__MAILER__MAX_ATTACHMENT_BYTES: '2000',
        SVC_NOTIFICATION__MAILER__MAX_MESSAGE_BYTES: '1000',
      }),
    ).toEqual(['notification.mailer.max_attachment_bytes: must not be larger than max_message_bytes']);
  });

  it('refuses a zero timeout', () => {
    expect(
      issuesOf({ ...smtpEnv, SVC_NOTIFICATION__MAILER__BACKENDS__0__SMTP__SOCKET_TIMEOUT_MS: '0' }),
    ).toEqual(['notification.mailer.backends[0].smtp.socket_timeout_ms: expected a positive integer, got 0']);
  });
});
