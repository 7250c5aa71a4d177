/**
 * "When to notify" (issue 26), whole: the real notification service in-process (memory stores) with
 * the real CapLedger, DigestBook and quietHoursEnd wired by the composition root, real templates, an
 * SMTP peer and the Twilio stand-in, driven only through the public RPCs (Connect). The time rules
 * have fake-clock tests of their own; this file checks that the real parts meet: quiet hours hold SMS
 * and release time, caps throttle or defer, digests coalesce per key into one email, scheduling and
 * cancel, and DeleteUser forgets caps and digests.
 */
import { Code, ConnectError, createClient, type Client } from '@connectrpc/connect';
import { createConnectTransport } from '@connectrpc/connect-node';
import { timestampDate, timestampFromDate } from '@bufbuild/protobuf/wkt';

import { InboxService } from '../../shared/gen/svc/notification/v1/inbox_pb';
import { DeliveryStatus } from '../../shared/gen/svc/notification/v1/notification_pb';
import {
  HoldReason,
  NotificationStatus,
  NotifyPriority,
  NotifyService,
  SkipReason,
  type ChannelResult,
  type Notification,
} from '../../shared/gen/svc/notification/v1/notify_pb';
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
import { gatewayConfig, startTwilioPeer, type TwilioPeer } from './channels/sms/twilio-peer';
import { ecKeys, startApnsPeer, type ApnsPeer } from './channels/push/push-peers';
import { DevicePlatform } from '../../shared/gen/svc/notification/v1/users_pb';

const CATEGORIES = [
  { name: 'news', channels: ['inbox', 'email', 'sms', 'push'] },
  { name: 'alerts', channels: ['inbox', 'sms'], on_cap: 'defer' },
  { name: 'security', channels: ['inbox', 'email', 'sms'], required: true },
  // A 2-second email digest per thread.
  { name: 'comments', channels: ['inbox', 'email'], digest: { email: { window: 2, key: 'thread_id' } } },
  // A 1-second SMS digest (meets the SMS cap).
  { name: 'chat', channels: ['inbox', 'sms'], digest: { sms: { window: 1 } } },
  // An hour-long email digest (stays open while a test runs).
  { name: 'reviews', channels: ['inbox', 'email'], digest: { email: { window: 3600 } } },
];

let smtp: SmtpPeer;
let twilio: TwilioPeer;
let apns: ApnsPeer;
const APNS_KEYS = ecKeys();
const APNS = { keyId: 'KEY1234567', teamId: 'TEAM123456', topic: 'com.example.app' };
let n: RunningNotificationApp;
let users: Client<typeof UserService>;
let templates: Client<typeof TemplateService>;
let notify: Client<typeof NotifyService>;
let inbox: Client<typeof InboxService>;

beforeAll(async () => {
  smtp = await startSmtpPeer();
  twilio = await startTwilioPeer();
  apns = await startApnsPeer({ publicKey: APNS_KEYS.publicKey, ...APNS });
  n = await startNotificationApp(
    {
      mailer: smtpMailerConfig(smtp.port),
      sms_backends: [{ name: 'twilio', sms_gateway: gatewayConfig(twilio) }],
      push_backends: [
        {
          name: 'apns',
          driver: 'push_driver_b',
          push_driver_b: {
            key_id: APNS.keyId,
            team_id: APNS.teamId,
            private_key: APNS_KEYS.privatePem,
            topic: APNS.topic,
            base_url: apns.baseUrl,
          },
        },
      ],
      delivery: FAST_DELIVERY,
      notify: {
        default_locale: 'en',
        categories: CATEGORIES,
        caps: [{ channel: 'sms', limit: 2, per: '1h' }],
        max_schedule_ahead: '1d',
      },
    } as never,
    { dueRunner: { pollMs: 100 } },
  );
  const transport = createConnectTransport({ baseUrl: n.baseUrl, httpVersion: '1.1' });
  users = createClient(UserService, transport);
  templates = createClient(TemplateService, transport);
  notify = createClient(NotifyService, transport);
  inbox = createClient(InboxService, transport);

  const put = (category: string, channel: TemplateChannel, content: Record<string, string>) =>
    templates.upsertTemplate({ category, channel, locale: 'en', content });
  for (const category of ['news', 'alerts', 'security']) {
    await put(category, TemplateChannel.INBOX, {
      title: `${category}: {{ data.text }}`,
      body: '{{ data.text }}',
    });
    await put(category, TemplateChannel.SMS, { text: `${category}: {{ data.text }}` });
  }
  await put('chat', TemplateChannel.INBOX, { title: 'chat', body: '{{ data.text }}' });
  await put('chat', TemplateChannel.SMS, { text: '{{ data.text }}' });
  await put('chat.digest', TemplateChannel.SMS, { text: '{{ data.count }} chats' });
  await put('news', TemplateChannel.PUSH, { title: 'news', body: '{{ data.text }}' });
  for (const category of ['news', 'security']) {
    await put(category, TemplateChannel.EMAIL, {
      subject: `${category}: {{ data.text }}`,
      html: '<p>{{ data.text }}</p>',
    });
  }
  for (const category of ['comments', 'reviews']) {
    await put(category, TemplateChannel.INBOX, { title: '{{ data.author }}', body: '{{ data.text }}' });
    await put(category, TemplateChannel.EMAIL, {
      subject: '{{ data.author }}',
      html: '<p>{{ data.text }}</p>',
    });
    await put(`${category}.digest`, TemplateChannel.EMAIL, {
      subject: `${category} {{ data.count | plural: "one: # new comment", "other: # new comments" }}`,
      html: '<ol>{% for e in data.events %}<li>{{ e.author }}: {{ e.text }}</li>{% endfor %}</ol>',
    });
  }
}, 60_000);

afterAll(async () => {
  await n?.close();
  await smtp?.stop();
  await twilio?.close();
  await apns?.close();
});

async function codeOf(p: Promise<unknown>): Promise<ConnectError> {
  try {
    await p;
  } catch (err) {
    return ConnectError.from(err);
  }
  throw new Error('expected the call to fail');
}

function line(notification: Notification | undefined, channel: TemplateChannel): ChannelResult {
  const found = notification!.channels.filter((c) => c.channel === channel);
  expect(found).toHaveLength(1);
  return found[0]!;
}

async function get(id: string): Promise<Notification> {
  return (await notify.getNotification({ id })).notification!;
}

const smsTo = (phone: string) => twilio.requests.filter((r) => r.form.To === phone).map((r) => r.form.Body);
const mailsTo = (address: string) => smtp.received.filter((m) => m.recipients.includes(address));

/** Local "HH:MM" of `at` in `timeZone`. */
function localHm(at: Date, timeZone: string): string {
  const parts = new Intl.DateTimeFormat('en-GB', {
    timeZone,
    hour: '2-digit',
    minute: '2-digit',
    hourCycle: 'h23',
  })
    .formatToParts(at)
    .reduce<Record<string, string>>((acc, p) => ({ ...acc, [p.type]: p.value }), {});
  return `${parts.hour}:${parts.minute}`;
}

describe('quiet hours', () => {
  // Tokyo has no DST and a whole-hour offset: the window's end is exactly an hour after this minute.
  const now = new Date();
  const minute = new Date(Math.floor(now.getTime() / 60_000) * 60_000);
  const start = localHm(new Date(minute.getTime() - 60 * 60_000), 'Asia/Tokyo');
  const end = localHm(new Date(minute.getTime() + 60 * 60_000), 'Asia/Tokyo');
  const releaseAt = minute.getTime() + 60 * 60_000;
  const QUIET_TOKEN = 'a'.repeat(64);
  const pushesTo = (token: string) => apns.requests.filter((r) => r.token === token);

  beforeAll(async () => {
    await users.upsertUser({
      userId: 'quiet',
      emails: ['quiet@example.com'],
      phones: ['+81300000001'],
      timeZone: 'Asia/Tokyo',
      quietHours: { windows: [{ start, end }], holdEmail: false },
    });
    await users.registerDevice({ userId: 'quiet', token: QUIET_TOKEN, platform: DevicePlatform.APNS });
  });

  test('NORMAL SMS and push are held until the window ends, email and the inbox go at once', async () => {
    const { notification } = await notify.notify({
      userId: 'quiet',
      category: 'news',
      data: { text: 'quiet 🌙 静か' },
    });
    for (const channel of [TemplateChannel.SMS, TemplateChannel.PUSH]) {
      const held = line(notification, channel);
      expect(held.holdReason).toBe(HoldReason.QUIET_HOURS);
      expect(held.heldUntil && timestampDate(held.heldUntil).getTime()).toBe(releaseAt);
      expect(held.messageId).toBe('');
    }
    const email = line(notification, TemplateChannel.EMAIL);
    expect(email.holdReason).toBe(HoldReason.UNSPECIFIED);
    expect(email.messageId).not.toBe('');
    await waitFor(() => mailsTo('quiet@example.com').length > 0, 'the email at the SMTP peer', 10_000);
    expect(mailsTo('quiet@example.com')[0]!.parsed.subject).toBe('news: quiet 🌙 静か');
    const page = await inbox.getInbox({ userId: 'quiet' });
    expect(page.messages.map((m) => m.body)).toContain('quiet 🌙 静か');
    // GetNotification shows it held, with its release time.
    const again = line(await get(notification!.id), TemplateChannel.SMS);
    expect(again.holdReason).toBe(HoldReason.QUIET_HOURS);
    expect(timestampDate(again.heldUntil!).getTime()).toBe(releaseAt);
    expect(smsTo('+81300000001')).toEqual([]);
    expect(pushesTo(QUIET_TOKEN)).toEqual([]);
  });

  test('a window whose end is before its start (it ends the next day) holds until that end, in a half-hour zone', async () => {
    // Starts an hour from now and ends 30 minutes from now: it began yesterday and ends today.
    const startAt = localHm(new Date(minute.getTime() + 60 * 60_000), 'Asia/Kolkata');
    const endAt = localHm(new Date(minute.getTime() + 30 * 60_000), 'Asia/Kolkata');
    await users.upsertUser({
      userId: 'overnight',
      phones: ['+91900000001'],
      timeZone: 'Asia/Kolkata',
      quietHours: { windows: [{ start: startAt, end: endAt }] },
    });
    const { notification } = await notify.notify({
      userId: 'overnight',
      category: 'news',
      data: { text: 'रात' },
    });
    const sms = line(notification, TemplateChannel.SMS);
    expect(sms.holdReason).toBe(HoldReason.QUIET_HOURS);
    expect(timestampDate(sms.heldUntil!).getTime()).toBe(minute.getTime() + 30 * 60_000);
  });

  test('held lines take no cap slot: three more inside the window are all held, none throttled', async () => {
    for (const text of ['h1', 'h2', 'h3']) {
      const { notification } = await notify.notify({ userId: 'quiet', category: 'news', data: { text } });
      expect(line(notification, TemplateChannel.SMS).holdReason).toBe(HoldReason.QUIET_HOURS);
      expect(line(notification, TemplateChannel.SMS).skipped).toBe(SkipReason.UNSPECIFIED);
    }
  });

  test('CRITICAL and a required category go at once', async () => {
    const critical = await notify.notify({
      userId: 'quiet',
      category: 'news',
      data: { text: 'critical' },
      priority: NotifyPriority.CRITICAL,
    });
    expect(line(critical.notification, TemplateChannel.SMS).holdReason).toBe(HoldReason.UNSPECIFIED);
    expect(line(critical.notification, TemplateChannel.SMS).messageId).not.toBe('');
    expect(line(critical.notification, TemplateChannel.PUSH).holdReason).toBe(HoldReason.UNSPECIFIED);
    await waitFor(() => pushesTo(QUIET_TOKEN).length === 1, 'the CRITICAL push at the APNs peer', 10_000);
    const required = await notify.notify({
      userId: 'quiet',
      category: 'security',
      data: { text: 'sign-in' },
    });
    expect(line(required.notification, TemplateChannel.SMS).holdReason).toBe(HoldReason.UNSPECIFIED);
    await waitFor(
      () => ['news: critical', 'security: sign-in'].every((b) => smsTo('+81300000001').includes(b)),
      'both SMS at the stand-in',
      10_000,
    );
  });

  test('with hold_email, the email is held too; the inbox still gets it at once', async () => {
    await users.upsertUser({
      userId: 'quiet-mail',
      emails: ['quiet-mail@example.com'],
      phones: ['+81300000002'],
      timeZone: 'Asia/Tokyo',
      quietHours: { windows: [{ start, end }], holdEmail: true },
    });
    const { notification } = await notify.notify({
      userId: 'quiet-mail',
      category: 'news',
      data: { text: 'שלום' },
    });
    for (const channel of [TemplateChannel.EMAIL, TemplateChannel.SMS]) {
      const l = line(notification, channel);
      expect(l.holdReason).toBe(HoldReason.QUIET_HOURS);
      expect(timestampDate(l.heldUntil!).getTime()).toBe(releaseAt);
    }
    expect((await inbox.getInbox({ userId: 'quiet-mail' })).messages.map((m) => m.body)).toEqual(['שלום']);
  });

  test('CancelNotification of a held line: CANCELLED, nothing sent', async () => {
    const { notification } = await notify.notify({
      userId: 'quiet',
      category: 'news',
      data: { text: 'cancel me' },
    });
    expect(line(notification, TemplateChannel.SMS).holdReason).toBe(HoldReason.QUIET_HOURS);
    const res = await notify.cancelNotification({ id: notification!.id });
    // The two held lines (SMS and push); the email went.
    expect(res.cancelled).toBe(2);
    const after = await get(notification!.id);
    for (const channel of [TemplateChannel.SMS, TemplateChannel.PUSH]) {
      expect(line(res.notification, channel).skipped).toBe(SkipReason.CANCELLED);
      expect(line(res.notification, channel).heldUntil).toBeUndefined();
      expect(line(after, channel).skipped).toBe(SkipReason.CANCELLED);
    }
    expect(line(after, TemplateChannel.EMAIL).messageId).not.toBe('');
    expect(smsTo('+81300000001')).not.toContain('news: cancel me');
    expect(pushesTo(QUIET_TOKEN).map((r) => JSON.stringify(r.body))).not.toContainEqual(
      expect.stringContaining('cancel me'),
    );
  });
});

describe('frequency caps (sms 2/1h)', () => {
  beforeAll(async () => {
    await users.upsertUser({ userId: 'capped', phones: ['+34600000001'] });
    await users.upsertUser({ userId: 'capped-2', phones: ['+34600000002'] });
  });

  test('the third SMS is THROTTLED by "sms 2/1h" and stays in the inbox; defer holds; CRITICAL and required pass; users never share a cap', async () => {
    const sent: Notification[] = [];
    for (const text of ['one', 'two', 'three']) {
      sent.push((await notify.notify({ userId: 'capped', category: 'news', data: { text } })).notification!);
    }
    expect(sent.slice(0, 2).map((s) => line(s, TemplateChannel.SMS).skipped)).toEqual([
      SkipReason.UNSPECIFIED,
      SkipReason.UNSPECIFIED,
    ]);
    const third = line(sent[2], TemplateChannel.SMS);
    expect(third.skipped).toBe(SkipReason.THROTTLED);
    expect(third.throttledBy).toBe('sms 2/1h');
    expect(third.messageId).toBe('');
    expect((await inbox.getInbox({ userId: 'capped' })).messages.map((m) => m.body).sort()).toEqual([
      'one',
      'three',
      'two',
    ]);

    const before = Date.now();
    const deferred = (await notify.notify({ userId: 'capped', category: 'alerts', data: { text: 'later' } }))
      .notification!;
    const held = line(deferred, TemplateChannel.SMS);
    expect(held.holdReason).toBe(HoldReason.CAP_DEFERRED);
    const until = timestampDate(held.heldUntil!).getTime();
    // The first take leaves its window an hour after it was made (before this test's Notify calls end).
    expect(until).toBeGreaterThan(before + 59 * 60_000);
    expect(until).toBeLessThanOrEqual(Date.now() + 60 * 60_000);

    const critical = await notify.notify({
      userId: 'capped',
      category: 'news',
      data: { text: 'critical' },
      priority: NotifyPriority.CRITICAL,
    });
    expect(line(critical.notification, TemplateChannel.SMS).skipped).toBe(SkipReason.UNSPECIFIED);
    expect(line(critical.notification, TemplateChannel.SMS).messageId).not.toBe('');
    const required = await notify.notify({
      userId: 'capped',
      category: 'security',
      data: { text: 'required' },
    });
    expect(line(required.notification, TemplateChannel.SMS).skipped).toBe(SkipReason.UNSPECIFIED);

    const other = await notify.notify({ userId: 'capped-2', category: 'news', data: { text: 'mine' } });
    expect(line(other.notification, TemplateChannel.SMS).skipped).toBe(SkipReason.UNSPECIFIED);

    await waitFor(() => smsTo('+34600000001').length >= 4, 'the four SMS that passed', 10_000);
    await waitFor(() => smsTo('+34600000002').length >= 1, "the other user's SMS", 10_000);
    expect(smsTo('+34600000001').sort()).toEqual(
      ['news: critical', 'news: one', 'news: two', 'security: required'].sort(),
    );
  });
});

describe('digests', () => {
  beforeAll(async () => {
    await users.upsertUser({ userId: 'reader', emails: ['reader@example.com'] });
  });

  test('3 events of thread A and 1 of thread B: two emails, "3 new comments" in order and "1 new comment"; a late event opens the next', async () => {
    const texts = ['first 😀', '二番目 你好', 'שלישי مرحبا'];
    const a: Notification[] = [];
    for (const [i, text] of texts.entries()) {
      a.push(
        (
          await notify.notify({
            userId: 'reader',
            category: 'comments',
            data: { thread_id: 'A', author: `a${i}`, text },
          })
        ).notification!,
      );
    }
    const b = (
      await notify.notify({
        userId: 'reader',
        category: 'comments',
        data: { thread_id: 'B', author: 'b', text: 'alone' },
      })
    ).notification!;
    const digestIds = a.map((x) => line(x, TemplateChannel.EMAIL).digestId);
    expect(digestIds[0]).not.toBe('');
    expect(new Set(digestIds).size).toBe(1);
    const bDigest = line(b, TemplateChannel.EMAIL).digestId;
    expect(bDigest).not.toBe('');
    expect(bDigest).not.toBe(digestIds[0]);
    // The inbox keeps each event.
    expect((await inbox.getInbox({ userId: 'reader' })).messages).toHaveLength(4);

    await waitFor(() => mailsTo('reader@example.com').length >= 2, 'two digest emails', 15_000);
    const subjects = mailsTo('reader@example.com').map((m) => m.parsed.subject);
    expect(subjects.sort()).toEqual(['comments 1 new comment', 'comments 3 new comments']);
    const three = mailsTo('reader@example.com').find((m) => m.parsed.subject === 'comments 3 new comments')!;
    const text = String(three.parsed.text);
    const at = texts.map((t, i) => text.indexOf(`a${i}: ${t}`));
    expect(at.every((p) => p >= 0)).toBe(true);
    expect([...at].sort((x, y) => x - y)).toEqual(at);
    expect(
      String(
        mailsTo('reader@example.com').find((m) => m.parsed.subject === 'comments 1 new comment')!.parsed.text,
      ),
    ).toContain('b: alone');

    // Each event's line shows the digest and, once sent, the digest's delivery (the same for the three).
    await until(
      async () =>
        (await Promise.all(a.map((x) => get(x.id)))).every(
          (x) => line(x, TemplateChannel.EMAIL).messageId !== '',
        ),
      'the digest delivery on each line',
      10_000,
    );
    const lines = await Promise.all(a.map(async (x) => line(await get(x.id), TemplateChannel.EMAIL)));
    expect(new Set(lines.map((l) => l.digestId))).toEqual(new Set([digestIds[0]]));
    expect(new Set(lines.map((l) => l.messageId)).size).toBe(1);

    const late = (
      await notify.notify({
        userId: 'reader',
        category: 'comments',
        data: { thread_id: 'A', author: 'z', text: 'late' },
      })
    ).notification!;
    const lateDigest = line(late, TemplateChannel.EMAIL).digestId;
    expect(lateDigest).not.toBe('');
    expect(lateDigest).not.toBe(digestIds[0]);
    await waitFor(() => mailsTo('reader@example.com').length >= 3, 'the next digest email', 15_000);
    const next = mailsTo('reader@example.com')[2]!;
    expect(next.parsed.subject).toBe('comments 1 new comment');
    expect(String(next.parsed.text)).toContain('z: late');
  });
});

describe('digests and priority', () => {
  test('a CRITICAL event of a digesting category is not digested: its email goes at once on its own', async () => {
    await users.upsertUser({ userId: 'urgent-reader', emails: ['urgent@example.com'] });
    const { notification } = await notify.notify({
      userId: 'urgent-reader',
      category: 'reviews',
      data: { author: 'ops', text: 'now ⚡' },
      priority: NotifyPriority.CRITICAL,
    });
    const email = line(notification, TemplateChannel.EMAIL);
    expect(email.digestId).toBe('');
    expect(email.messageId).not.toBe('');
    await waitFor(() => mailsTo('urgent@example.com').length > 0, 'the email', 10_000);
    expect(mailsTo('urgent@example.com')[0]!.parsed.subject).toBe('ops');
  });
});

describe('scheduling', () => {
  beforeAll(async () => {
    await users.upsertUser({ userId: 'later', emails: ['later@example.com'] });
  });

  test('delay 1 s: SCHEDULED, then FANNED_OUT and the email arrives', async () => {
    const { notification } = await notify.notify({
      userId: 'later',
      category: 'news',
      data: { text: 'delayed ⏰' },
      delay: { seconds: 1n, nanos: 0 },
    });
    expect(notification!.status).toBe(NotificationStatus.SCHEDULED);
    expect(notification!.sendAt).toBeDefined();
    expect(mailsTo('later@example.com')).toHaveLength(0);
    await until(
      async () => (await get(notification!.id)).status === NotificationStatus.FANNED_OUT,
      'the scheduled notification FANNED_OUT',
      10_000,
    );
    await waitFor(() => mailsTo('later@example.com').length > 0, 'the delayed email', 10_000);
    expect(mailsTo('later@example.com')[0]!.parsed.subject).toBe('news: delayed ⏰');
  });

  test('send_at in an hour, cancelled by idempotency key: CANCELLED, nothing sent', async () => {
    const { notification } = await notify.notify({
      userId: 'later',
      category: 'news',
      data: { text: 'never' },
      idempotencyKey: 'later-cancel-1',
      sendAt: timestampFromDate(new Date(Date.now() + 3600_000)),
    });
    expect(notification!.status).toBe(NotificationStatus.SCHEDULED);
    const res = await notify.cancelNotification({ idempotencyKey: 'later-cancel-1' });
    expect(res.cancelled).toBe(1);
    expect(res.notification!.id).toBe(notification!.id);
    expect(res.notification!.status).toBe(NotificationStatus.CANCELLED);
    const got = await get(notification!.id);
    expect(got.status).toBe(NotificationStatus.CANCELLED);
    expect(got.channels.every((c) => c.messageId === '')).toBe(true);
    expect((await inbox.getInbox({ userId: 'later' })).messages.map((m) => m.body)).not.toContain('never');
  });

  test('absurd times are INVALID_ARGUMENT, never an internal error', async () => {
    const bad = [
      { delay: { seconds: 9_223_372_036_854_775_807n, nanos: 0 } },
      { delay: { seconds: -1n, nanos: 0 } },
      { delay: { seconds: 0n, nanos: -5 } },
      { sendAt: { seconds: 9_223_372_036_854_775_807n, nanos: 0 } },
      { sendAt: { seconds: 253_402_300_800n, nanos: 0 } },
      { sendAt: { seconds: 1n, nanos: 2_000_000_000 } },
      { delay: { seconds: 1n, nanos: 0 }, sendAt: timestampFromDate(new Date(Date.now() + 60_000)) },
    ];
    for (const when of bad) {
      const err = await codeOf(
        notify.notify({ userId: 'later', category: 'news', data: { text: 'x' }, ...when }),
      );
      expect([
        JSON.stringify(when, (_k, v: unknown) => (typeof v === 'bigint' ? String(v) : v)),
        err.code,
      ]).toEqual([expect.any(String), Code.InvalidArgument]);
    }
  });

  test('send_at beyond max_schedule_ahead is INVALID_ARGUMENT', async () => {
    const err = await codeOf(
      notify.notify({
        userId: 'later',
        category: 'news',
        data: { text: 'too far' },
        sendAt: timestampFromDate(new Date(Date.now() + 2 * 86_400_000)),
      }),
    );
    expect(err.code).toBe(Code.InvalidArgument);
  });
});

describe('DeleteUser after all of that', () => {
  test('the notifications are gone; a re-created user is not throttled by the old counts nor joins the old digest', async () => {
    await users.upsertUser({ userId: 'erased', emails: ['erased@example.com'], phones: ['+34600000009'] });
    const old: Notification[] = [];
    for (const text of ['e1', 'e2', 'e3']) {
      old.push((await notify.notify({ userId: 'erased', category: 'news', data: { text } })).notification!);
    }
    expect(line(old[2], TemplateChannel.SMS).skipped).toBe(SkipReason.THROTTLED);
    const review = (
      await notify.notify({
        userId: 'erased',
        category: 'reviews',
        data: { author: 'x', text: 'open digest' },
      })
    ).notification!;
    const oldDigest = line(review, TemplateChannel.EMAIL).digestId;
    expect(oldDigest).not.toBe('');

    await users.deleteUser({ userId: 'erased' });
    for (const x of [...old, review]) expect((await codeOf(get(x.id))).code).toBe(Code.NotFound);

    await users.upsertUser({ userId: 'erased', emails: ['erased@example.com'], phones: ['+34600000009'] });
    const fresh = await notify.notify({ userId: 'erased', category: 'news', data: { text: 'fresh' } });
    expect(line(fresh.notification, TemplateChannel.SMS).skipped).toBe(SkipReason.UNSPECIFIED);
    expect(line(fresh.notification, TemplateChannel.SMS).throttledBy).toBe('');
    const again = (
      await notify.notify({
        userId: 'erased',
        category: 'reviews',
        data: { author: 'y', text: 'new digest' },
      })
    ).notification!;
    const newDigest = line(again, TemplateChannel.EMAIL).digestId;
    expect(newDigest).not.toBe('');
    expect(newDigest).not.toBe(oldDigest);
  });
});

describe('a daily digest at a local time', () => {
  let d: RunningNotificationApp;
  // A daily_at one or two minutes ahead in Tokyo (UTC+9, no DST): read as UTC it would be 9 hours off.
  // Chosen when the app starts, right before the test, at least 30 s ahead.
  let dailyAt = '';

  beforeAll(async () => {
    const soon = new Date(Date.now() + (new Date().getUTCSeconds() < 30 ? 60_000 : 120_000));
    dailyAt = localHm(soon, 'Asia/Tokyo');
    d = await startNotificationApp(
      {
        mailer: smtpMailerConfig(smtp.port),
        delivery: FAST_DELIVERY,
        notify: {
          default_locale: 'en',
          categories: [
            { name: 'daily', channels: ['inbox', 'email'], digest: { email: { daily_at: dailyAt } } },
          ],
        },
      } as never,
      { dueRunner: { pollMs: 100 } },
    );
    const t = createClient(
      TemplateService,
      createConnectTransport({ baseUrl: d.baseUrl, httpVersion: '1.1' }),
    );
    await t.upsertTemplate({
      category: 'daily',
      channel: TemplateChannel.INBOX,
      locale: 'en',
      content: { title: 'daily', body: '{{ data.text }}' },
    });
    await t.upsertTemplate({
      category: 'daily',
      channel: TemplateChannel.EMAIL,
      locale: 'en',
      content: { subject: 'daily', html: '<p>{{ data.text }}</p>' },
    });
    await t.upsertTemplate({
      category: 'daily.digest',
      channel: TemplateChannel.EMAIL,
      locale: 'en',
      content: {
        subject: 'Your day: {{ data.count }}',
        html: '<ul>{% for e in data.events %}<li>{{ e.text }}</li>{% endfor %}</ul>',
      },
    });
  }, 60_000);

  afterAll(async () => {
    await d?.close();
  });

  test("the digest goes at daily_at in the user's time zone, not in UTC", async () => {
    const transport = createConnectTransport({ baseUrl: d.baseUrl, httpVersion: '1.1' });
    await createClient(UserService, transport).upsertUser({
      userId: 'tokyo',
      emails: ['tokyo@example.com'],
      timeZone: 'Asia/Tokyo',
    });
    const { notification } = await createClient(NotifyService, transport).notify({
      userId: 'tokyo',
      category: 'daily',
      data: { text: 'おはよう 🌅' },
    });
    expect(line(notification, TemplateChannel.EMAIL).digestId).not.toBe('');
    await waitFor(
      () => mailsTo('tokyo@example.com').length > 0,
      `the daily digest at ${dailyAt} Tokyo time`,
      150_000,
    );
    const mail = mailsTo('tokyo@example.com')[0]!;
    expect(mail.parsed.subject).toBe('Your day: 1');
    expect(String(mail.parsed.text)).toContain('おはよう 🌅');
  }, 180_000);
});

describe('held lines released by the runner (a short cap, the real ledger)', () => {
  let d: RunningNotificationApp;
  let dNotify: Client<typeof NotifyService>;
  let dUsers: Client<typeof UserService>;

  beforeAll(async () => {
    d = await startNotificationApp(
      {
        sms_backends: [{ name: 'twilio', sms_gateway: gatewayConfig(twilio) }],
        delivery: FAST_DELIVERY,
        notify: {
          default_locale: 'en',
          categories: [{ name: 'ping', channels: ['inbox', 'sms'], on_cap: 'defer' }],
          caps: [{ channel: 'sms', limit: 1, per: '2s' }],
        },
      } as never,
      { dueRunner: { pollMs: 100 } },
    );
    const transport = createConnectTransport({ baseUrl: d.baseUrl, httpVersion: '1.1' });
    dNotify = createClient(NotifyService, transport);
    dUsers = createClient(UserService, transport);
    const t = createClient(TemplateService, transport);
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
  }, 60_000);

  afterAll(async () => {
    await d?.close();
  });

  test('three deferred by a cap of 1 per 2 s all go, once each, as slots free', async () => {
    await dUsers.upsertUser({ userId: 'slow', phones: ['+34600000077'] });
    const made: Notification[] = [];
    for (const text of ['1 😀', '2 你好', '3 שלום']) {
      made.push((await dNotify.notify({ userId: 'slow', category: 'ping', data: { text } })).notification!);
    }
    expect(line(made[0], TemplateChannel.SMS).messageId).not.toBe('');
    for (const m of made.slice(1)) {
      expect(line(m, TemplateChannel.SMS).holdReason).toBe(HoldReason.CAP_DEFERRED);
    }
    const sent = async () =>
      (await Promise.all(made.map((m) => dNotify.getNotification({ id: m.id })))).map((r) =>
        line(r.notification, TemplateChannel.SMS),
      );
    await until(
      async () => (await sent()).every((l) => l.messageId !== '' && l.deliveryStatus === DeliveryStatus.SENT),
      'the three SMS lines sent',
      20_000,
    );
    const lines = await sent();
    expect(lines.every((l) => l.heldUntil === undefined && l.holdReason === HoldReason.UNSPECIFIED)).toBe(
      true,
    );
    expect(new Set(lines.map((l) => l.messageId)).size).toBe(3);
    expect(smsTo('+34600000077').sort()).toEqual(['ping 1 😀', 'ping 2 你好', 'ping 3 שלום']);
  }, 60_000);
});

describe('the time rules meet scheduling, topics and cancel', () => {
  const now = new Date();
  const minute = new Date(Math.floor(now.getTime() / 60_000) * 60_000);
  const start = localHm(new Date(minute.getTime() - 60 * 60_000), 'America/New_York');
  const end = localHm(new Date(minute.getTime() + 60 * 60_000), 'America/New_York');

  beforeAll(async () => {
    await users.upsertUser({
      userId: 'night-owl',
      emails: ['owl@example.com'],
      phones: ['+12125550100'],
      timeZone: 'America/New_York',
      quietHours: { windows: [{ start, end }], holdEmail: false },
    });
    await users.upsertUser({ userId: 'reader2', emails: ['reader2@example.com'] });
  });

  test('a scheduled notification that comes due inside quiet hours holds its SMS then', async () => {
    const { notification } = await notify.notify({
      userId: 'night-owl',
      category: 'news',
      data: { text: 'scheduled in the night' },
      delay: { seconds: 1n, nanos: 0 },
    });
    expect(notification!.status).toBe(NotificationStatus.SCHEDULED);
    let got: Notification | undefined;
    await until(
      async () => (got = await get(notification!.id)).status === NotificationStatus.FANNED_OUT,
      'the scheduled notification FANNED_OUT',
      10_000,
    );
    const sms = line(got, TemplateChannel.SMS);
    expect(sms.holdReason).toBe(HoldReason.QUIET_HOURS);
    expect(sms.heldUntil).toBeDefined();
    expect(timestampDate(sms.heldUntil!).getTime()).toBeGreaterThan(Date.now() + 59 * 60_000 - 120_000);
    expect(line(got, TemplateChannel.EMAIL).messageId).not.toBe('');
    expect(smsTo('+12125550100')).toEqual([]);
  });

  test("a topic member inside quiet hours has its SMS held like a user's own notification", async () => {
    await users.subscribeTopic({ topic: 'night-news', userIds: ['night-owl'] });
    const { notification } = await notify.notify({
      topic: 'night-news',
      category: 'news',
      data: { text: 'to the topic' },
    });
    let member: Notification | undefined;
    await until(
      async () => {
        const page = await notify.listNotifications({ userId: 'night-owl' });
        const found = page.notifications.find((x) => x.parentId === notification!.id);
        if (!found) return false;
        member = await get(found.id);
        return member.status === NotificationStatus.FANNED_OUT;
      },
      "the member's notification",
      10_000,
    );
    expect(line(member, TemplateChannel.SMS).holdReason).toBe(HoldReason.QUIET_HOURS);
    expect(smsTo('+12125550100')).toEqual([]);
  });

  test('cancelling an event of an open digest takes it out: the digest goes without it', async () => {
    const keep = (
      await notify.notify({
        userId: 'reader2',
        category: 'comments',
        data: { thread_id: 'C', author: 'keep', text: 'stays ✅' },
      })
    ).notification!;
    const drop = (
      await notify.notify({
        userId: 'reader2',
        category: 'comments',
        data: { thread_id: 'C', author: 'drop', text: 'goes ❌' },
      })
    ).notification!;
    expect(line(drop, TemplateChannel.EMAIL).digestId).toBe(line(keep, TemplateChannel.EMAIL).digestId);
    const res = await notify.cancelNotification({ id: drop.id });
    expect(res.cancelled).toBe(1);
    expect(line(res.notification, TemplateChannel.EMAIL).skipped).toBe(SkipReason.CANCELLED);
    await waitFor(() => mailsTo('reader2@example.com').length > 0, 'the digest email', 15_000);
    const mail = mailsTo('reader2@example.com')[0]!;
    expect(mail.parsed.subject).toBe('comments 1 new comment');
    expect(String(mail.parsed.text)).toContain('keep: stays ✅');
    expect(String(mail.parsed.text)).not.toContain('goes ❌');
    await until(
      async () => line(await get(keep.id), TemplateChannel.EMAIL).messageId !== '',
      "the kept event's line shows the digest's delivery",
      10_000,
    );
    expect(line(await get(drop.id), TemplateChannel.EMAIL).messageId).toBe('');
  });

  test("cancelling a digest's only event cancels the digest: the next event opens another", async () => {
    const only = (
      await notify.notify({ userId: 'reader2', category: 'reviews', data: { author: 'solo', text: 'alone' } })
    ).notification!;
    const digestId = line(only, TemplateChannel.EMAIL).digestId;
    expect((await notify.cancelNotification({ id: only.id })).cancelled).toBe(1);
    const next = (
      await notify.notify({ userId: 'reader2', category: 'reviews', data: { author: 'next', text: 'after' } })
    ).notification!;
    expect(line(next, TemplateChannel.EMAIL).digestId).not.toBe('');
    expect(line(next, TemplateChannel.EMAIL).digestId).not.toBe(digestId);
  });
});

describe('more meetings of the real parts', () => {
  test('a due SMS digest over a full cap ends throttled, and its lines say so', async () => {
    await users.upsertUser({ userId: 'chatty', phones: ['+34600000055'] });
    for (const text of ['c1', 'c2'])
      await notify.notify({ userId: 'chatty', category: 'news', data: { text } });
    const { notification } = await notify.notify({
      userId: 'chatty',
      category: 'chat',
      data: { text: 'hi 👋' },
    });
    expect(line(notification, TemplateChannel.SMS).digestId).not.toBe('');
    await until(
      async () => line(await get(notification!.id), TemplateChannel.SMS).error !== '',
      'the digest finished',
      15_000,
    );
    expect(line(await get(notification!.id), TemplateChannel.SMS).error).toContain('sms 2/1h');
    await waitFor(() => smsTo('+34600000055').length >= 2, 'the two news SMS', 10_000);
    expect(smsTo('+34600000055').sort()).toEqual(['news: c1', 'news: c2']);
  });

  test('quiet hours of a user without a time zone are read in UTC', async () => {
    const minute = Math.floor(Date.now() / 60_000) * 60_000;
    await users.upsertUser({
      userId: 'utc',
      phones: ['+34600000066'],
      quietHours: {
        windows: [
          {
            start: localHm(new Date(minute - 3600_000), 'UTC'),
            end: localHm(new Date(minute + 3600_000), 'UTC'),
          },
        ],
      },
    });
    const { notification } = await notify.notify({ userId: 'utc', category: 'news', data: { text: 'utc' } });
    const sms = line(notification, TemplateChannel.SMS);
    expect(sms.holdReason).toBe(HoldReason.QUIET_HOURS);
    expect(timestampDate(sms.heldUntil!).getTime()).toBe(minute + 3600_000);
  });

  test('cancelling an event whose digest already went cancels nothing; its line keeps the delivery', async () => {
    await users.upsertUser({ userId: 'late-cancel', emails: ['late-cancel@example.com'] });
    const { notification } = await notify.notify({
      userId: 'late-cancel',
      category: 'comments',
      data: { thread_id: 'L', author: 'l', text: 'gone already' },
    });
    await until(
      async () => line(await get(notification!.id), TemplateChannel.EMAIL).messageId !== '',
      'the digest sent',
      15_000,
    );
    const res = await notify.cancelNotification({ id: notification!.id });
    expect(res.cancelled).toBe(0);
    expect(line(res.notification, TemplateChannel.EMAIL).skipped).toBe(SkipReason.UNSPECIFIED);
    expect(line(await get(notification!.id), TemplateChannel.EMAIL).messageId).not.toBe('');
    // The digest's delivery was queued before the cancel: it goes.
    await waitFor(() => mailsTo('late-cancel@example.com').length > 0, 'the digest email', 10_000);
    expect(mailsTo('late-cancel@example.com').map((m) => m.parsed.subject)).toEqual([
      'comments 1 new comment',
    ]);
  });
});
