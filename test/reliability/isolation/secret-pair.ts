/**
 * The notification and monitor processes (real processes, test/support/service-process.ts) started
 * with every secret key of both config schemas (secret-keys.ts) set to a unique, recognisable value,
 * and every provider pointed at a local peer that refuses it: an HTTP/1.1 server answering 401 to the
 * SMS API, the v3 mail API, the OAuth token endpoint, the OTLP exporters, the alert webhook and the
 * error tracker; an HTTP/2 (h2c) server answering 403 to FCM and APNs; an SMTP server that refuses
 * every login. Both processes log at debug level, so the failures are logged as verbosely as they can
 * be. The peers record what they receive, so the suite can show each secret was really used.
 */
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import http from 'node:http';
import * as http2 from 'node:http2';
import type { AddressInfo, Socket } from 'node:net';
import { SMTPServer } from 'smtp-server';

import { createTestDatabase } from '../../support/database';
import { startServiceProcess, type ServiceProcess } from '../../support/service-process';
import { reservePort } from '../../support/smtp-peer';
import { NOTIFICATION_SCOPES } from '../../../services/notification/rpc/scopes';
import { MONITOR_SCOPES } from '../../../services/monitor/rpc/scopes';

/** One configured secret: the value set, and the strings that would betray it in output. */
export interface ConfiguredSecret {
  /** The schema key (`notification.mailer.backends[i].smtp.password`), as secret-keys.ts names it. */
  key: string;
  /** The value configured. */
  value: string;
  /** What is searched for: the value, its base64, and encodings it travels in (Basic, AUTH PLAIN). */
  needles: string[];
}

/** What a local peer received (headers and bodies as text). */
export interface PeerRecord {
  peer: 'http' | 'h2' | 'smtp';
  path: string;
  headers: Record<string, unknown>;
  body: string;
}

/** The running pair, its peers and its secrets. */
export interface SecretPair {
  notification: ServiceProcess;
  monitor: ServiceProcess;
  secrets: ConfiguredSecret[];
  /** Two RPC callers of the notification service (tokens of `server.api_tokens`). */
  notificationTokens: readonly [string, string];
  monitorToken: string;
  /**
   * Per process, per scope: a named token holding every scope of that process but this one (the
   * scope isolation probe: every method called with the token lacking its scope).
   */
  lackingScope: { notification: Record<string, string>; monitor: Record<string, string> };
  webToken: string;
  jwtSecret: string;
  jwtIssuer: string;
  jwtAudience: string;
  healthTokens: { notification: string; monitor: string };
  metricsTokens: { notification: string; monitor: string };
  /** Backend names, per channel, as configured. */
  backends: { sms: string; smtp: string; httpApi: string; fcmV1: string; fcmLegacy: string; apns: string };
  received: PeerRecord[];
  close(): Promise<void>;
}

const SMTP_USER = 'iso-smtp-user';

function b64(text: string): string {
  return Buffer.from(text, 'utf8').toString('base64');
}

/**
 * A unique value naming its key: `ISO_<slug>_<hex>`, 40+ word characters, so it is valid everywhere
 * it goes (a URL's password or path, a header, a DSN's key).
 */
function secretValue(slug: string): string {
  return `ISO_${slug.replace(/-/g, '_')}_${randomBytes(16).toString('hex')}`;
}

/**
 * The needles of a PEM key: its base64 body lines (any one of them in output would leak part of the
 * key) and the whole PEM.
 */
function pemNeedles(pem: string): string[] {
  const body = pem
    .split('\n')
    .filter((l) => l !== '' && !l.startsWith('-----'))
    .filter((l) => l.length >= 40);
  return [pem, pem.replace(/\n/g, '\\n'), ...body];
}

async function listen(server: http.Server | http2.Http2Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

/** Starts the peers and both processes. */
export async function startSecretPair(): Promise<SecretPair> {
  const received: PeerRecord[] = [];
  const sockets = new Set<Socket>();

  // HTTP/1.1: every request refused with 401, the body a provider-like error without any echo.
  const httpPeer = http.createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => (body += c.length + body.length > 65536 ? '' : c));
    req.on('end', () => {
      received.push({ peer: 'http', path: req.url ?? '', headers: { ...req.headers }, body });
      res.writeHead(401, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ code: 20003, message: 'Authenticate', error: 'invalid_client' }));
    });
  });
  httpPeer.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  const httpPort = await listen(httpPeer);
  const httpBase = `http://127.0.0.1:${httpPort}`;

  // HTTP/2 without TLS (FCM and APNs): 403 with each provider's error body.
  const h2Peer = http2.createServer();
  const h2Sessions = new Set<http2.ServerHttp2Session>();
  h2Peer.on('session', (s) => {
    h2Sessions.add(s);
    s.on('close', () => h2Sessions.delete(s));
  });
  h2Peer.on('stream', (stream, headers) => {
    let body = '';
    stream.setEncoding('utf8');
    stream.on('data', (c: string) => (body += c));
    stream.on('end', () => {
      received.push({ peer: 'h2', path: String(headers[':path']), headers: { ...headers }, body });
      stream.respond({ ':status': 403, 'content-type': 'application/json' });
      stream.end(JSON.stringify({ reason: 'InvalidProviderToken', error: { status: 'PERMISSION_DENIED' } }));
    });
  });
  const h2Port = await listen(h2Peer);
  const h2Base = `http://127.0.0.1:${h2Port}`;

  // SMTP: offers AUTH without TLS and refuses every login.
  const smtp = new SMTPServer({
    disabledCommands: ['STARTTLS'],
    allowInsecureAuth: true,
    authMethods: ['PLAIN', 'LOGIN'],
    logger: false,
    onAuth(auth, _session, callback) {
      received.push({
        peer: 'smtp',
        path: 'AUTH',
        headers: { method: auth.method, username: auth.username },
        body: auth.password ?? '',
      });
      callback(new Error('535 5.7.8 Authentication credentials invalid'));
    },
  });
  await new Promise<void>((resolve) => smtp.listen(0, '127.0.0.1', resolve));
  const smtpPort = (smtp.server.address() as AddressInfo).port;

  const secrets: ConfiguredSecret[] = [];
  const secret = (key: string, slug: string, extra: (v: string) => string[] = () => []): string => {
    const value = secretValue(slug);
    secrets.push({ key, value, needles: [value, b64(value), ...extra(value)] });
    return value;
  };

  const notificationTokens = [
    secret('notification.server.api_tokens', 'rpc-token-a'),
    secret('notification.server.api_tokens', 'rpc-token-b'),
  ] as const;
  const monitorToken = secret('monitor.server.api_tokens', 'monitor-rpc-token');
  const lacking = (service: 'notification' | 'monitor', scopes: readonly string[]) => {
    const tokens: Record<string, string> = {};
    const entries = scopes.map((scope) => {
      const slug = scope.replace(/\W/g, '-');
      tokens[scope] = secret(`${service}.server.api_tokens`, `${service}-without-${slug}`);
      return { name: `without-${slug}`, token: tokens[scope], scopes: scopes.filter((s) => s !== scope) };
    });
    return { tokens, entries };
  };
  const notificationLacking = lacking('notification', NOTIFICATION_SCOPES);
  const monitorLacking = lacking('monitor', MONITOR_SCOPES);
  const lackingScope = { notification: notificationLacking.tokens, monitor: monitorLacking.tokens };
  const webToken = secret('monitor.web.api_tokens', 'status-web-token');
  const jwtSecret = secret('notification.admin.auth.jwt_secret', 'admin-jwt-secret');
  const unsubscribeKey = secret('notification.notify.unsubscribe.signing_key', 'unsubscribe-signing-key');
  const healthTokens = {
    notification: secret('notification.health.auth_token', 'notification-health-token'),
    monitor: secret('monitor.health.auth_token', 'monitor-health-token'),
  };
  const metricsTokens = {
    notification: secret('notification.metrics.auth_token', 'notification-metrics-token'),
    monitor: secret('monitor.metrics.auth_token', 'monitor-metrics-token'),
  };
  const smsSid = 'AC0123456789abcdef0123456789abcdef';
  const smsToken = secret('notification.sms_backends[i].sms_gateway.auth_token', 'sms-auth-token', (v) => [
    b64(`${smsSid}:${v}`),
  ]);
  const smtpPassword = secret('notification.mailer.backends[i].smtp.password', 'smtp-password', (v) => [
    b64(`\u0000${SMTP_USER}\u0000${v}`),
  ]);
  const mailApiKey = secret('notification.mailer.backends[i].http_api.api_key', 'mail-api-key');
  const fcmServerKey = secret('notification.push_backends[i].push_driver_a.server_key', 'fcm-server-key');
  const notificationMonitorToken = secret('notification.monitor.api_token', 'notification-to-monitor-token');
  const channelToken = secret('monitor.alerts.channels[i].notification.api_token', 'alert-channel-token');
  const webhookPathToken = secret('monitor.alerts.channels[i].webhook.url', 'alert-webhook-path');
  const webhookHeader = secret('monitor.alerts.channels[i].webhook.headers', 'alert-webhook-header');
  const notificationOtlpHeader = secret('notification.opentelemetry.headers', 'notification-otlp-header');
  const monitorOtlpHeader = secret('monitor.opentelemetry.headers', 'monitor-otlp-header');
  const notificationDsnKey = secret('notification.error_tracking.dsn', 'notification-dsn-key');
  const monitorDsnKey = secret('monitor.error_tracking.dsn', 'monitor-dsn-key');
  const notificationDbPassword = secret('notification.database.url', 'notification-db-password');
  const monitorDbPassword = secret('monitor.database.url', 'monitor-db-password');
  // A watched target probed with credentials three ways: in its URL (sent as HTTP Basic when no
  // bearer token is set), as `bearer_token`, and in `headers`. Its URL is shown (alerts, /health
  // details, the status page, logs) with the password replaced.
  const targetUrlPassword = secret('monitor.targets[i].http_url', 'target-url-password', (v) => [
    b64(`probe:${v}`),
  ]);
  const targetBearer = secret('monitor.targets[i].bearer_token', 'target-bearer-token');
  const targetHeader = secret('monitor.targets[i].headers', 'target-header');
  // On call: the monitor pages through Notify with its own token (refused by the notification
  // service here: the refusal is logged on both sides, which is what this suite reads), and signs
  // acknowledgment links with its signing key.
  const pagingToken = secret('monitor.oncall.paging.api_token', 'oncall-paging-token');
  const pagingSigningKey = secret('monitor.oncall.paging.signing_key', 'oncall-paging-signing-key');
  const inboundSmsToken = secret('monitor.oncall.inbound_sms.api_token', 'oncall-inbound-sms-token');

  const pem = (key: string, kind: 'rsa' | 'ec'): string => {
    const { privateKey } =
      kind === 'rsa'
        ? generateKeyPairSync('rsa', { modulusLength: 2048 })
        : generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const value = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    secrets.push({ key, value, needles: pemNeedles(value) });
    return value;
  };
  const fcmPrivateKey = pem('notification.push_backends[i].push_driver_a.service_account.private_key', 'rsa');
  const apnsPrivateKey = pem('notification.push_backends[i].push_driver_b.private_key', 'ec');

  // The shared cluster trusts every local login, so the password is accepted and ignored: it is still
  // the configured secret the process holds and must never print.
  const db = await createTestDatabase('iso');
  const dbUrl = (password: string): string => {
    const url = new URL(db.url);
    url.password = password;
    return url.toString();
  };

  const jwtIssuer = 'https://idp.iso.example.com';
  const jwtAudience = 'notification-admin';
  const backends = {
    sms: 'twilio',
    smtp: 'relay',
    httpApi: 'sendgrid',
    fcmV1: 'fcm',
    fcmLegacy: 'fcm-legacy',
    apns: 'apns',
  };

  const notificationGrpcPort = await reservePort();
  const common = (prefix: string, otlpHeader: string, dsnKey: string, dbPassword: string) => ({
    [`${prefix}LOG__LEVEL`]: 'debug',
    [`${prefix}LOG__FORMAT`]: 'json',
    [`${prefix}TRACING__ENABLED`]: 'true',
    [`${prefix}TRACING__EXPORTER`]: 'otlp',
    [`${prefix}OPENTELEMETRY__ENDPOINT`]: httpBase,
    [`${prefix}OPENTELEMETRY__HEADERS`]: JSON.stringify({ authorization: `Bearer ${otlpHeader}` }),
    [`${prefix}OPENTELEMETRY__EXPORT_INTERVAL`]: '0.2',
    [`${prefix}ERROR_TRACKING__DSN`]: `http://${dsnKey}@127.0.0.1:${httpPort}/42`,
    [`${prefix}DATABASE__URL`]: dbUrl(dbPassword),
  });

  const monitor = await startServiceProcess('monitor', {
    ...common('SVC_MONITOR__', monitorOtlpHeader, monitorDsnKey, monitorDbPassword),
    SVC_MONITOR__SERVER__API_TOKENS: JSON.stringify([monitorToken, ...monitorLacking.entries]),
    SVC_MONITOR__WEB__API_TOKENS: JSON.stringify([webToken]),
    SVC_MONITOR__HEALTH__AUTH_TOKEN: healthTokens.monitor,
    SVC_MONITOR__METRICS__AUTH_TOKEN: metricsTokens.monitor,
    SVC_MONITOR__TARGETS: JSON.stringify([
      {
        name: 'basic-probed',
        http_url: `http://probe:${targetUrlPassword}@127.0.0.1:${httpPort}/probe/basic/health`,
        interval_seconds: 1,
      },
      {
        name: 'token-probed',
        http_url: `${httpBase}/probe/token/health`,
        bearer_token: targetBearer,
        headers: { 'x-probe-key': targetHeader },
        interval_seconds: 1,
      },
    ]),
    SVC_MONITOR__ONCALL__ESCALATION_POLICIES: JSON.stringify([
      { name: 'iso', steps: [{ targets: [{ user: 'iso-oncall' }], wait_minutes: 1 }] },
    ]),
    SVC_MONITOR__ONCALL__PAGING__GRPC_ADDRESS: `127.0.0.1:${notificationGrpcPort}`,
    SVC_MONITOR__ONCALL__PAGING__API_TOKEN: pagingToken,
    SVC_MONITOR__ONCALL__PAGING__SIGNING_KEY: pagingSigningKey,
    SVC_MONITOR__ONCALL__PAGING__PUBLIC_BASE_URL: 'https://monitor.iso.example.test',
    SVC_MONITOR__ONCALL__INBOUND_SMS__ENABLED: 'true',
    SVC_MONITOR__ONCALL__INBOUND_SMS__GRPC_ADDRESS: `127.0.0.1:${notificationGrpcPort}`,
    SVC_MONITOR__ONCALL__INBOUND_SMS__API_TOKEN: inboundSmsToken,
    SVC_MONITOR__ALERTS__CHANNELS: JSON.stringify([
      {
        name: 'hook',
        type: 'webhook',
        webhook: {
          url: `${httpBase}/hooks/${webhookPathToken}`,
          headers: { 'x-hook-key': webhookHeader },
          timeout_ms: 2000,
          max_attempts: 2,
        },
      },
      {
        name: 'on-call',
        type: 'notification',
        notification: {
          grpc_address: `127.0.0.1:${notificationGrpcPort}`,
          api_token: channelToken,
          email_to: ['oncall@iso.example.com'],
          timeout_ms: 2000,
          max_attempts: 2,
        },
      },
    ]),
  });

  let notification: ServiceProcess;
  try {
    notification = await startServiceProcess('notification', {
      ...common('SVC_NOTIFICATION__', notificationOtlpHeader, notificationDsnKey, notificationDbPassword),
      SVC_NOTIFICATION__SERVER__GRPC_PORT: String(notificationGrpcPort),
      SVC_NOTIFICATION__SERVER__API_TOKENS: JSON.stringify([
        ...notificationTokens,
        ...notificationLacking.entries,
      ]),
      SVC_NOTIFICATION__HEALTH__AUTH_TOKEN: healthTokens.notification,
      SVC_NOTIFICATION__METRICS__AUTH_TOKEN: metricsTokens.notification,
      SVC_NOTIFICATION__ADMIN__AUTH__JWT_SECRET: jwtSecret,
      SVC_NOTIFICATION__ADMIN__AUTH__ISSUER: jwtIssuer,
      SVC_NOTIFICATION__ADMIN__AUTH__AUDIENCE: jwtAudience,
      SVC_NOTIFICATION__MONITOR__GRPC_ADDRESS: `127.0.0.1:${monitor.grpcPort}`,
      SVC_NOTIFICATION__MONITOR__API_TOKEN: notificationMonitorToken,
      SVC_NOTIFICATION__MONITOR__FLUSH_INTERVAL_MS: '200',
      SVC_NOTIFICATION__DELIVERY__BASE_DELAY_MS: '5',
      SVC_NOTIFICATION__DELIVERY__MAX_DELAY_MS: '20',
      SVC_NOTIFICATION__DELIVERY__POLL_INTERVAL_MS: '20',
      SVC_NOTIFICATION__DELIVERY__MAX_ATTEMPTS: '2',
      // One notify category, so the isolation probes can make notifications (a topic needs no users).
      SVC_NOTIFICATION__NOTIFY__CATEGORIES: JSON.stringify([{ name: 'iso', channels: ['inbox'] }]),
      SVC_NOTIFICATION__NOTIFY__UNSUBSCRIBE__SIGNING_KEY: unsubscribeKey,
      SVC_NOTIFICATION__NOTIFY__UNSUBSCRIBE__PUBLIC_BASE_URL: 'https://notify.iso.example.test',
      SVC_NOTIFICATION__SMS_BACKENDS: JSON.stringify([
        {
          name: backends.sms,
          primary: true,
          driver: 'sms_gateway',
          sms_gateway: {
            account_sid: smsSid,
            auth_token: smsToken,
            from_number: '+15550001111',
            base_url: httpBase,
          },
        },
      ]),
      SVC_NOTIFICATION__MAILER__BACKENDS: JSON.stringify([
        {
          name: backends.smtp,
          primary: true,
          driver: 'smtp',
          from_email: 'noreply@iso.example.com',
          smtp: { host: '127.0.0.1', port: smtpPort, user: SMTP_USER, password: smtpPassword, pool: false },
        },
        {
          name: backends.httpApi,
          driver: 'http_api',
          from_email: 'noreply@iso.example.com',
          http_api: { base_url: httpBase, api_key: mailApiKey },
        },
      ]),
      SVC_NOTIFICATION__PUSH_BACKENDS: JSON.stringify([
        {
          name: backends.fcmV1,
          primary: true,
          driver: 'push_driver_a',
          push_driver_a: {
            project_id: 'iso-project',
            service_account: {
              client_email: 'sender@iso-project.iam.example.com',
              private_key: fcmPrivateKey,
              token_uri: `${httpBase}/token`,
            },
            base_url: h2Base,
          },
        },
        {
          name: backends.fcmLegacy,
          driver: 'push_driver_a',
          push_driver_a: { server_key: fcmServerKey, base_url: h2Base },
        },
        {
          name: backends.apns,
          driver: 'push_driver_b',
          push_driver_b: {
            key_id: 'ISOKEY1234',
            team_id: 'ISOTEAM123',
            topic: 'com.example.iso',
            private_key: apnsPrivateKey,
            base_url: h2Base,
          },
        },
      ]),
    });
  } catch (err) {
    await monitor.stop();
    throw err;
  }

  let closed = false;
  return {
    notification,
    monitor,
    secrets,
    notificationTokens,
    monitorToken,
    lackingScope,
    webToken,
    jwtSecret,
    jwtIssuer,
    jwtAudience,
    healthTokens,
    metricsTokens,
    backends,
    received,
    async close() {
      if (closed) return;
      closed = true;
      await Promise.all([notification.stop(), monitor.stop()]);
      for (const s of sockets) s.destroy();
      for (const s of h2Sessions) s.destroy();
      await Promise.all([
        new Promise<void>((resolve) => httpPeer.close(() => resolve())),
        new Promise<void>((resolve) => h2Peer.close(() => resolve())),
        new Promise<void>((resolve) => smtp.close(() => resolve())),
      ]);
      await db.drop();
    },
  };
}
