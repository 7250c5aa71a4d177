/**
 * "When to notify" (issue 26) across two replicas: two in-process notification services on one
 * PostgreSQL database (every store in the database), real templates, an SMTP peer and the Twilio
 * stand-in, driven only through the public RPCs. Digests, caps and scheduled work are shared through
 * the database: 200 events sent half to each replica make one digest email; a cap of 3 SMS holds
 * across both; a notification scheduled on a replica stopped before it was due is sent once by the
 * other.
 */
import { Code, ConnectError, createClient, type Client } from '@connectrpc/connect';
import { timestampDate } from '@bufbuild/protobuf/wkt';
import { createConnectTransport } from '@connectrpc/connect-node';

import { DeliveryStatus } from '../../shared/gen/svc/notification/v1/notification_pb';
import {
  HoldReason,
  NotificationStatus,
  NotifyService,
  SkipReason,
  type Notification,
} from '../../shared/gen/svc/notification/v1/notify_pb';
import { TemplateChannel, TemplateService } from '../../shared/gen/svc/notification/v1/templates_pb';
import { UserService } from '../../shared/gen/svc/notification/v1/users_pb';
import { createTestDatabase } from '../support/database';
import { startSmtpPeer, type SmtpPeer } from '../support/smtp-peer';
import {
  FAST_DELIVERY,
  smtpMailerConfig,
  startNotificationApp,
  type RunningNotificationApp,
} from '../support/notification-app';
import { until, waitFor } from '../support/wait';
import { gatewayConfig, startTwilioPeer, type TwilioPeer } from './channels/sms/twilio-peer';

interface Replica {
  running: RunningNotificationApp;
  users: Client<typeof UserService>;
  templates: Client<typeof TemplateService>;
  notify: Client<typeof NotifyService>;
  closed: boolean;
}

let db: { url: string; drop(): Promise<void> };
let smtp: SmtpPeer;
let twilio: TwilioPeer;
let a: Replica;
let b: Replica;

async function startReplica(): Promise<Replica> {
  const running = await startNotificationApp(
    {
      database: { url: db.url },
      inbox: { store_backend: 'database' },
      delivery: { ...FAST_DELIVERY, store_backend: 'database' },
      mailer: smtpMailerConfig(smtp.port),
      sms_backends: [{ name: 'twilio', sms_gateway: gatewayConfig(twilio) }],
      notify: {
        default_locale: 'en',
        categories: [
          { name: 'news', channels: ['inbox', 'email', 'sms'] },
          // A digest that goes when its 200th event arrives (the window is only a bound).
          {
            name: 'comments',
            channels: ['inbox', 'email'],
            digest: { email: { window: 600, key: 'thread_id', max_count: 200 } },
          },
          // A 2-second email digest (open on a replica that stops).
          { name: 'quick', channels: ['inbox', 'email'], digest: { email: { window: 2 } } },
        ],
        caps: [{ channel: 'sms', limit: 3, per: '1h' }],
      },
    } as never,
    { dueRunner: { pollMs: 100 } },
  );
  const transport = createConnectTransport({ baseUrl: running.baseUrl, httpVersion: '1.1' });
  return {
    running,
    users: createClient(UserService, transport),
    templates: createClient(TemplateService, transport),
    notify: createClient(NotifyService, transport),
    closed: false,
  };
}

beforeAll(async () => {
  db = await createTestDatabase('notifytiming');
  smtp = await startSmtpPeer();
  twilio = await startTwilioPeer();
  a = await startReplica();
  const put = (category: string, channel: TemplateChannel, content: Record<string, string>) =>
    a.templates.upsertTemplate({ category, channel, locale: 'en', content });
  await put('news', TemplateChannel.INBOX, { title: 'news', body: '{{ data.text }}' });
  await put('news', TemplateChannel.EMAIL, {
    subject: 'news: {{ data.text }}',
    html: '<p>{{ data.text }}</p>',
  });
  await put('news', TemplateChannel.SMS, { text: 'news: {{ data.text }}' });
  await put('comments', TemplateChannel.INBOX, { title: '{{ data.author }}', body: '{{ data.text }}' });
  await put('comments', TemplateChannel.EMAIL, {
    subject: '{{ data.author }}',
    html: '<p>{{ data.text }}</p>',
  });
  await put('comments.digest', TemplateChannel.EMAIL, {
    subject: '{{ data.count | plural: "one: # new comment", "other: # new comments" }}',
    html: '<ol>{% for e in data.events %}<li>{{ e.author }}: {{ e.text }}</li>{% endfor %}</ol>',
  });
  await put('quick', TemplateChannel.INBOX, { title: 'quick', body: '{{ data.text }}' });
  await put('quick', TemplateChannel.EMAIL, { subject: 'quick', html: '<p>{{ data.text }}</p>' });
  await put('quick.digest', TemplateChannel.EMAIL, {
    subject: 'quick digest: {{ data.count }}',
    html: '<ul>{% for e in data.events %}<li>{{ e.text }}</li>{% endfor %}</ul>',
  });
  b = await startReplica();
}, 120_000);

afterAll(async () => {
  for (const r of [a, b]) if (r && !r.closed) await r.running.close().catch(() => undefined);
  await smtp?.stop();
  await twilio?.close();
  await db?.drop();
});

const mailsTo = (address: string) => smtp.received.filter((m) => m.recipients.includes(address));

test('200 events of one thread sent half to each replica at once make exactly ONE digest email of 200', async () => {
  await a.users.upsertUser({ userId: 'many', emails: ['many@example.com'] });
  const results = await Promise.all(
    Array.from({ length: 200 }, (_, i) =>
      (i % 2 === 0 ? a : b).notify.notify({
        userId: 'many',
        category: 'comments',
        data: { thread_id: 'T', author: `u${i}`, text: `مرحبا ${i} 😀` },
      }),
    ),
  );
  const digestIds = new Set(
    results.map((r) => r.notification!.channels.find((c) => c.channel === TemplateChannel.EMAIL)!.digestId),
  );
  expect(digestIds.size).toBe(1);
  expect([...digestIds][0]).not.toBe('');
  await waitFor(() => mailsTo('many@example.com').length >= 1, 'the digest email', 30_000);
  // Every line shows the digest's delivery once it went; by then a second digest email would be there too.
  const first = results[0]!.notification!.id;
  await until(
    async () =>
      (await b.notify.getNotification({ id: first })).notification!.channels.find(
        (c) => c.channel === TemplateChannel.EMAIL,
      )!.deliveryStatus === DeliveryStatus.SENT,
    'the digest delivery SENT',
    30_000,
  );
  const mails = mailsTo('many@example.com');
  expect(mails).toHaveLength(1);
  expect(mails[0]!.parsed.subject).toBe('200 new comments');
  const html = String(mails[0]!.parsed.html);
  expect(html.match(/<li>/g)).toHaveLength(200);
  for (const i of [0, 1, 99, 199]) expect(html).toContain(`u${i}: مرحبا ${i} 😀`);
  // Every event's line, read on either replica, shows the one digest and its one delivery.
  const lines = await Promise.all(
    results.map(async (r, i) =>
      (await (i % 2 ? a : b).notify.getNotification({ id: r.notification!.id })).notification!.channels.find(
        (c) => c.channel === TemplateChannel.EMAIL,
      )!,
    ),
  );
  expect(new Set(lines.map((l) => l.digestId))).toEqual(digestIds);
  const deliveryIds = new Set(lines.map((l) => l.messageId));
  expect(deliveryIds.size).toBe(1);
  expect([...deliveryIds][0]).not.toBe('');
  // An event after the digest went opens the next one.
  const next = await b.notify.notify({
    userId: 'many',
    category: 'comments',
    data: { thread_id: 'T', author: 'late', text: 'next' },
  });
  const nextDigest = next.notification!.channels.find((c) => c.channel === TemplateChannel.EMAIL)!.digestId;
  expect(nextDigest).not.toBe('');
  expect(digestIds.has(nextDigest)).toBe(false);
}, 120_000);

test('caps shared: sms 3/1h with 10 concurrent Notify calls across both replicas sends exactly 3 SMS', async () => {
  await a.users.upsertUser({ userId: 'capped', phones: ['+34611000001'] });
  const results = await Promise.all(
    Array.from({ length: 10 }, (_, i) =>
      (i % 2 === 0 ? a : b).notify.notify({ userId: 'capped', category: 'news', data: { text: `n${i}` } }),
    ),
  );
  const sms = results.map((r) => r.notification!.channels.find((c) => c.channel === TemplateChannel.SMS)!);
  const passed = sms.filter((l) => l.skipped === SkipReason.UNSPECIFIED);
  const throttled = sms.filter((l) => l.skipped === SkipReason.THROTTLED);
  expect(passed).toHaveLength(3);
  expect(throttled).toHaveLength(7);
  expect(throttled.every((l) => l.throttledBy === 'sms 3/1h')).toBe(true);
  // Read back from the database on the other replica, the throttled lines say the same.
  const readBack = await Promise.all(
    results.map(async (r, i) =>
      (await (i % 2 ? a : b).notify.getNotification({ id: r.notification!.id })).notification!.channels.find(
        (c) => c.channel === TemplateChannel.SMS,
      )!,
    ),
  );
  expect(
    readBack.filter((l) => l.skipped === SkipReason.THROTTLED && l.throttledBy === 'sms 3/1h'),
  ).toHaveLength(7);
  const toUser = () => twilio.requests.filter((r) => r.form.To === '+34611000001');
  await waitFor(() => toUser().length >= 3, 'the three SMS at the stand-in', 30_000);
  await until(
    async () =>
      (
        await Promise.all(passed.map((l) => a.running.notificationConnect.getDelivery({ id: l.messageId })))
      ).every((d) => d.delivery!.status === DeliveryStatus.SENT),
    'the three SMS deliveries SENT',
    30_000,
  );
  expect(toUser()).toHaveLength(3);
  // Another user's cap is their own, on either replica.
  await a.users.upsertUser({ userId: 'capped-other', phones: ['+34611000002'] });
  for (const r of [a, b]) {
    const other = await r.notify.notify({ userId: 'capped-other', category: 'news', data: { text: 'mine' } });
    expect(other.notification!.channels.find((c) => c.channel === TemplateChannel.SMS)!.skipped).toBe(
      SkipReason.UNSPECIFIED,
    );
  }
}, 120_000);

test('quiet hours stored by one replica hold the SMS on the other; the email goes', async () => {
  const minute = Math.floor(Date.now() / 60_000) * 60_000;
  const hm = (t: number) =>
    new Intl.DateTimeFormat('en-GB', {
      timeZone: 'Asia/Tokyo',
      hour: '2-digit',
      minute: '2-digit',
      hourCycle: 'h23',
    }).format(new Date(t));
  await a.users.upsertUser({
    userId: 'quiet',
    emails: ['quiet@example.com'],
    phones: ['+81300000009'],
    timeZone: 'Asia/Tokyo',
    quietHours: { windows: [{ start: hm(minute - 3600_000), end: hm(minute + 3600_000) }], holdEmail: false },
  });
  const { notification } = await b.notify.notify({
    userId: 'quiet',
    category: 'news',
    data: { text: '静か 🌙' },
  });
  const sms = notification!.channels.find((c) => c.channel === TemplateChannel.SMS)!;
  expect(sms.holdReason).toBe(HoldReason.QUIET_HOURS);
  expect(timestampDate(sms.heldUntil!).getTime()).toBe(minute + 3600_000);
  await waitFor(() => mailsTo('quiet@example.com').length > 0, 'the email', 30_000);
  const read = (await a.notify.getNotification({ id: notification!.id })).notification!;
  expect(
    timestampDate(read.channels.find((c) => c.channel === TemplateChannel.SMS)!.heldUntil!).getTime(),
  ).toBe(minute + 3600_000);
  expect(twilio.requests.filter((r) => r.form.To === '+81300000009')).toHaveLength(0);
  // ListNotifications (lines without statuses) shows the hold too.
  const listed = (await a.notify.listNotifications({ userId: 'quiet' })).notifications;
  const listedSms = listed[0]!.channels.find((c) => c.channel === TemplateChannel.SMS)!;
  expect(listedSms.holdReason).toBe(HoldReason.QUIET_HOURS);
  expect(timestampDate(listedSms.heldUntil!).getTime()).toBe(minute + 3600_000);
  // Cancelled by its idempotency key on the other replica: the held line is CANCELLED for both.
  const keyed = await b.notify.notify({
    userId: 'quiet',
    category: 'news',
    data: { text: 'never sent' },
    idempotencyKey: 'quiet-cancel-1',
  });
  const res = await a.notify.cancelNotification({ idempotencyKey: 'quiet-cancel-1' });
  expect(res.cancelled).toBe(1);
  const after = (await b.notify.getNotification({ id: keyed.notification!.id })).notification!;
  expect(after.channels.find((c) => c.channel === TemplateChannel.SMS)!.skipped).toBe(SkipReason.CANCELLED);
  expect(twilio.requests.filter((r) => r.form.To === '+81300000009')).toHaveLength(0);
}, 60_000);

test('DeleteUser on one replica: the other neither counts the old caps nor joins the old digest', async () => {
  await a.users.upsertUser({ userId: 'erased', emails: ['erased@example.com'], phones: ['+34611000009'] });
  const sms = async (r: Replica) =>
    (
      await r.notify.notify({ userId: 'erased', category: 'news', data: { text: 'x' } })
    ).notification!.channels.find((c) => c.channel === TemplateChannel.SMS)!;
  for (let i = 0; i < 3; i++) expect((await sms(i % 2 ? a : b)).skipped).toBe(SkipReason.UNSPECIFIED);
  expect((await sms(a)).skipped).toBe(SkipReason.THROTTLED);
  const digested = (
    await b.notify.notify({
      userId: 'erased',
      category: 'comments',
      data: { thread_id: 'E', author: 'e', text: 'old' },
    })
  ).notification!;
  const oldDigest = digested.channels.find((c) => c.channel === TemplateChannel.EMAIL)!.digestId;
  expect(oldDigest).not.toBe('');

  await b.users.deleteUser({ userId: 'erased' });
  const gone = await a.notify
    .getNotification({ id: digested.id })
    .catch((e: unknown) => ConnectError.from(e));
  expect(gone instanceof ConnectError ? gone.code : 'present').toBe(Code.NotFound);

  await b.users.upsertUser({ userId: 'erased', emails: ['erased@example.com'], phones: ['+34611000009'] });
  expect((await sms(a)).skipped).toBe(SkipReason.UNSPECIFIED);
  const again = (
    await a.notify.notify({
      userId: 'erased',
      category: 'comments',
      data: { thread_id: 'E', author: 'e', text: 'new' },
    })
  ).notification!;
  const newDigest = again.channels.find((c) => c.channel === TemplateChannel.EMAIL)!.digestId;
  expect(newDigest).not.toBe('');
  expect(newDigest).not.toBe(oldDigest);
}, 60_000);

test('scheduled 2 s ahead on replica A, A stopped at once: B sends it exactly once (and the digest A opened)', async () => {
  await a.users.upsertUser({ userId: 'sched', emails: ['sched@example.com'] });
  await a.users.upsertUser({ userId: 'digest-on-a', emails: ['digest-on-a@example.com'] });
  for (const text of ['one 🍎', 'two 🍐']) {
    await a.notify.notify({ userId: 'digest-on-a', category: 'quick', data: { text } });
  }
  const { notification } = await a.notify.notify({
    userId: 'sched',
    category: 'news',
    data: { text: 'from A, sent by B ✉️' },
    delay: { seconds: 2n, nanos: 0 },
  });
  expect(notification!.status).toBe(NotificationStatus.SCHEDULED);
  await a.running.close();
  a.closed = true;

  let got: Notification | undefined;
  await until(
    async () => {
      got = (await b.notify.getNotification({ id: notification!.id })).notification!;
      return (
        got.status === NotificationStatus.FANNED_OUT &&
        got.channels.find((c) => c.channel === TemplateChannel.EMAIL)?.deliveryStatus === DeliveryStatus.SENT
      );
    },
    'the scheduled email SENT by B',
    30_000,
  );
  await waitFor(() => mailsTo('sched@example.com').length >= 1, 'the email at the SMTP peer', 10_000);
  expect(mailsTo('sched@example.com').map((m) => m.parsed.subject)).toEqual(['news: from A, sent by B ✉️']);
  expect(got!.channels.filter((c) => c.channel === TemplateChannel.EMAIL)).toHaveLength(1);
  // The digest opened on A went from B, once, with both events.
  await waitFor(() => mailsTo('digest-on-a@example.com').length >= 1, 'the digest email from B', 30_000);
  const digest = mailsTo('digest-on-a@example.com');
  expect(digest.map((m) => m.parsed.subject)).toEqual(['quick digest: 2']);
  expect(String(digest[0]!.parsed.text)).toMatch(/one 🍎[\s\S]*two 🍐/);
}, 120_000);

describe('cap-deferred lines released on PostgreSQL (a cap of 1 per 2 s, two replicas)', () => {
  let db2: { url: string; drop(): Promise<void> };
  const apps: RunningNotificationApp[] = [];

  beforeAll(async () => {
    db2 = await createTestDatabase('notifytimingdefer');
    for (let i = 0; i < 2; i++) {
      apps.push(
        await startNotificationApp(
          {
            database: { url: db2.url },
            inbox: { store_backend: 'database' },
            delivery: { ...FAST_DELIVERY, store_backend: 'database' },
            sms_backends: [{ name: 'twilio', sms_gateway: gatewayConfig(twilio) }],
            notify: {
              default_locale: 'en',
              categories: [{ name: 'ping', channels: ['inbox', 'sms'], on_cap: 'defer' }],
              caps: [{ channel: 'sms', limit: 1, per: '2s' }],
            },
          } as never,
          { dueRunner: { pollMs: 100 } },
        ),
      );
    }
    const t = createClient(
      TemplateService,
      createConnectTransport({ baseUrl: apps[0]!.baseUrl, httpVersion: '1.1' }),
    );
    await t.upsertTemplate({
      category: 'ping',
      channel: TemplateChannel.INBOX,
      locale: 'en',
      content: { title: 'ping', body: '{{ data.text }}' },
    });
    await t.upsertTemplate({
      category: 'ping',
      channel: TemplateChannel.SMS,
      locale: 'en',
      content: { text: 'ping {{ data.text }}' },
    });
  }, 120_000);

  afterAll(async () => {
    for (const app of apps) await app.close().catch(() => undefined);
    await db2?.drop();
  });

  test('three deferred across both replicas all go, once each, as slots free', async () => {
    const clients = apps.map((app) => {
      const transport = createConnectTransport({ baseUrl: app.baseUrl, httpVersion: '1.1' });
      return { users: createClient(UserService, transport), notify: createClient(NotifyService, transport) };
    });
    await clients[0]!.users.upsertUser({ userId: 'slow', phones: ['+34611000077'] });
    const made: Notification[] = [];
    for (const [i, text] of ['1 😀', '2 你好', '3 שלום'].entries()) {
      made.push(
        (await clients[i % 2]!.notify.notify({ userId: 'slow', category: 'ping', data: { text } }))
          .notification!,
      );
    }
    const sms = (n: Notification) => n.channels.find((c) => c.channel === TemplateChannel.SMS)!;
    expect(made.map((m) => sms(m).holdReason)).toEqual([
      HoldReason.UNSPECIFIED,
      HoldReason.CAP_DEFERRED,
      HoldReason.CAP_DEFERRED,
    ]);
    const read = async () =>
      Promise.all(
        made.map(async (m) => sms((await clients[1]!.notify.getNotification({ id: m.id })).notification!)),
      );
    await until(
      async () => (await read()).every((l) => l.messageId !== '' && l.deliveryStatus === DeliveryStatus.SENT),
      'the three SMS sent',
      30_000,
    );
    const lines = await read();
    expect(lines.every((l) => l.heldUntil === undefined)).toBe(true);
    expect(new Set(lines.map((l) => l.messageId)).size).toBe(3);
    const bodies = twilio.requests.filter((r) => r.form.To === '+34611000077').map((r) => r.form.Body);
    expect(bodies.sort()).toEqual(['ping 1 😀', 'ping 2 你好', 'ping 3 שלום']);
  }, 90_000);
});
