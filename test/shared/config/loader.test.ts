import { ConfigError, loadConfig } from '../../../shared/config';
import { NotificationConfigSchema, loadNotificationConfig } from '../../../services/notification/config';
import { tempYamlFiles } from './temp-yaml';

const files = tempYamlFiles();
afterAll(() => files.cleanup());

function configError(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (err) {
    if (err instanceof ConfigError) return err;
    throw err;
  }
  throw new Error('expected a ConfigError');
}

describe('precedence of the four sources', () => {
  const file = () =>
    files.write(`
notification:
  inbox:
    retention_days: 10
    max_page_size: 20
    purge_batch_size: 500
`);

  it('code beats environment, environment beats file, file beats default', () => {
    const config = loadNotificationConfig(
      { inbox: { retention_days: 40 } },
      {
        file: file(),
        env: { SVC_NOTIFICATION__INBOX__RETENTION_DAYS: '30', SVC_NOTIFICATION__INBOX__MAX_PAGE_SIZE: '25' },
      },
    );
    expect(config.inbox.retention_days).toBe(40); // code over env over file
    expect(config.inbox.max_page_size).toBe(25); // env over file
    expect(config.inbox.purge_batch_size).toBe(500); // file over default
    expect(config.inbox.max_title_length).toBe(200); // default only
  });

  it('a key set only in the file survives environment and code setting its siblings', () => {
    const config = loadNotificationConfig(
      { inbox: { max_page_size: 5 } },
      { file: file(), env: { SVC_NOTIFICATION__INBOX__PURGE_INTERVAL_SECONDS: '60' } },
    );
    expect(config.inbox).toMatchObject({ retention_days: 10, max_page_size: 5, purge_interval_seconds: 60 });
  });

  it('reads the file named by SVC_CONFIG_FILE when no file option is given', () => {
    const path = file();
    const config = loadNotificationConfig(undefined, { env: { SVC_CONFIG_FILE: path } });
    expect(config.inbox.retention_days).toBe(10);
  });

  it('ignores the application file when file is null', () => {
    const config = loadNotificationConfig(undefined, { file: null, env: { SVC_CONFIG_FILE: file() } });
    expect(config.inbox.retention_days).toBe(30);
  });

  it('NODE_ENV gives the default environment, and an explicit setting wins over it', () => {
    expect(loadNotificationConfig(undefined, { file: null, env: { NODE_ENV: 'staging' } }).environment).toBe(
      'staging',
    );
    const path = files.write('notification:\n  environment: qa\n');
    expect(loadNotificationConfig(undefined, { file: path, env: { NODE_ENV: 'staging' } }).environment).toBe(
      'qa',
    );
  });

  it('returns a deep-frozen config', () => {
    const config = loadNotificationConfig(undefined, { file: null, env: {} });
    expect(Object.isFrozen(config.inbox)).toBe(true);
    expect(Object.isFrozen(config.server.api_tokens)).toBe(true);
  });
});

describe('environment mapping', () => {
  const yamlWithSmtpBackend = () =>
    files.write(`
notification:
  mailer:
    backends:
      - name: main
        driver: http_api
        from_email: noreply@example.com
        smtp:
          host: smtp.example.com
        http_api:
          base_url: https://mail.example.com
          api_key: <API_KEY>
`);

  it('an indexed variable sets one field inside the list element the file defined', () => {
    const config = loadNotificationConfig(undefined, {
      file: yamlWithSmtpBackend(),
      env: {
        SVC_NOTIFICATION__MAILER__BACKENDS__0__DRIVER: 'smtp',
        SVC_NOTIFICATION__MAILER__BACKENDS__0__SMTP__PORT: '2525',
      },
    });
    const [backend] = config.mailer.backends;
    expect(backend).toMatchObject({ name: 'main', driver: 'smtp', from_email: 'noreply@example.com' });
    expect(backend?.smtp).toMatchObject({ host: 'smtp.example.com', port: 2525 });
  });

  it('a whole list is given as JSON and replaces the file list', () => {
    const config = loadNotificationConfig(undefined, {
      file: yamlWithSmtpBackend(),
      env: {
        SVC_NOTIFICATION__MAILER__BACKENDS: JSON.stringify([
          { name: 'relay', driver: 'smtp', from_email: 'a@example.com', smtp: { host: 'relay.local' } },
        ]),
      },
    });
    expect(config.mailer.backends.map((b) => b.name)).toEqual(['relay']);
  });

  it('an indexed variable applies on top of a whole list given as JSON', () => {
    const config = loadNotificationConfig(undefined, {
      file: null,
      env: {
        SVC_NOTIFICATION__SMS_BACKENDS: JSON.stringify([
          { name: 'sms', sms_gateway: { account_sid: 'AC1', auth_token: 't', from_number: '+15550001111' } },
        ]),
        SVC_NOTIFICATION__SMS_BACKENDS__0__SMS_GATEWAY__BASE_URL: 'http://127.0.0.1:9999',
      },
    });
    expect(config.sms_backends[0]?.sms_gateway).toMatchObject({
      account_sid: 'AC1',
      base_url: 'http://127.0.0.1:9999',
    });
  });

  it('coerces numbers, booleans and comma-separated string lists to the schema types', () => {
    const config = loadNotificationConfig(undefined, {
      file: null,
      env: {
        SVC_NOTIFICATION__SERVER__GRPC_PORT: '6000',
        SVC_NOTIFICATION__DELIVERY__MAX_ATTEMPTS: '3',
        SVC_NOTIFICATION__SERVER__API_TOKENS: 'tok-a, tok-b',
        SVC_NOTIFICATION__MAILER__BACKENDS__0__NAME: 'm',
        SVC_NOTIFICATION__MAILER__BACKENDS__0__DRIVER: 'smtp',
        SVC_NOTIFICATION__MAILER__BACKENDS__0__FROM_EMAIL: 'm@example.com',
        SVC_NOTIFICATION__MAILER__BACKENDS__0__PRIMARY: 'true',
        SVC_NOTIFICATION__MAILER__BACKENDS__0__SMTP__HOST: 'localhost',
        SVC_NOTIFICATION__MAILER__BACKENDS__0__SMTP__SECURE: '1',
        SVC_NOTIFICATION__MAILER__BACKENDS__0__SMTP__POOL: 'false',
      },
    });
    expect(config.server.grpc_port).toBe(6000);
    expect(config.delivery.max_attempts).toBe(3);
    expect(config.server.api_tokens).toEqual(['tok-a', 'tok-b']);
    expect(config.mailer.backends[0]).toMatchObject({ primary: true, smtp: { secure: true, pool: false } });
  });

  it('a string list may also be given as JSON', () => {
    const config = loadNotificationConfig(undefined, {
      file: null,
      env: { SVC_NOTIFICATION__SERVER__API_TOKENS: '["x,y", "z"]' },
    });
    expect(config.server.api_tokens).toEqual(['x,y', 'z']);
  });

  it('ignores the other service’s variables', () => {
    const config = loadNotificationConfig(undefined, { file: null, env: { SVC_MONITOR__DEBUG: 'true' } });
    expect(config.inbox.retention_days).toBe(30);
  });
});

describe('errors', () => {
  it('an invalid value names the key, what was expected, the value and its environment variable', () => {
    const err = configError(() =>
      loadNotificationConfig(undefined, {
        file: null,
        env: { SVC_NOTIFICATION__INBOX__RETENTION_DAYS: 'abc' },
      }),
    );
    expect(err.message).toContain(
      'notification.inbox.retention_days: expected a positive integer, got "abc" (from environment variable SVC_NOTIFICATION__INBOX__RETENTION_DAYS)',
    );
  });

  it('an invalid value from the file names the file and the variable that would set the key', () => {
    const path = files.write('notification:\n  inbox:\n    store_backend: redis\n');
    const err = configError(() => loadNotificationConfig(undefined, { file: path, env: {} }));
    expect(err.issues).toEqual([
      {
        key: 'notification.inbox.store_backend',
        message: 'expected one of "database", "memory", got "redis"',
        source: `file ${path}`,
        envVar: 'SVC_NOTIFICATION__INBOX__STORE_BACKEND',
      },
    ]);
  });

  it('an invalid value passed in code names code as its source', () => {
    const err = configError(() =>
      loadNotificationConfig({ server: { grpc_port: 70000 } }, { file: null, env: {} }),
    );
    expect(err.message).toContain(
      'notification.server.grpc_port: expected a port number between 0 and 65535, got 70000 (from code; environment variable SVC_NOTIFICATION__SERVER__GRPC_PORT)',
    );
  });

  it('lists every issue, not just the first', () => {
    const err = configError(() =>
      loadNotificationConfig(undefined, {
        file: null,
        env: { SVC_NOTIFICATION__INBOX__RETENTION_DAYS: '0', SVC_NOTIFICATION__INBOX__MAX_PAGE_SIZE: 'x' },
      }),
    );
    expect(err.issues.map((i) => i.key).sort()).toEqual([
      'notification.inbox.max_page_size',
      'notification.inbox.retention_days',
    ]);
  });

  it('rejects an unknown environment key and names the variable', () => {
    const err = configError(() =>
      loadNotificationConfig(undefined, {
        file: null,
        env: { SVC_NOTIFICATION__INBOX__RETENTION_DAZE: '3' },
      }),
    );
    expect(err.message).toContain('SVC_NOTIFICATION__INBOX__RETENTION_DAZE');
    expect(err.issues[0]?.message).toMatch(/unknown key/);
  });

  it('rejects a variable with a single underscore after the section prefix', () => {
    const err = configError(() =>
      loadNotificationConfig(undefined, { file: null, env: { SVC_NOTIFICATION_INBOX__RETENTION_DAYS: '3' } }),
    );
    expect(err.message).toContain('SVC_NOTIFICATION_INBOX__RETENTION_DAYS');
  });

  it('an indexed variable that skips an index reports the missing element', () => {
    const err = configError(() =>
      loadNotificationConfig(undefined, {
        file: null,
        env: { SVC_NOTIFICATION__MAILER__BACKENDS__1__DRIVER: 'smtp' },
      }),
    );
    expect(err.issues[0]).toMatchObject({
      key: 'notification.mailer.backends[0]',
      message: 'missing list element: list indexes must run from 0 without gaps',
    });
  });

  it('rejects an unknown key in the file', () => {
    const path = files.write('notification:\n  inbox:\n    retention_dayz: 3\n');
    const err = configError(() => loadNotificationConfig(undefined, { file: path, env: {} }));
    expect(err.issues[0]).toMatchObject({ key: 'notification.inbox.retention_dayz', source: `file ${path}` });
  });

  it('rejects a misspelt section name at the top of the file', () => {
    const path = files.write('notifcation:\n  inbox: {}\n');
    const err = configError(() => loadNotificationConfig(undefined, { file: path, env: {} }));
    expect(err.issues[0]?.key).toBe('notifcation');
  });

  it('rejects an unknown key passed in code', () => {
    const err = configError(() =>
      loadConfig({
        section: 'notification',
        schema: NotificationConfigSchema,
        overrides: { inbx: {} },
        file: null,
        env: {},
      }),
    );
    expect(err.issues[0]).toMatchObject({ key: 'notification.inbx', source: 'code' });
  });

  it('a named file that does not exist is an error', () => {
    const err = configError(() =>
      loadNotificationConfig(undefined, { file: '/nonexistent/application.yaml', env: {} }),
    );
    expect(err.message).toContain('application file not found');
  });

  it('invalid JSON in a list variable is reported without echoing the value', () => {
    const err = configError(() =>
      loadNotificationConfig(undefined, {
        file: null,
        env: { SVC_NOTIFICATION__SMS_BACKENDS: '[{"auth_token": "s3cr3t-value"' },
      }),
    );
    expect(err.issues[0]).toMatchObject({ key: 'notification.sms_backends', message: 'is not valid JSON' });
    expect(err.message).not.toContain('s3cr3t-value');
  });

  it('never echoes a secret value in an error', () => {
    const err = configError(() =>
      loadNotificationConfig(
        { admin: { auth: { jwt_secret: 'short-secret-value' } } },
        { file: null, env: {} },
      ),
    );
    expect(err.issues[0]?.key).toBe('notification.admin.auth.jwt_secret');
    expect(err.message).not.toContain('short-secret-value');
  });

  it('YAML syntax errors report the line without quoting it', () => {
    const path = files.write('notification:\n  inbox:\n    retention_days: [1, 2\n');
    const err = configError(() => loadNotificationConfig(undefined, { file: path, env: {} }));
    expect(err.message).toMatch(/invalid YAML at line \d+/);
  });
});
