/**
 * Issue 28 end to end with real processes (build first: `npm run build`): the real notification
 * process (dist, PostgreSQL) with an SMTP peer and the Twilio stand-in, a required category
 * `oncall-page` (inbox, email, sms) with its templates, two users with an email and a phone; three
 * monitor processes (dist) on one PostgreSQL with a schedule (`primary`: ann) and a policy of two
 * steps (the schedule, then bob; the first waits one minute, the smallest wait the config allows, the
 * second 30 so its repeat round stays out of the test; repeat 1).
 *
 * Alert X: step 1 pages ann (an email with a signed link, an SMS with `ACK <code>`), nobody
 * acknowledges, step 2 pages bob; forged links and SMS from the wrong number or with another page's
 * code are refused; bob's `ACK <code>` through the notification service's signed inbound webhook
 * acknowledges X on every live monitor and stops its escalation. Alert Y: the monitor that paged its
 * step 1 is killed (SIGKILL); a survivor pages step 2; bob acknowledges by link, a replayed POST
 * changes nothing. At the peers, each page (alert, person, step) arrived exactly once.
 *
 * No timing assertions: every wait is on observable state, with generous bounds (the steps last a
 * minute of real time; the suite takes about three).
 */
import { randomBytes } from 'node:crypto';
import { createClient, type Client } from '@connectrpc/connect';
import { createConnectTransport } from '@connectrpc/connect-node';
import { Client as PgClient } from 'pg';

import { AlertService, TimelineEventKind } from '../../shared/gen/svc/monitor/v1/alerts_pb';
import { AlertState, MonitorService } from '../../shared/gen/svc/monitor/v1/monitor_pb';
import { TemplateChannel, TemplateService } from '../../shared/gen/svc/notification/v1/templates_pb';
import { UserService } from '../../shared/gen/svc/notification/v1/users_pb';
import { AckLinks } from '../../services/monitor/oncall/ack-links';
import { createTestDatabase } from '../support/database';
import { emailServiceEnv } from '../support/email-service';
import { startServiceProcess, type ServiceProcess } from '../support/service-process';
import { startSmtpPeer, type SmtpPeer } from '../support/smtp-peer';
import { SMS_BACKEND, smsServiceEnv } from '../support/sms-service';
import { until, waitFor } from '../support/wait';
import { postSignedForm, startTwilioPeer, type TwilioPeer } from '../notification/channels/sms/twilio-peer';

jest.setTimeout(600_000);

const MONITOR_TOKEN = 'oncall-monitor-token-0123456789abcdef';
const ADMIN_TOKEN = 'oncall-admin-token-0123456789abcdef';
const SIGNING_KEY = 'oncall-e2e-signing-key-0123456789abcdef';
const PUBLIC_BASE = 'https://monitor.example.test';
const PEOPLE = {
  ann: { email: 'ann@example.test', phone: '+15551110001' },
  bob: { email: 'bob@example.test', phone: '+15552220002' },
} as const;
type Person = keyof typeof PEOPLE;
const STRANGER = '+15559990009';

let notificationDb: { url: string; drop(): Promise<void> };
let monitorDb: { url: string; drop(): Promise<void> };
let smtp: SmtpPeer;
let twilio: TwilioPeer;
let notification: ServiceProcess;
const monitors = new Map<string, ServiceProcess>();
const alertClients = new Map<
  string,
  { monitor: Client<typeof MonitorService>; alerts: Client<typeof AlertService> }
>();
let pg: PgClient;

/** One page as it reached a peer: `alert`, `step` (1-based) and `round` from the template's text. */
interface Arrived {
  channel: 'email' | 'sms';
  to: Person;
  alert: string;
  round: string;
  step: string;
  ackUrl?: string;
  code: string;
}

const personOf = (address: string): Person | undefined =>
  (Object.keys(PEOPLE) as Person[]).find((p) => PEOPLE[p].email === address || PEOPLE[p].phone === address);

/** Every page that reached the peers, parsed from the templates' text (see beforeAll). */
function arrived(): Arrived[] {
  const out: Arrived[] = [];
  for (const mail of smtp.received) {
    const text = mail.parsed.text ?? '';
    const m = /page alert=(\S+) round=(\d+) step=(\d+)\nAcknowledge: (\S+)\nor text ACK (\d+)/.exec(text);
    if (!m) continue;
    const to = personOf(mail.recipients[0]!.toLowerCase());
    out.push({
      channel: 'email',
      to: to!,
      alert: m[1]!,
      round: m[2]!,
      step: m[3]!,
      ackUrl: m[4]!,
      code: m[5]!,
    });
  }
  for (const req of twilio.requests) {
    const m = /^page alert=(\S+) round=(\d+) step=(\d+) Reply ACK (\d+)$/.exec(req.form.Body ?? '');
    if (!m) continue;
    out.push({
      channel: 'sms',
      to: personOf(req.form.To!)!,
      alert: m[1]!,
      round: m[2]!,
      step: m[3]!,
      code: m[4]!,
    });
  }
  return out;
}

const pagesOf = (alert: string) => arrived().filter((a) => a.alert === alert);
/** `person:round:step:channel` of each page of an alert, sorted, duplicates kept. */
const pageKeys = (alert: string) =>
  pagesOf(alert)
    .map((a) => `${a.to}:r${a.round}:s${a.step}:${a.channel}`)
    .sort();

async function escalation(
  alertId: string,
): Promise<{ status: string; reason: string; round: number; step: number }> {
  const { rows } = await pg.query<{ status: string; reason: string; round: number; step: number }>(
    'SELECT status, reason, round, step FROM monitor_oncall_escalations WHERE alert_id = $1',
    [alertId],
  );
  return rows[0] ?? { status: 'none', reason: '', round: -1, step: -1 };
}

async function startMonitor(name: string): Promise<void> {
  const grpc = `127.0.0.1:${notification.grpcPort}`;
  const proc = await startServiceProcess(
    'monitor',
    {
      SVC_MONITOR__DATABASE__URL: monitorDb.url,
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
            name: 'pages',
            match: ['tier="page"'],
            steps: [
              { targets: [{ schedule: 'primary' }], wait_minutes: 1 },
              // Long enough that the repeat round (ann again) cannot start while the test still
              // checks that nobody was paged twice: a loaded CI machine once took over a minute
              // between bob's page and his acknowledgement.
              { targets: [{ user: 'bob' }], wait_minutes: 30 },
            ],
            repeat: 1,
          },
        ],
        paging: {
          grpc_address: grpc,
          api_token: MONITOR_TOKEN,
          public_base_url: PUBLIC_BASE,
          signing_key: SIGNING_KEY,
          tick_seconds: 1,
          claim_lease_seconds: 10,
        },
        inbound_sms: {
          enabled: true,
          grpc_address: grpc,
          api_token: MONITOR_TOKEN,
          reconnect_min_ms: 50,
          reconnect_max_ms: 500,
        },
      }),
    },
    { startTimeoutMs: 180_000 },
  );
  monitors.set(name, proc);
  const transport = createConnectTransport({
    baseUrl: `http://127.0.0.1:${proc.httpPort}`,
    httpVersion: '1.1',
  });
  alertClients.set(name, {
    monitor: createClient(MonitorService, transport),
    alerts: createClient(AlertService, transport),
  });
}

beforeAll(async () => {
  [notificationDb, monitorDb] = await Promise.all([
    createTestDatabase('oncall_n'),
    createTestDatabase('oncall_m'),
  ]);
  smtp = await startSmtpPeer();
  twilio = await startTwilioPeer();
  notification = await startServiceProcess(
    'notification',
    {
      ...emailServiceEnv(smtp.port, { url: notificationDb.url }, { delivery: { poll_interval_ms: 200 } }),
      ...smsServiceEnv(twilio),
      SVC_NOTIFICATION__SERVER__API_TOKENS: JSON.stringify([
        { name: 'monitor', token: MONITOR_TOKEN, scopes: ['notify:send', 'users:read', 'sms:inbound'] },
        {
          name: 'admin',
          token: ADMIN_TOKEN,
          scopes: ['users:write', 'users:read', 'templates:write', 'templates:read'],
        },
      ]),
      SVC_NOTIFICATION__NOTIFY__CATEGORIES: JSON.stringify([
        { name: 'oncall-page', required: true, channels: ['inbox', 'email', 'sms'] },
      ]),
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
  const users = createClient(UserService, transport);
  const page = 'page alert={{ data.alert_id }} round={{ data.round }} step={{ data.step }}';
  await templates.upsertTemplate({
    category: 'oncall-page',
    channel: TemplateChannel.EMAIL,
    locale: 'en',
    content: {
      subject: '[{{ data.severity }}] {{ data.title }}',
      text: `${page}\nAcknowledge: {{ data.ack_url }}\nor text ACK {{ data.ack_code }}`,
    },
  });
  await templates.upsertTemplate({
    category: 'oncall-page',
    channel: TemplateChannel.SMS,
    locale: 'en',
    content: { text: `${page} {{ data.ack_sms }}` },
  });
  await templates.upsertTemplate({
    category: 'oncall-page',
    channel: TemplateChannel.INBOX,
    locale: 'en',
    content: { title: '{{ data.title }}', body: '{{ data.summary }} {{ data.ack_url }}' },
  });
  for (const [userId, p] of Object.entries(PEOPLE))
    await users.upsertUser({ userId, emails: [p.email], phones: [p.phone], locale: 'en' });

  pg = new PgClient({ connectionString: monitorDb.url });
  for (const name of ['a', 'b', 'c']) await startMonitor(name);
  await pg.connect();
}, 600_000);

afterAll(async () => {
  for (const p of monitors.values()) await p.stop('SIGKILL', 1000);
  await notification?.stop();
  await pg?.end().catch(() => undefined);
  await smtp?.stop();
  await twilio?.close();
  await notificationDb?.drop();
  await monitorDb?.drop();
});

const live = () => [...alertClients.keys()].filter((n) => monitors.has(n));
const client = (name: string) => alertClients.get(name)!;

/** Posts an inbound SMS to the notification process's webhook, signed as Twilio signs it. */
async function inboundSms(from: string, body: string): Promise<void> {
  const url = `http://127.0.0.1:${notification.httpPort}/webhooks/sms/${SMS_BACKEND}/inbound`;
  const answer = await postSignedForm(url, url, {
    MessageSid: `SM${randomBytes(16).toString('hex')}`,
    From: from,
    To: '+15550001111',
    Body: body,
  });
  expect(answer.status).toBe(200);
}

/** The number of `sms acknowledgment refused` lines a monitor logged. */
const refusedLogged = (name: string) =>
  monitors.get(name)!.logs.filter((l) => l.includes('sms acknowledgment refused')).length;

/** A link's token moved to the monitor `name` (the public origin replaced, as a proxy would). */
function local(ackUrl: string, name: string): string {
  const u = new URL(ackUrl);
  return `http://127.0.0.1:${monitors.get(name)!.httpPort}${u.pathname}${u.search}`;
}
const tokenOf = (ackUrl: string) => new URL(ackUrl).searchParams.get('t')!;

async function postLink(url: string, token: string): Promise<{ status: number; body: string }> {
  const res = await fetch(url.split('?')[0]!, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ t: token }).toString(),
  });
  return { status: res.status, body: await res.text() };
}

async function stateOn(name: string, alertId: string) {
  return (await client(name).alerts.getAlert({ alertId })).alert!;
}

let alertX = '';
let alertY = '';
let killed = '';

it('step 1 pages ann by email (a signed link) and SMS (ACK <code>) for both alerts', async () => {
  const raise = (name: string, title: string) =>
    client(name).monitor.sendAlert({
      title,
      message: 'checkout 🛒 結帳 الدفع',
      severity: 'critical',
      context: { tier: 'page', service: title },
    });
  [alertX, alertY] = (await Promise.all([raise('a', 'checkout down'), raise('b', 'search down')])).map(
    (r) => r.alertId,
  );
  for (const id of [alertX, alertY])
    await waitFor(() => pagesOf(id).length === 2, `step 1 of ${id} at the peers`, 120_000);
  for (const id of [alertX, alertY]) {
    expect(pageKeys(id)).toEqual(['ann:r1:s1:email', 'ann:r1:s1:sms']);
    const [email, sms] = [
      pagesOf(id).find((p) => p.channel === 'email')!,
      pagesOf(id).find((p) => p.channel === 'sms')!,
    ];
    // The same page: the code in the email is the SMS's.
    expect(email.code).toBe(sms.code);
    expect(email.ackUrl!.startsWith(`${PUBLIC_BASE}/oncall/ack?t=`)).toBe(true);
  }
  // The monitor that paged is the one holding the tick; note it for the kill below.
  const pagedBy = [...monitors].filter(([, p]) =>
    p.logs.some((l) => l.includes(alertY) && l.includes('"paged"')),
  );
  expect(pagedBy.length).toBeGreaterThanOrEqual(1);
  killed = pagedBy[0]![0];
});

it('the monitor that paged step 1 is killed (SIGKILL) mid-escalation', async () => {
  expect(await monitors.get(killed)!.stop('SIGKILL')).toBeNull();
  monitors.delete(killed);
  expect(live()).toHaveLength(2);
});

it("refuses a forged, tampered or expired link and SMS from another number or with another page's code", async () => {
  const someone = live()[0]!;
  const annX = pagesOf(alertX).find((p) => p.channel === 'email')!;
  const annY = pagesOf(alertY).find((p) => p.channel === 'email')!;
  const url = local(annX.ackUrl!, someone);
  const token = tokenOf(annX.ackUrl!);
  const [payload, mac] = token.split('.') as [string, string];
  const otherPayload = tokenOf(annY.ackUrl!).split('.')[0]!;
  const expired = new AckLinks({ signingKey: SIGNING_KEY, publicBaseUrl: PUBLIC_BASE }).token(
    alertX,
    'ann',
    Date.now() - 60_000,
  );
  const wrongKey = new AckLinks({ signingKey: 'x'.repeat(40), publicBaseUrl: PUBLIC_BASE }).token(
    alertX,
    'ann',
    Date.now() + 3_600_000,
  );
  for (const bad of [
    payload, // unsigned
    `${payload}.${mac.slice(0, -2)}${mac.endsWith('A') ? 'BB' : 'AA'}`, // forged mac
    `${otherPayload}.${mac}`, // another alert's payload under this mac
    wrongKey,
    expired,
  ]) {
    const answer = await postLink(url, bad);
    expect(answer.status).toBe(403);
  }
  // The GET of a good link only shows the form.
  const get = await fetch(url);
  expect(get.status).toBe(200);
  expect(await get.text()).toContain('<form method="post"');

  // SMS: ann's code from a stranger's number; ann's code of X from bob's number (not paged yet).
  const before = live().map(refusedLogged);
  await inboundSms(STRANGER, `ACK ${annX.code}`);
  await inboundSms(PEOPLE.bob.phone, `ACK ${annX.code}`);
  for (const [i, name] of live().entries())
    await waitFor(() => refusedLogged(name) >= before[i]! + 2, `${name} refused both`, 60_000);
  for (const name of live()) {
    expect((await stateOn(name, alertX)).state).toBe(AlertState.TRIGGERED);
    expect((await stateOn(name, alertY)).state).toBe(AlertState.TRIGGERED);
  }
});

it('step 2 pages bob for both alerts (the survivors carry on), nobody twice', async () => {
  for (const id of [alertX, alertY])
    await waitFor(() => pagesOf(id).length === 4, `step 2 of ${id} at the peers`, 240_000);
  for (const id of [alertX, alertY]) {
    expect(pageKeys(id)).toEqual(['ann:r1:s1:email', 'ann:r1:s1:sms', 'bob:r1:s2:email', 'bob:r1:s2:sms']);
    expect(await escalation(id)).toMatchObject({ status: 'active', round: 0, step: 1 });
  }
  // Each page's timeline entry is there once, whoever sent it. The entry is written after the page
  // is handed to the notification service, so it may trail the page at the peers by a moment.
  const pagedOn = async () =>
    (await stateOn(live()[0]!, alertX)).timeline
      .filter((t) => t.kind === TimelineEventKind.NOTIFIED && t.detail.startsWith('paged'))
      .map((t) => [t.actor, t.detail]);
  await until(async () => (await pagedOn()).length >= 2, "bob's page on the timeline", 60_000);
  const paged = await pagedOn();
  expect(paged).toEqual([
    ['ann', 'paged (pages step 1) via inbox, email, sms'],
    ['bob', 'paged (pages step 2) via inbox, email, sms'],
  ]);
});

it("another page's code from bob is refused; bob's ACK <code> acknowledges X on every live monitor and stops it", async () => {
  const annY = pagesOf(alertY).find((p) => p.channel === 'sms')!;
  const bobX = pagesOf(alertX).find((p) => p.channel === 'sms' && p.to === 'bob')!;
  const before = live().map(refusedLogged);
  await inboundSms(PEOPLE.bob.phone, `ACK ${annY.code}`);
  for (const [i, name] of live().entries())
    await waitFor(() => refusedLogged(name) >= before[i]! + 1, `${name} refused the code of Y`, 60_000);
  await inboundSms(PEOPLE.bob.phone, `ack ${bobX.code}`);
  for (const name of live()) {
    await until(
      async () => (await stateOn(name, alertX)).state === AlertState.ACKNOWLEDGED,
      `X acknowledged on ${name}`,
      60_000,
    );
    const x = await stateOn(name, alertX);
    expect(x.acknowledgedBy).toBe('bob');
    const acks = x.timeline.filter((t) => t.kind === TimelineEventKind.ACKNOWLEDGED);
    expect(acks.map((t) => [t.actor, t.detail])).toEqual([['bob', 'sms from +1555****002']]);
    expect((await stateOn(name, alertY)).state).toBe(AlertState.TRIGGERED);
  }
  await until(
    async () => (await escalation(alertX)).status === 'stopped',
    'the escalation of X stopped',
    60_000,
  );
  expect(await escalation(alertX)).toMatchObject({ status: 'stopped', reason: 'acknowledged' });
});

it('bob acknowledges Y by link; a replayed POST answers already acknowledged and records nothing', async () => {
  const bobY = pagesOf(alertY).find((p) => p.channel === 'email' && p.to === 'bob')!;
  const [first, second] = live() as [string, string];
  const ok = await postLink(local(bobY.ackUrl!, first), tokenOf(bobY.ackUrl!));
  expect(ok.status).toBe(200);
  expect(ok.body).toContain('Acknowledged');
  const again = await postLink(local(bobY.ackUrl!, second), tokenOf(bobY.ackUrl!));
  expect(again.status).toBe(200);
  expect(again.body.toLowerCase()).toContain('already acknowledged');
  for (const name of live()) {
    const y = await stateOn(name, alertY);
    expect(y.state).toBe(AlertState.ACKNOWLEDGED);
    expect(
      y.timeline.filter((t) => t.kind === TimelineEventKind.ACKNOWLEDGED).map((t) => [t.actor, t.detail]),
    ).toEqual([['bob', 'link']]);
  }
  await until(
    async () => (await escalation(alertY)).status === 'stopped',
    'the escalation of Y stopped',
    60_000,
  );
  // Nobody paged twice, and nothing after the acknowledgments: the pages are still exactly the two steps.
  for (const id of [alertX, alertY])
    expect(pageKeys(id)).toEqual(['ann:r1:s1:email', 'ann:r1:s1:sms', 'bob:r1:s2:email', 'bob:r1:s2:sms']);
});
