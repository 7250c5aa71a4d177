import { REDACTED, redactSecrets } from '../../../shared/config';
import { loadMonitorConfig } from '../../../services/monitor/config';
import { loadNotificationConfig } from '../../../services/notification/config';

const secrets = {
  auth: 'auth-token-value',
  server: 'server-key-value',
  password: 'smtp-password-value',
  apiKey: 'api-key-value',
  dsn: 'https://public@errors.example.com/1',
  token: 'rpc-token-value',
  pem: '-----BEGIN PRIVATE KEY-----\nMIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg\n-----END PRIVATE KEY-----',
  dbPassword: 'db-password-value',
  header: 'Bearer otlp-header-value',
  metrics: 'metrics-token-value',
  webhook: 'T0KEN/webhook-path-secret',
  webhookHeader: 'hdr-secret-4711',
  notificationToken: 'notif-token-0815',
};

describe('redactSecrets', () => {
  const notification = loadNotificationConfig(
    {
      server: { api_tokens: [secrets.token] },
      database: { url: `postgres://svc:${secrets.dbPassword}@db.internal:5432/notification` },
      sms_backends: [
        {
          name: 's',
          sms_gateway: { account_sid: 'AC1', auth_token: secrets.auth, from_number: '+15550001111' },
        },
      ],
      push_backends: [
        { name: 'a', driver: 'push_driver_a', push_driver_a: { server_key: secrets.server } },
        {
          name: 'b',
          driver: 'push_driver_b',
          push_driver_b: { key_id: 'K', team_id: 'T', private_key: secrets.pem, topic: 'app' },
        },
      ],
      mailer: {
        backends: [
          {
            name: 'smtp',
            driver: 'smtp',
            from_email: 'a@example.com',
            smtp: { host: 'mx', user: 'mailer', password: secrets.password },
          },
          {
            name: 'api',
            driver: 'http_api',
            from_email: 'a@example.com',
            http_api: { base_url: 'https://mail.example.com', api_key: secrets.apiKey },
          },
        ],
      },
    },
    { file: null, env: {} },
  );
  const monitor = loadMonitorConfig(
    {
      error_tracking: { dsn: secrets.dsn },
      health: { auth_token: secrets.auth },
      metrics: { auth_token: secrets.metrics },
      opentelemetry: { headers: { authorization: secrets.header } },
      alerts: {
        channels: [
          {
            name: 'pager',
            type: 'webhook',
            webhook: {
              url: `https://hooks.example.com/services/${secrets.webhook}`,
              headers: { authorization: `Bearer ${secrets.webhookHeader}` },
            },
          },
          {
            name: 'oncall',
            type: 'notification',
            notification: {
              grpc_address: 'notification:50051',
              api_token: secrets.notificationToken,
              email_to: ['oncall@example.com'],
            },
          },
        ],
      },
    },
    { file: null, env: {} },
  );

  it('hides every secret of both configs', () => {
    const dump = JSON.stringify([redactSecrets(notification), redactSecrets(monitor)]);
    for (const value of Object.values(secrets)) expect(dump).not.toContain(value);
  });

  it('replaces secret fields with [REDACTED] and keeps the rest', () => {
    const redacted = redactSecrets(notification);
    expect(redacted.sms_backends[0]?.sms_gateway).toEqual({
      account_sid: 'AC1',
      auth_token: REDACTED,
      from_number: '+15550001111',
      base_url: 'https://api.sms-gateway.example.com',
      timeout_ms: 10000,
      max_connections: 10,
    });
    expect(redacted.server.api_tokens).toEqual([REDACTED]);
    expect(redacted.push_backends[1]?.push_driver_b?.private_key).toBe(REDACTED);
  });

  it('shows the database URL with only its password hidden', () => {
    expect(redactSecrets(notification).database.url).toBe(
      'postgres://svc:%5BREDACTED%5D@db.internal:5432/notification',
    );
  });

  it('shows only the origin of an alert webhook URL (its path carries the token)', () => {
    const channel = redactSecrets(monitor).alerts.channels[0]!;
    expect(channel.type === 'webhook' && channel.webhook.url).toBe(`https://hooks.example.com/${REDACTED}`);
    expect(channel.type === 'webhook' && channel.webhook.headers).toEqual({ authorization: REDACTED });
    expect(channel.name).toBe('pager');
  });

  it('hides the api_token of a notification alert channel', () => {
    const channel = redactSecrets(monitor).alerts.channels[1]!;
    expect(channel.type === 'notification' && channel.notification.api_token).toBe(REDACTED);
    expect(channel.type === 'notification' && channel.notification.email_to).toEqual(['oncall@example.com']);
  });

  it('leaves empty secrets empty, so a dump shows what is unset', () => {
    const redacted = redactSecrets(loadMonitorConfig(undefined, { file: null, env: {} }));
    expect(redacted.error_tracking.dsn).toBe('');
  });

  it('hides the credentials of every URL the config holds, whatever its key (a target http_url)', () => {
    const config = loadMonitorConfig(
      {
        targets: [{ name: 'n', http_url: 'http://probe:probe-pw-4242@127.0.0.1:8080/health' }],
        pull_metrics: { push_gateway_url: 'https://ci-user:gw-pw-1717@gateway.example.com/' },
        opentelemetry: { endpoint: 'https://otlp-token-9898@otlp.example.com' },
      },
      { file: null, env: {} },
    );
    const redacted = redactSecrets(config);
    const dump = JSON.stringify(redacted);
    for (const secret of ['probe-pw-4242', 'gw-pw-1717', 'otlp-token-9898'])
      expect(dump).not.toContain(secret);
    // The rest of the URL stays readable: the user name, host, port and path.
    expect(redacted.targets[0]!.http_url).toBe(`http://probe:${REDACTED}@127.0.0.1:8080/health`);
    expect(redacted.opentelemetry.endpoint).toBe(`https://${REDACTED}@otlp.example.com`);
  });

  it('does not modify the config it is given', () => {
    redactSecrets(monitor);
    expect(monitor.error_tracking.dsn).toBe(secrets.dsn);
  });
});
