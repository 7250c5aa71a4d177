import { ConfigError } from '../../../shared/config';
import { loadNotificationConfig } from '../../../services/notification/config';
import { loadMonitorConfig } from '../../../services/monitor/config';

/** Admin auth is a separate production rule of the notification service; set it so it stays quiet. */
const adminAuth = { auth: { jwt_secret: 'x'.repeat(32) } };

const services = [
  [
    'notification',
    (o: Record<string, unknown>, env: Record<string, string>) =>
      loadNotificationConfig({ admin: adminAuth, ...o }, { file: null, env }),
  ],
  [
    'monitor',
    (o: Record<string, unknown>, env: Record<string, string>) => loadMonitorConfig(o, { file: null, env }),
  ],
] as const;

function issuesOf(load: () => unknown): string[] {
  try {
    load();
  } catch (err) {
    if (err instanceof ConfigError) return err.issues.map((i) => `${i.key}: ${i.message}`);
    throw err;
  }
  return [];
}

describe.each(services)('the %s config in production', (name, load) => {
  it('without server.api_tokens is invalid, naming the key and the way out', () => {
    expect(issuesOf(() => load({ environment: 'production' }, {}))).toEqual([
      `${name}.server.api_tokens: in production RPCs need auth: set server.api_tokens (bearer tokens), ` +
        'or set server.allow_unauthenticated: true to serve them open on purpose',
    ]);
  });

  it('takes production from NODE_ENV as well', () => {
    expect(issuesOf(() => load({}, { NODE_ENV: 'production' }))).toEqual([
      expect.stringMatching(new RegExp(`^${name}\\.server\\.api_tokens: in production RPCs need auth`)),
    ]);
  });

  it('with api tokens is valid', () => {
    expect(issuesOf(() => load({ environment: 'production', server: { api_tokens: ['t-1'] } }, {}))).toEqual(
      [],
    );
  });

  it('with server.allow_unauthenticated set to true (from the environment) is valid', () => {
    const env = { [`SVC_${name.toUpperCase()}__SERVER__ALLOW_UNAUTHENTICATED`]: 'true' };
    expect(issuesOf(() => load({ environment: 'production' }, env))).toEqual([]);
  });
});

describe.each(services)('the %s config outside production', (_name, load) => {
  it('is valid without api tokens (the server warns at start instead)', () => {
    expect(issuesOf(() => load({ environment: 'development' }, {}))).toEqual([]);
    expect(issuesOf(() => load({ environment: 'staging' }, {}))).toEqual([]);
  });
});
