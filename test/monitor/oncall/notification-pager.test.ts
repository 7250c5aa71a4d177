/**
 * The escalation engine's pager (NotificationPager) against the real notification service
 * (in-process, its own ports) with an SMTP peer and the Twilio stand-in: the README's example
 * category (`oncall-page`, required) and templates (upserted as `templates:sync` would), a token with
 * exactly the scopes the README names. A page made by the engine renders with those templates (the
 * templates are strict: a variable the engine does not send would fail the render), reaches email and
 * SMS with the link and `Reply ACK <code>`, and
 * GetUser gives the phone the code is good from. An unknown user and a wrong token give PagerError
 * `not_found` / `unauthenticated`, not retryable, the token never in the message.
 */
import { createClient, type Client } from '@connectrpc/connect';
import { createConnectTransport } from '@connectrpc/connect-node';
import { TemplateChannel, TemplateService } from '../../../shared/gen/svc/notification/v1/templates_pb';
import { UserService } from '../../../shared/gen/svc/notification/v1/users_pb';
import { InMemoryAlertStore } from '../../../services/monitor/alerts/memory-store';
import { MemoryEscalationStore } from '../../../services/monitor/oncall/escalation-store';
import { PagerError, type PageRequest } from '../../../services/monitor/oncall/pager';
import { NotificationPager } from '../../../services/monitor/notification/notification-client';
import {
  FAST_DELIVERY,
  smtpMailerConfig,
  startNotificationApp,
  type RunningNotificationApp,
} from '../../support/notification-app';
import { startSmtpPeer, type SmtpPeer } from '../../support/smtp-peer';
import { gatewayConfig, startTwilioPeer, type TwilioPeer } from '../../notification/channels/sms/twilio-peer';
import { ManualClock } from '../../support/manual-clock';
import { waitFor } from '../../support/wait';
import { policy, replica } from './escalation-contract';

const PAGER_TOKEN = 'monitor-pager-token-0123456789abcdef';
const ADMIN_TOKEN = 'test-admin-token-0123456789abcdef';
const READER_TOKEN = 'users-reader-token-0123456789abcdef';
const PHONE = '+34600111222';

/** The README "Escalation" example, as the notification service's config and template files. */
const CATEGORY = { name: 'oncall-page', required: true, channels: ['inbox', 'email', 'sms', 'push'] };
const TEMPLATES: Array<[TemplateChannel, Record<string, string>]> = [
  [
    TemplateChannel.EMAIL,
    {
      subject: '[{{ data.severity }}] {{ data.title }}',
      text: '{{ data.summary }}\nAcknowledge: {{ data.ack_url }}\nor reply ACK {{ data.ack_code }} to the SMS',
    },
  ],
  [TemplateChannel.SMS, { text: '{{ data.title }}: {{ data.summary | truncate: 80 }} {{ data.ack_sms }}' }],
  [TemplateChannel.PUSH, { title: '{{ data.title }}', body: '{{ data.summary }}' }],
  [TemplateChannel.INBOX, { title: '{{ data.title }}', body: '{{ data.summary }} {{ data.ack_url }}' }],
];

let smtp: SmtpPeer;
let twilio: TwilioPeer;
let n: RunningNotificationApp;
let pager: NotificationPager;

beforeAll(async () => {
  smtp = await startSmtpPeer();
  twilio = await startTwilioPeer();
  n = await startNotificationApp({
    server: {
      api_tokens: [
        { name: 'monitor-pager', token: PAGER_TOKEN, scopes: ['notify:send', 'users:read'] },
        { name: 'admin', token: ADMIN_TOKEN, scopes: ['*'] },
        { name: 'reader', token: READER_TOKEN, scopes: ['users:read'] },
      ],
    },
    mailer: smtpMailerConfig(smtp.port, { fromEmail: 'oncall@sender.example.com' }),
    sms_backends: [{ name: 'twilio', sms_gateway: gatewayConfig(twilio) }],
    delivery: FAST_DELIVERY,
    notify: { default_locale: 'en', categories: [CATEGORY] },
  } as never);
  const transport = createConnectTransport({
    baseUrl: n.baseUrl,
    httpVersion: '1.1',
    interceptors: [
      (next) => (req) => {
        req.header.set('authorization', `Bearer ${ADMIN_TOKEN}`);
        return next(req);
      },
    ],
  });
  const templates: Client<typeof TemplateService> = createClient(TemplateService, transport);
  for (const [channel, content] of TEMPLATES)
    await templates.upsertTemplate({ category: 'oncall-page', channel, locale: 'en', content });
  const users = createClient(UserService, transport);
  await users.upsertUser({ userId: 'alice', emails: ['alice@example.com'], phones: [PHONE], locale: 'en' });
  pager = new NotificationPager({ grpc_address: n.grpcAddress, api_token: PAGER_TOKEN, timeout_ms: 5000 });
}, 60_000);

afterAll(async () => {
  pager?.close();
  await n?.close();
  await smtp?.stop();
  await twilio?.close();
});

test('GetUser gives the phones the SMS code is good from', async () => {
  await expect(pager.userPhones('alice')).resolves.toEqual([PHONE]);
});

test('a page of the engine renders with the README templates and reaches email and SMS with the link and ACK code, once per idempotency key', async () => {
  const clock = new ManualClock();
  const sent: PageRequest[] = [];
  const r = replica(
    { alerts: new InMemoryAlertStore(), store: new MemoryEscalationStore() },
    {
      clock,
      wire: {
        userPhones: (u) => pager.userPhones(u),
        page: (req) => {
          sent.push(req);
          return pager.page(req);
        },
      },
      policies: [
        policy({ name: 'db', match: [], steps: [{ targets: [{ user: 'alice' }], wait_minutes: 5 }] }),
      ],
    },
  );
  const before = { mails: smtp.acceptedCount, texts: twilio.accepted };
  // Untrusted text in the title: emoji, CJK, right-to-left, markup.
  const id = await r.raise('db <script>x</script> 🔥 数据库 قاعدة');
  await r.engine.tick();

  const state = (await r.engine.states([id]))[0]!;
  expect(state.pages).toEqual([
    expect.objectContaining({ userId: 'alice', channels: expect.arrayContaining(['email', 'sms', 'inbox']) }),
  ]);
  expect(state.pages[0]!.error).toBeUndefined();

  await waitFor(
    () => smtp.acceptedCount === before.mails + 1 && twilio.accepted === before.texts + 1,
    'the email and the SMS',
  );
  const mail = smtp.received.at(-1)!;
  expect(mail.recipients).toEqual(['alice@example.com']);
  expect(mail.parsed.subject).toBe('[critical] db <script>x</script> 🔥 数据库 قاعدة');
  const link = /Acknowledge: (\S+)/.exec(mail.parsed.text ?? '')?.[1];
  expect(link).toMatch(/^https:\/\/mon\.example\.com\/oncall\/ack\?t=[\w-]+\.[\w-]+$/);
  const code = /reply ACK (\d{6})/.exec(mail.parsed.text ?? '')?.[1];
  expect(code).toMatch(/^\d{6}$/);

  const text = twilio.requests.at(-1)!.form;
  expect(text.To).toBe(PHONE);
  expect(text.Body).toContain(`Reply ACK ${code}`);

  // The code the page carried acknowledges from that phone (GetUser's number at paging time).
  await expect(r.acks.acknowledgeByCode(code!, PHONE)).resolves.toBe('acknowledged');

  // The same page again (another replica retrying after a crash): Notify's idempotency key, no new message.
  // The engine's request exactly (as another replica rebuilds it later): same notification.
  const again = await pager.page(sent[0]!);
  expect(again.created).toBe(false);
  // A new page afterwards proves the service processed everything before it.
  await pager.page({
    userId: 'alice',
    category: 'oncall-page',
    idempotencyKey: `probe-${id}`,
    data: { title: 'probe', severity: 'low', summary: 'p', ack_url: 'u', ack_code: '1', ack_sms: 'a' },
  });
  await waitFor(() => smtp.acceptedCount === before.mails + 2, 'the probe');
  expect(smtp.acceptedCount).toBe(before.mails + 2);
  expect(twilio.accepted).toBe(before.texts + 2);
});

test('an unknown user is PagerError not_found (GetUser and Notify), not retryable', async () => {
  const getUser = await pager.userPhones('ghost').catch((e: unknown) => e);
  expect(getUser).toBeInstanceOf(PagerError);
  expect(getUser).toMatchObject({ code: 'not_found', retryable: false });
  const notify = await pager
    .page({ userId: 'ghost', category: 'oncall-page', idempotencyKey: 'k-ghost', data: {} })
    .catch((e: unknown) => e);
  expect(notify).toMatchObject({ code: 'not_found', retryable: false });
});

test('a wrong token is PagerError unauthenticated, not retryable, and the token is not in the error', async () => {
  const wrong = new NotificationPager({
    grpc_address: n.grpcAddress,
    api_token: 'wrong-token-4711',
    timeout_ms: 5000,
  });
  try {
    const err = await wrong.userPhones('alice').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PagerError);
    expect(err).toMatchObject({ code: 'unauthenticated', retryable: false });
    expect(String((err as Error).message)).not.toContain('wrong-token-4711');
  } finally {
    wrong.close();
  }
});

test('a token without notify:send is PagerError permission_denied on a page', async () => {
  const reader = new NotificationPager({
    grpc_address: n.grpcAddress,
    api_token: READER_TOKEN,
    timeout_ms: 5000,
  });
  try {
    await expect(reader.userPhones('alice')).resolves.toEqual([PHONE]);
    const err = await reader
      .page({ userId: 'alice', category: 'oncall-page', idempotencyKey: 'k-reader', data: {} })
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'permission_denied', retryable: false });
  } finally {
    reader.close();
  }
});
