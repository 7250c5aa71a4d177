/**
 * "Tell this user about this", whole: the real notification service in-process with its users,
 * preferences, templates and Notify areas wired by the composition root, an SMTP peer and the Twilio
 * stand-in, driven only through the public RPCs (Connect) and HTTP routes, as another team would.
 * The areas have unit tests of their own; this file checks that they meet: preferences and contact
 * points decide the fan-out, the user's locale picks the template, a strict variable records
 * nothing, the unsubscribe link in a real email turns the category off, and DeleteUser leaves
 * nothing to read back anywhere.
 */
import { Code, ConnectError, createClient, type Client } from '@connectrpc/connect';
import { createConnectTransport } from '@connectrpc/connect-node';
import { toJson } from '@bufbuild/protobuf';

import { InboxService } from '../../shared/gen/svc/notification/v1/inbox_pb';
import {
  DeliveryStatus,
  GetDeliveryResponseSchema,
  NotificationService,
  WatchDeliveriesResponseSchema,
} from '../../shared/gen/svc/notification/v1/notification_pb';
import { NotifyService, SkipReason } from '../../shared/gen/svc/notification/v1/notify_pb';
import { TemplateChannel, TemplateService } from '../../shared/gen/svc/notification/v1/templates_pb';
import { UserService } from '../../shared/gen/svc/notification/v1/users_pb';
import { startSmtpPeer, type SmtpPeer } from '../support/smtp-peer';
import {
  FAST_DELIVERY,
  smtpMailerConfig,
  startNotificationApp,
  type RunningNotificationApp,
} from '../support/notification-app';
import { until, waitFor } from '../support/wait';
import { adminAuthConfig, authed, hsToken } from './admin/harness';
import type { AdminInboxJson } from '../../services/notification/admin/gateway';
import { gatewayConfig, startTwilioPeer, type TwilioPeer } from './channels/sms/twilio-peer';

const CATEGORIES = [
  // SMS is available for comments but off until the user turns it on.
  { name: 'comments', channels: ['inbox', 'email', 'sms'], defaults: { sms: false } },
  { name: 'security', channels: ['inbox', 'email', 'sms'], required: true },
];

let smtp: SmtpPeer;
let twilio: TwilioPeer;
let n: RunningNotificationApp;
let users: Client<typeof UserService>;
let templates: Client<typeof TemplateService>;
let notify: Client<typeof NotifyService>;
let inbox: Client<typeof InboxService>;
let deliveries: Client<typeof NotificationService>;

beforeAll(async () => {
  smtp = await startSmtpPeer();
  twilio = await startTwilioPeer();
  n = await startNotificationApp({
    mailer: smtpMailerConfig(smtp.port),
    sms_backends: [{ name: 'twilio', sms_gateway: gatewayConfig(twilio) }],
    delivery: FAST_DELIVERY,
    admin: { auth: adminAuthConfig() },
    notify: {
      default_locale: 'en',
      categories: CATEGORIES,
      unsubscribe: {
        signing_key: 'integration-unsubscribe-key-0123456789abcdef',
        public_base_url: 'https://notify.example.test',
      },
    },
  } as never);
  const transport = createConnectTransport({ baseUrl: n.baseUrl, httpVersion: '1.1' });
  users = createClient(UserService, transport);
  templates = createClient(TemplateService, transport);
  notify = createClient(NotifyService, transport);
  inbox = createClient(InboxService, transport);
  deliveries = createClient(NotificationService, transport);

  // Comments: Spanish and English inbox and email, no SMS template in Spanish (English is the
  // fallback's end). Security: English only.
  const put = (category: string, channel: TemplateChannel, locale: string, content: Record<string, string>) =>
    templates.upsertTemplate({ category, channel, locale, content });
  await put('comments', TemplateChannel.INBOX, 'es', {
    title: 'Nuevo comentario de {{ data.author }}',
    body: '«{{ data.text }}»',
  });
  await put('comments', TemplateChannel.INBOX, 'en', {
    title: 'New comment from {{ data.author }}',
    body: '{{ data.text }}',
  });
  await put('comments', TemplateChannel.EMAIL, 'es', {
    subject: 'Nuevo comentario de {{ data.author }}',
    html: '<p style="color: #333">{{ data.author }} escribió: {{ data.text }}</p>',
  });
  await put('comments', TemplateChannel.SMS, 'en', { text: '{{ data.author }}: {{ data.text }}' });
  await put('security', TemplateChannel.EMAIL, 'en', {
    subject: 'New sign-in from {{ data.city }}',
    html: '<p>Someone signed in from {{ data.city }}.</p>',
  });
  await put('security', TemplateChannel.SMS, 'en', { text: 'Sign-in from {{ data.city }}' });
  await put('security', TemplateChannel.INBOX, 'en', { title: 'New sign-in', body: '{{ data.city }}' });

  await users.upsertUser({
    userId: 'jane',
    emails: ['Jane@Example.COM'],
    phones: ['+34600111222'],
    locale: 'es-MX',
    timeZone: 'Europe/Madrid',
  });
  // A user with no phone and no email: only the inbox can reach them.
  await users.upsertUser({ userId: 'omar', locale: 'ar' });
}, 60_000);

afterAll(async () => {
  await n?.close();
  await smtp?.stop();
  await twilio?.close();
});

async function codeOf(p: Promise<unknown>): Promise<ConnectError> {
  try {
    await p;
  } catch (err) {
    return ConnectError.from(err);
  }
  throw new Error('expected the call to fail');
}

test('preferences, contact points and the locale decide the fan-out; SMS off by default is skipped with its reason', async () => {
  const { notification } = await notify.notify({
    userId: 'jane',
    category: 'comments',
    data: { author: 'Zoë 🦊', text: 'مرحبا 你好' },
  });
  const lines = notification!.channels.map((c) => [c.channel, c.skipped, c.locale]);
  expect(lines).toEqual(
    expect.arrayContaining([
      [TemplateChannel.INBOX, SkipReason.UNSPECIFIED, 'es'],
      [TemplateChannel.EMAIL, SkipReason.UNSPECIFIED, 'es'],
      [TemplateChannel.SMS, SkipReason.PREFERENCE_OFF, ''],
    ]),
  );
  const email = notification!.channels.find((c) => c.channel === TemplateChannel.EMAIL)!;
  expect(email.contact).not.toContain('jane@example.com'); // masked
  await waitFor(() => smtp.received.length > 0, 'the email at the SMTP peer', 10_000);
  const mail = smtp.received.at(-1)!;
  // The domain is lower-cased, the local part kept as given (users/README.md).
  expect(mail.recipients).toEqual(['Jane@example.com']);
  expect(mail.parsed.subject).toBe('Nuevo comentario de Zoë 🦊');
  // CSS inlined stays inline, and a text part exists although the template gave only HTML.
  expect(String(mail.parsed.html)).toContain('color: #333');
  expect(mail.parsed.text).toContain('مرحبا 你好');

  const page = await inbox.getInbox({ userId: 'jane' });
  expect(page.messages[0]!.title).toBe('Nuevo comentario de Zoë 🦊');
  expect(twilio.requests).toHaveLength(0);

  const got = await notify.getNotification({ id: notification!.id });
  await until(
    async () =>
      (await notify.getNotification({ id: notification!.id })).notification!.channels.find(
        (c) => c.channel === TemplateChannel.EMAIL,
      )!.deliveryStatus === DeliveryStatus.SENT,
    'the email delivery SENT',
    10_000,
  );
  expect(got.notification!.userId).toBe('jane');
});

test('a user with no contact point gets the inbox; email and SMS are skipped as NO_CONTACT_POINT, not errors', async () => {
  const { notification } = await notify.notify({
    userId: 'omar',
    category: 'security',
    data: { city: 'القاهرة' },
  });
  const byChannel = new Map(notification!.channels.map((c) => [c.channel, c]));
  expect(byChannel.get(TemplateChannel.INBOX)!.skipped).toBe(SkipReason.UNSPECIFIED);
  // Arabic falls back to the default locale (no Arabic template).
  expect(byChannel.get(TemplateChannel.INBOX)!.locale).toBe('en');
  expect(byChannel.get(TemplateChannel.EMAIL)!.skipped).toBe(SkipReason.NO_CONTACT_POINT);
  expect(byChannel.get(TemplateChannel.SMS)!.skipped).toBe(SkipReason.NO_CONTACT_POINT);
});

test('a required category cannot be turned off, and reaches the user whatever else they chose', async () => {
  const refused = await codeOf(
    users.updatePreferences({
      userId: 'jane',
      preferences: [{ category: 'security', channel: 'email', enabled: false }],
    }),
  );
  expect(refused.code).toBe(Code.InvalidArgument);
  expect(refused.rawMessage).toContain('security');

  const before = twilio.requests.length;
  const { notification } = await notify.notify({
    userId: 'jane',
    category: 'security',
    data: { city: 'Lyon' },
  });
  expect(notification!.channels.every((c) => c.skipped === SkipReason.UNSPECIFIED)).toBe(true);
  await waitFor(() => twilio.requests.length > before, 'the security SMS at the stand-in', 10_000);
  expect(twilio.requests.at(-1)!.form).toMatchObject({ To: '+34600111222', Body: 'Sign-in from Lyon' });
  // A required category's email carries no unsubscribe link.
  await waitFor(
    () => smtp.received.some((m) => m.parsed.subject === 'New sign-in from Lyon'),
    'the security email',
    10_000,
  );
  const mail = smtp.received.find((m) => m.parsed.subject === 'New sign-in from Lyon')!;
  expect(mail.parsed.headers.has('list-unsubscribe')).toBe(false);
});

test('a variable missing from data is INVALID_ARGUMENT naming it, and nothing is recorded or sent', async () => {
  const mails = smtp.received.length;
  const unread = (await inbox.countUnread({ userId: 'jane' })).unreadCount;
  const listed = (await notify.listNotifications({ userId: 'jane' })).notifications.length;
  const err = await codeOf(notify.notify({ userId: 'jane', category: 'comments', data: { author: 'Ana' } }));
  expect(err.code).toBe(Code.InvalidArgument);
  expect(err.rawMessage).toContain('data.text');
  expect((await inbox.countUnread({ userId: 'jane' })).unreadCount).toBe(unread);
  expect((await notify.listNotifications({ userId: 'jane' })).notifications).toHaveLength(listed);
  expect(smtp.received.length).toBe(mails);
});

test('the one-click unsubscribe link of a real email turns that category email off (a GET changes nothing)', async () => {
  await notify.notify({
    userId: 'jane',
    category: 'comments',
    data: { author: 'Kai', text: 'unsubscribe me' },
  });
  await waitFor(
    () => smtp.received.some((m) => m.parsed.subject === 'Nuevo comentario de Kai'),
    'the email',
    10_000,
  );
  const raw = smtp.received.find((m) => m.parsed.subject === 'Nuevo comentario de Kai')!.raw;
  // The headers as written on the wire (unfolded), not as a parser interprets them.
  const head = raw
    .toString('utf8')
    .split('\r\n\r\n')[0]!
    .replace(/\r\n[ \t]+/g, ' ');
  expect(head).toMatch(/^List-Unsubscribe-Post: List-Unsubscribe=One-Click$/m);
  const link = /^List-Unsubscribe: <https:\/\/notify\.example\.test(\/[^>]+)>$/m.exec(head);
  expect(link).not.toBeNull();
  // The public origin is a proxy in production; here the path goes to the HTTP port directly.
  const local = `${n.baseUrl}${link![1]!}`;

  const emailOn = async () =>
    (await users.getPreferences({ userId: 'jane' })).preferences.find(
      (p) => p.category === 'comments' && p.channel === 'email',
    )!.enabled;
  expect((await fetch(local)).status).toBe(200);
  expect(await emailOn()).toBe(true);

  const res = await fetch(local, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: 'List-Unsubscribe=One-Click',
  });
  expect(res.status).toBe(200);
  expect(await emailOn()).toBe(false);

  const { notification } = await notify.notify({
    userId: 'jane',
    category: 'comments',
    data: { author: 'Kai', text: 'again' },
  });
  expect(notification!.channels.find((c) => c.channel === TemplateChannel.EMAIL)!.skipped).toBe(
    SkipReason.PREFERENCE_OFF,
  );
});

test('DeleteUser leaves nothing of the user to read back: user, inbox, notifications, topics, delivery content', async () => {
  // Where the deliveries' events start: the cursor of a watch opened before them (a memory store's
  // log is numbered past every earlier process's, so "0" would be older than its horizon: a reset).
  let start = '';
  for await (const frame of deliveries.watchDeliveries({})) {
    start = frame.cursor;
    break;
  }
  await users.upsertUser({
    userId: 'del',
    emails: ['del@example.com'],
    phones: ['+34600999888'],
    // Spanish: the comments email exists only in Spanish (SMS falls back to English).
    locale: 'es',
  });
  await users.subscribeTopic({ topic: 'news', userIds: ['del', 'jane'] });
  await users.updatePreferences({
    userId: 'del',
    preferences: [{ category: 'comments', channel: 'sms', enabled: true }],
  });
  const { notification } = await notify.notify({
    userId: 'del',
    category: 'comments',
    data: { author: 'Secret Author', text: 'secret text 🤫' },
  });
  const deliveryIds = notification!.channels
    .filter((c) => c.channel !== TemplateChannel.INBOX)
    .map((c) => c.messageId);
  expect(deliveryIds).toHaveLength(2);
  await until(
    async () =>
      (await Promise.all(deliveryIds.map((id) => deliveries.getDelivery({ id })))).every(
        (d) => d.delivery!.status === DeliveryStatus.SENT,
      ),
    'both deliveries SENT',
    10_000,
  );

  await users.deleteUser({ userId: 'del' });

  expect((await codeOf(users.getUser({ userId: 'del' }))).code).toBe(Code.NotFound);
  expect((await inbox.getInbox({ userId: 'del' })).messages).toHaveLength(0);
  const listed = await notify
    .listNotifications({ userId: 'del' })
    .catch((e: unknown) => ConnectError.from(e));
  if (listed instanceof ConnectError) expect(listed.code).toBe(Code.NotFound);
  else expect(listed.notifications).toHaveLength(0);
  const gone = await notify
    .getNotification({ id: notification!.id })
    .catch((e: unknown) => ConnectError.from(e));
  expect(gone instanceof ConnectError ? gone.code : 'present').toBe(Code.NotFound);
  expect((await users.listTopicSubscribers({ topic: 'news' })).userIds).toEqual(['jane']);
  // The delivery records stay (ids and statuses, for the operator's counts) but hold nothing personal.
  for (const id of deliveryIds) {
    const text = JSON.stringify(toJson(GetDeliveryResponseSchema, await deliveries.getDelivery({ id })));
    expect(text).not.toMatch(/del@example|\+34600999888|999888|Secret Author|secret text/);
  }
  // The delivery event log replays nothing personal either.
  const frames: string[] = [];
  const abort = new AbortController();
  const watching = (async () => {
    try {
      for await (const frame of deliveries.watchDeliveries(
        { afterCursor: start },
        { signal: abort.signal },
      )) {
        frames.push(JSON.stringify(toJson(WatchDeliveriesResponseSchema, frame)));
      }
    } catch {
      // aborted
    }
  })();
  // Replayed until the SENT change of each of the user's deliveries has come by.
  await waitFor(
    () => deliveryIds.every((id) => frames.some((f) => f.includes(id) && f.includes('DELIVERY_STATUS_SENT'))),
    "the replay of the user's delivery events",
    10_000,
  );
  abort.abort();
  await watching;
  expect(frames.join('\n')).not.toMatch(/del@example|\+34600999888|Secret Author|secret text/);
  // The admin routes the user signs in to read the same: an empty inbox, preferences back to the defaults.
  const token = await hsToken('del');
  const page = (await (
    await fetch(`${n.baseUrl}/admin/notifications/inbox`, authed(token))
  ).json()) as AdminInboxJson;
  expect(page).toMatchObject({ unread_count: 0, notifications: [] });
  const prefs = await (await fetch(`${n.baseUrl}/admin/notifications/preferences`, authed(token))).text();
  expect(prefs).not.toContain('"chosen":true');
  expect(prefs).toContain('comments');
  // The device token and addresses are free for another user again.
  await users.upsertUser({ userId: 'del2', emails: ['del@example.com'] });
});

test('a DeleteUser that lands after a Notify read the user and before it wrote leaves nothing of it either', async () => {
  // The race, made certain: the Notify's read of the user returns it, and DeleteUser runs to its end
  // (row and every eraser) before that Notify writes anything. Before, its inbox message, its
  // notification and its deliveries (content and full address) were written after the erasers had
  // run, and stayed.
  await users.upsertUser({ userId: 'race-🦊', emails: ['race@example.com'], phones: ['+34600777666'] });
  const directory = n.app.users;
  const getUser = directory.getUser.bind(directory);
  directory.getUser = async (userId: string) => {
    const user = await getUser(userId);
    if (userId === 'race-🦊') {
      directory.getUser = getUser;
      await directory.deleteUser(userId);
    }
    return user;
  };
  let notification;
  try {
    ({ notification } = await notify.notify({
      userId: 'race-🦊',
      category: 'security',
      data: { city: 'סוד 秘密 🤫' },
    }));
  } finally {
    directory.getUser = getUser;
  }
  const deliveryIds = notification!.channels
    .filter((c) => c.channel !== TemplateChannel.INBOX && c.messageId)
    .map((c) => c.messageId);
  expect(deliveryIds).toHaveLength(2);

  expect((await codeOf(users.getUser({ userId: 'race-🦊' }))).code).toBe(Code.NotFound);
  expect((await inbox.getInbox({ userId: 'race-🦊' })).messages).toHaveLength(0);
  expect((await notify.listNotifications({ userId: 'race-🦊' })).notifications).toHaveLength(0);
  expect((await codeOf(notify.getNotification({ id: notification!.id }))).code).toBe(Code.NotFound);
  for (const id of deliveryIds) {
    const text = JSON.stringify(toJson(GetDeliveryResponseSchema, await deliveries.getDelivery({ id })));
    expect(text).not.toMatch(/race@example|\+34600777666|777666|סוד|秘密/);
  }
});
