/**
 * Issue 31 end to end with real processes (build first: `npm run build`): the notification process
 * (dist, PostgreSQL) reports its own default SLOs to a monitor process (dist, PostgreSQL), whose
 * on-call pages through the notification process. The SMTP relay is down: emails end FAILED after
 * their retries, `notification-email-delivery` burns its budget, its page rule fires on the monitor,
 * and on-call (ann) gets ONE page by SMS through the Twilio stand-in (the channel that still works),
 * however many evaluations run while the outage lasts and however many of the SLO's rules fire.
 *
 * No timing assertions: every wait is on observable state, with generous bounds.
 */
import { createClient } from '@connectrpc/connect';
import { createConnectTransport } from '@connectrpc/connect-node';

import { AlertService } from '../../shared/gen/svc/monitor/v1/alerts_pb';
import { AlertState, MonitorService } from '../../shared/gen/svc/monitor/v1/monitor_pb';
import { TemplateChannel, TemplateService } from '../../shared/gen/svc/notification/v1/templates_pb';
import { UserService } from '../../shared/gen/svc/notification/v1/users_pb';
import { createTestDatabase } from '../support/database';
import { emailServiceEnv, notificationClient } from '../support/email-service';
import { unary } from '../support/grpc-clients';
import { startServiceProcess, type ServiceProcess } from '../support/service-process';
import { reservePort } from '../support/smtp-peer';
import { smsServiceEnv } from '../support/sms-service';
import { until } from '../support/wait';
import { startTwilioPeer, type TwilioPeer } from '../notification/channels/sms/twilio-peer';

jest.setTimeout(600_000);

/** The notification service's token at the monitor (reports) ... */
const REPORT_TOKEN = 'slo-e2e-report-token-0123456789abcdef';
/** ... and the monitor's at the notification service (pages), and the admin's. */
const PAGER_TOKEN = 'slo-e2e-pager-token-0123456789abcdef';
const ADMIN_TOKEN = 'slo-e2e-admin-token-0123456789abcdef';
const ANN_PHONE = '+15551110001';
const SLO = 'notification-email-delivery';
/** Emails sent while the relay is down: more than the SLO's min_events (10) in the 1 h window. */
const EMAILS = 14;

let notificationDb: { url: string; drop(): Promise<void> };
let monitorDb: { url: string; drop(): Promise<void> };
let twilio: TwilioPeer;
let notification: ServiceProcess;
let monitor: ServiceProcess;

const pages = () =>
  twilio.requests.filter((r) => (r.form.Body ?? '').startsWith('page ') && r.form.To === ANN_PHONE);

beforeAll(async () => {
  [notificationDb, monitorDb] = await Promise.all([
    createTestDatabase('slo_out_n'),
    createTestDatabase('slo_out_m'),
  ]);
  twilio = await startTwilioPeer();
  // Nothing listens on the relay's port: the SMTP peer is down for the whole test.
  const deadRelay = await reservePort();
  const monitorGrpc = await reservePort();
  notification = await startServiceProcess(
    'notification',
    {
      ...emailServiceEnv(
        deadRelay,
        { url: notificationDb.url },
        { delivery: { poll_interval_ms: 200, max_attempts: 2, base_delay_ms: 50, max_delay_ms: 200 } },
      ),
      // The relay's circuit stays closed: every email fails on its own attempts, at once (an open
      // circuit would hold them for its cooldown).
      SVC_NOTIFICATION__DELIVERY__CIRCUIT_BREAKER__FAILURE_THRESHOLD: '1000',
      ...smsServiceEnv(twilio),
      SVC_NOTIFICATION__SERVER__API_TOKENS: JSON.stringify([
        { name: 'monitor', token: PAGER_TOKEN, scopes: ['notify:send', 'users:read', 'sms:inbound'] },
        {
          name: 'admin',
          token: ADMIN_TOKEN,
          scopes: ['users:write', 'users:read', 'templates:write', 'templates:read', 'delivery:send'],
        },
      ]),
      SVC_NOTIFICATION__NOTIFY__CATEGORIES: JSON.stringify([
        { name: 'oncall-page', required: true, channels: ['email', 'sms'] },
      ]),
      SVC_NOTIFICATION__MONITOR__GRPC_ADDRESS: `127.0.0.1:${monitorGrpc}`,
      SVC_NOTIFICATION__MONITOR__API_TOKEN: REPORT_TOKEN,
      SVC_NOTIFICATION__MONITOR__FLUSH_INTERVAL_MS: '200',
      SVC_NOTIFICATION__MONITOR__DEFAULT_SLOS__MIN_EVENTS: '10',
    },
    { startTimeoutMs: 180_000 },
  );
  const transport = createConnectTransport({
    baseUrl: `http://127.0.0.1:${notification.httpPort}`,
    httpVersion: '1.1',
    interceptors: [
      (next) => (req) => {
        req.header.set('authorization', `Bearer ${ADMIN_TOKEN}`);
        return next(req);
      },
    ],
  });
  const templates = createClient(TemplateService, transport);
  await templates.upsertTemplate({
    category: 'oncall-page',
    channel: TemplateChannel.SMS,
    locale: 'en',
    content: { text: 'page {{ data.title }} {{ data.ack_sms }}' },
  });
  await templates.upsertTemplate({
    category: 'oncall-page',
    channel: TemplateChannel.EMAIL,
    locale: 'en',
    content: { subject: '{{ data.title }}', text: 'page {{ data.title }} {{ data.ack_url }}' },
  });
  await createClient(UserService, transport).upsertUser({
    userId: 'ann',
    emails: ['ann@example.test'],
    phones: [ANN_PHONE],
    locale: 'en',
  });

  monitor = await startServiceProcess(
    'monitor',
    {
      SVC_MONITOR__DATABASE__URL: monitorDb.url,
      SVC_MONITOR__SERVER__GRPC_PORT: String(monitorGrpc),
      SVC_MONITOR__SERVER__API_TOKENS: JSON.stringify([REPORT_TOKEN]),
      SVC_MONITOR__SLO__EVALUATION_INTERVAL_SECONDS: '1',
      SVC_MONITOR__ONCALL: JSON.stringify({
        schedules: [
          {
            name: 'primary',
            time_zone: 'Europe/Berlin',
            rotation: {
              users: ['ann'],
              hand_off: '09:00',
              hand_off_day: 'mon',
              start: '2026-01-05',
              length_weeks: 1,
            },
          },
        ],
        escalation_policies: [
          {
            name: 'slo-pages',
            match: ['slo_severity="page"'],
            steps: [{ targets: [{ schedule: 'primary' }], wait_minutes: 30 }],
            repeat: 0,
          },
        ],
        paging: {
          grpc_address: `127.0.0.1:${notification.grpcPort}`,
          api_token: PAGER_TOKEN,
          public_base_url: 'https://monitor.example.test',
          signing_key: 'slo-e2e-signing-key-0123456789abcdef',
          tick_seconds: 1,
          claim_lease_seconds: 10,
        },
      }),
    },
    { startTimeoutMs: 180_000 },
  );
}, 600_000);

afterAll(async () => {
  await monitor?.stop('SIGKILL', 1000);
  await notification?.stop();
  await twilio?.close();
  await notificationDb?.drop();
  await monitorDb?.drop();
});

test('an SMTP outage burns the email delivery SLO, which pages on-call once, by SMS', async () => {
  const monitorTransport = createConnectTransport({
    baseUrl: `http://127.0.0.1:${monitor.httpPort}`,
    httpVersion: '1.1',
    interceptors: [
      (next) => (req) => {
        req.header.set('authorization', `Bearer ${REPORT_TOKEN}`);
        return next(req);
      },
    ],
  });
  const monitorClient = createClient(MonitorService, monitorTransport);
  const alerts = createClient(AlertService, monitorTransport);
  // The notification service registered its default SLOs at the monitor.
  await until(
    async () => (await monitorClient.listSlos({})).ratioSlos.some((s) => s.name === SLO),
    'the default SLOs registered',
    60_000,
  );

  const client = notificationClient(notification.grpcPort);
  try {
    for (let i = 0; i < EMAILS; i++)
      await unary(
        client,
        'sendEmail',
        { to: [`customer-${i}@example.test`], subject: `Order ${i} 📦 注文 طلب`, text: 'Your order shipped' },
        { metadata: { authorization: `Bearer ${ADMIN_TOKEN}` } },
      );
  } finally {
    client.close();
  }

  // The emails end FAILED; their events reach the monitor; the 1 h / 5 min page rule fires.
  const emailStatus = async () => (await monitorClient.listSlos({})).statuses.find((x) => x.name === SLO);
  await until(
    async () => (await emailStatus())?.rules.find((r) => r.rule?.name === 'page-1h-5m')?.firing === true,
    'the page rule of the email delivery SLO firing',
    180_000,
  ).catch(async (err: unknown) => {
    // What the monitor saw and what the notification service said about reporting, for the failure.
    console.log(
      JSON.stringify(await emailStatus(), (_k, v: unknown) => (typeof v === 'bigint' ? String(v) : v)),
    );
    console.log(
      notification.logs
        .filter((l) => /monitor|slo|FAILED|failed/i.test(l))
        .slice(-30)
        .join('\n'),
    );
    throw err;
  });
  const status = (await emailStatus())!;
  // At least the guard's 10 bad events (the last emails may still be on their way), none good.
  expect(Number(status.badEvents)).toBeGreaterThanOrEqual(10);
  expect(status.events).toBe(status.badEvents);
  expect(status.errorBudgetRemaining).toBeLessThan(0);

  // One alert for the SLO's burn, keyed by its first page rule, paged to ann by SMS.
  const ours = async () =>
    (await alerts.listAlerts({})).alerts.filter(
      (a) => a.labels.slo === SLO && a.state !== AlertState.RESOLVED,
    );
  await until(async () => (await ours()).length > 0, 'the SLO alert', 60_000);
  await until(async () => pages().length > 0, "ann's SMS page", 120_000);

  // Many more evaluations (one a second) while the outage lasts: still one alert, one page.
  const evaluationsBefore = await evaluations();
  await until(async () => (await evaluations()) >= evaluationsBefore + 8, 'eight more evaluations', 120_000);
  expect((await ours()).map((a) => a.dedupKey)).toEqual([`slo:${SLO}:page-1h-5m`]);
  expect(pages()).toHaveLength(1);
  expect(pages()[0]!.form.Body).toContain(SLO);

  const metrics = await (await fetch(`http://127.0.0.1:${monitor.httpPort}/metrics`)).text();
  expect(metrics).toMatch(
    new RegExp(`^slo_rule_firing\\{slo="${SLO}",rule="page-1h-5m",severity="page"\\} 1$`, 'm'),
  );

  async function evaluations(): Promise<number> {
    const text = await (await fetch(`http://127.0.0.1:${monitor.httpPort}/metrics`)).text();
    const m = /^\w*slo_evaluations_total(?:\{[^}]*\})? (\S+)$/m.exec(text);
    return m ? Number(m[1]) : 0;
  }
});
