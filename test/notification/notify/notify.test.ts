/**
 * Notify for one user through the real service (Connect clients, the real inbox and delivery
 * pipeline, a real SMTP peer and an SMS peer); the users, preferences and templates ports are fakes
 * (fakes.ts) until those areas are merged.
 */
import type { JsonObject } from '@bufbuild/protobuf';
import { Code, ConnectError } from '@connectrpc/connect';
import { randomUUID } from 'node:crypto';
import {
  NotificationStatus,
  NotifyPriority,
  SkipReason,
} from '../../../shared/gen/svc/notification/v1/notify_pb';
import { TemplateChannel } from '../../../shared/gen/svc/notification/v1/templates_pb';
import { Channel, DeliveryStatus } from '../../../shared/gen/svc/notification/v1/notification_pb';
import { waitFor } from '../../support/wait';
import { startNotifyHarness, waitForAsync, type NotifyHarness } from './support';

let h: NotifyHarness;

beforeAll(async () => {
  h = await startNotifyHarness();
  const r = h.renderer;
  r.set('comments', 'inbox', 'en', { title: 'New comment from {{ data.author }}', body: '{{ data.text }}' });
  r.set('comments', 'inbox', 'es', {
    title: 'Nuevo comentario de {{ data.author }}',
    body: '{{ data.text }}',
  });
  r.set('comments', 'email', 'en', {
    subject: 'Comment by {{ data.author }}',
    html: '<p>{{ data.text }}</p>',
    text: '{{ data.text }}',
  });
  r.set('comments', 'sms', 'en', { text: '{{ data.author }}: {{ data.text }}' });
  r.set('comments', 'push', 'en', { title: '{{ data.author }}', body: '{{ data.text }}' });
  r.set('security', 'inbox', 'en', { title: 'Security notice', body: '{{ data.what }}' });
  r.set('security', 'email', 'en', { subject: 'Security notice', text: '{{ data.what }}' });
  r.set('security', 'sms', 'en', { text: 'Security: {{ data.what }}' });
});

afterAll(async () => {
  await h?.close();
});

function newUserId(): string {
  return `user-${randomUUID()}`;
}

async function refusal(p: Promise<unknown>): Promise<ConnectError> {
  try {
    await p;
  } catch (err) {
    return ConnectError.from(err);
  }
  throw new Error('expected the call to fail');
}

const data = { author: 'Zoë 😀', text: '你好 שלום' };

describe('Notify for a user', () => {
  it('fans out with mixed preferences and contact points: inbox and each email sent, SMS without a number and push turned off skipped with their reasons', async () => {
    const userId = newUserId();
    h.directory.add({
      userId,
      emails: ['ana@example.com', 'ana.work@example.org'],
      devices: [{ token: 'device-token-0123456789', platform: 'fcm', registeredAt: new Date() }],
    });
    h.preferences.turnOff(userId, 'comments', 'push');
    const { notification, created } = await h.notify.notify({ userId, category: 'comments', data });
    expect(created).toBe(true);
    expect(notification!.status).toBe(NotificationStatus.FANNED_OUT);
    expect(notification!.priority).toBe(NotifyPriority.NORMAL);
    const lines = notification!.channels.map((l) => [l.channel, l.contact, l.skipped, l.error]);
    expect(lines).toEqual([
      [TemplateChannel.INBOX, '', SkipReason.UNSPECIFIED, ''],
      [TemplateChannel.EMAIL, 'a***@example.com', SkipReason.UNSPECIFIED, ''],
      [TemplateChannel.EMAIL, 'a***@example.org', SkipReason.UNSPECIFIED, ''],
      [TemplateChannel.SMS, '', SkipReason.NO_CONTACT_POINT, ''],
      [TemplateChannel.PUSH, '', SkipReason.PREFERENCE_OFF, ''],
    ]);
    // The inbox has the rendered message (emoji, CJK and RTL intact) under the line's id.
    const inbox = await h.running.inboxConnect.getInbox({ userId });
    expect(inbox.messages.map((m) => [m.id, m.title, m.body])).toEqual([
      [notification!.channels[0]!.messageId, 'New comment from Zoë 😀', '你好 שלום'],
    ]);
    // Each email went through the pipeline to the SMTP peer, with the one-click unsubscribe headers.
    await waitFor(() => h.smtp!.received.filter((m) => m.recipients[0]?.startsWith('ana')).length === 2);
    const mail = h.smtp!.received.find((m) => m.recipients[0] === 'ana@example.com')!;
    expect(mail.parsed.subject).toBe('Comment by Zoë 😀');
    const raw = mail.raw.toString('utf8');
    expect(raw).toMatch(/^List-Unsubscribe-Post: List-Unsubscribe=One-Click\r?$/m);
    // (nodemailer folds the long header onto a continuation line)
    expect(raw.replace(/\r?\n /g, ' ')).toContain(
      `List-Unsubscribe: <https://notify.example.com/unsubscribe/${encodeURIComponent(userId)}/comments>`,
    );
    // GetNotification shows each delivery's current status.
    await waitForAsync(async () => {
      const got = await h.notify.getNotification({ id: notification!.id });
      return got.notification!.channels.filter((l) => l.deliveryStatus === DeliveryStatus.SENT).length === 2;
    });
  });

  it('a channel with contact points but no backend is skipped CHANNEL_NOT_CONFIGURED (no push backend here)', async () => {
    const userId = newUserId();
    h.directory.add({
      userId,
      devices: [{ token: 'device-token-abcdefghij', platform: 'apns', registeredAt: new Date() }],
    });
    const { notification } = await h.notify.notify({ userId, category: 'comments', data });
    const push = notification!.channels.find((l) => l.channel === TemplateChannel.PUSH)!;
    expect(push.skipped).toBe(SkipReason.CHANNEL_NOT_CONFIGURED);
  });

  it('a required category reaches the user whatever the preferences, and its emails carry no unsubscribe link', async () => {
    const userId = newUserId();
    h.directory.add({ userId, emails: [`sec-${randomUUID()}@example.com`], phones: ['+15550102030'] });
    for (const ch of ['inbox', 'email', 'sms'] as const) h.preferences.turnOff(userId, 'security', ch);
    const { notification } = await h.notify.notify({
      userId,
      category: 'security',
      data: { what: 'new sign-in' },
      priority: NotifyPriority.CRITICAL,
    });
    expect(notification!.priority).toBe(NotifyPriority.CRITICAL);
    expect(notification!.channels.map((l) => [l.channel, l.skipped])).toEqual([
      [TemplateChannel.INBOX, SkipReason.UNSPECIFIED],
      [TemplateChannel.EMAIL, SkipReason.UNSPECIFIED],
      [TemplateChannel.SMS, SkipReason.UNSPECIFIED],
    ]);
    const address = h.directory.users.get(userId)!.emails[0]!;
    await waitFor(() => h.smtp!.received.some((m) => m.recipients[0] === address));
    const mail = h.smtp!.received.find((m) => m.recipients[0] === address)!;
    expect(mail.raw.toString('utf8')).not.toMatch(/^List-Unsubscribe/im);
    await waitFor(() => h.twilio!.requests.some((r) => r.form.To === '+15550102030'));
    expect(h.twilio!.requests.find((r) => r.form.To === '+15550102030')!.form.Body).toBe(
      'Security: new sign-in',
    );
  });

  it('a template variable missing from data is INVALID_ARGUMENT naming it, and nothing is recorded or sent', async () => {
    const userId = newUserId();
    const address = `strict-${randomUUID()}@example.com`;
    h.directory.add({ userId, emails: [address], phones: ['+15550109999'] });
    const smsBefore = h.twilio!.accepted;
    const deliveriesBefore = (await h.running.notificationConnect.listDeliveries({ pageSize: 500 }))
      .deliveries.length;
    const err = await refusal(h.notify.notify({ userId, category: 'comments', data: { author: 'x' } }));
    expect(err.code).toBe(Code.InvalidArgument);
    expect(err.rawMessage).toContain('data.text');
    expect((await h.notify.listNotifications({ userId })).notifications).toEqual([]);
    expect((await h.running.inboxConnect.getInbox({ userId })).messages).toEqual([]);
    const deliveries = await h.running.notificationConnect.listDeliveries({ pageSize: 500 });
    expect(deliveries.deliveries).toHaveLength(deliveriesBefore);
    expect(h.smtp!.received.some((m) => m.recipients.includes(address))).toBe(false);
    expect(h.twilio!.accepted).toBe(smsBefore);
  });

  it('refuses bad calls: unknown user NOT_FOUND, unknown category INVALID_ARGUMENT listing the configured ones, neither or both of user and topic', async () => {
    expect((await refusal(h.notify.notify({ userId: 'nobody', category: 'comments', data }))).code).toBe(
      Code.NotFound,
    );
    const unknown = await refusal(h.notify.notify({ userId: 'nobody', category: 'promo', data }));
    expect(unknown.code).toBe(Code.InvalidArgument);
    expect(unknown.rawMessage).toContain('configured: comments, security, digest');
    expect((await refusal(h.notify.notify({ category: 'comments' }))).code).toBe(Code.InvalidArgument);
    expect((await refusal(h.notify.notify({ userId: 'a', topic: 't', category: 'comments' }))).code).toBe(
      Code.InvalidArgument,
    );
    const longKey = await refusal(
      h.notify.notify({ userId: 'a', category: 'comments', idempotencyKey: 'k'.repeat(256) }),
    );
    expect(longKey.code).toBe(Code.InvalidArgument);
    expect(longKey.rawMessage).toContain('idempotency_key');
  });

  it('a topic follows the users area’s topic rule: 128 of letters, digits and "._:-" go; a space, an emoji or 129 are refused', async () => {
    const at = await h.notify.notify({ topic: 'a.B_c:d-'.padEnd(128, '9'), category: 'comments', data });
    expect(at.created).toBe(true);
    for (const topic of ['news ', 'launch-🚀', 'خبر', 'x'.repeat(129)]) {
      const err = await refusal(h.notify.notify({ topic, category: 'comments', data }));
      expect(err.code).toBe(Code.InvalidArgument);
      expect(err.rawMessage).toBe('topic must be 1-128 of letters, digits and "._:-"');
    }
  });

  it('counts an idempotency key in characters (code points): 255 emoji go, 256 are refused', async () => {
    const userId = newUserId();
    h.directory.add({ userId });
    const key = '🚀'.repeat(255);
    const first = await h.notify.notify({ userId, category: 'comments', data, idempotencyKey: key });
    const again = await h.notify.notify({ userId, category: 'comments', data, idempotencyKey: key });
    expect(again.notification?.id).toBe(first.notification?.id);
    const over = await refusal(
      h.notify.notify({ userId, category: 'comments', data, idempotencyKey: '🚀'.repeat(256) }),
    );
    expect(over.code).toBe(Code.InvalidArgument);
    expect(over.rawMessage).toBe('idempotency_key is longer than 255 characters');
  });

  it('data larger than 64 KiB is INVALID_ARGUMENT naming data; at the bound it is accepted', async () => {
    const userId = newUserId();
    h.directory.add({ userId });
    // {"author":"x","text":"...","pad":"..."}: pad the JSON to exactly 64 KiB, then one byte more.
    const base = JSON.stringify({ ...data, pad: '' });
    const pad = 'x'.repeat(64 * 1024 - Buffer.byteLength(base));
    await h.notify.notify({ userId, category: 'comments', data: { ...data, pad } });
    const err = await refusal(
      h.notify.notify({ userId, category: 'comments', data: { ...data, pad: pad + 'x' } }),
    );
    expect(err.code).toBe(Code.InvalidArgument);
    expect(err.rawMessage).toContain('data');
  });

  it('data with a NUL or a lone surrogate (jsonb refuses both) is INVALID_ARGUMENT naming data', async () => {
    const userId = newUserId();
    h.directory.add({ userId });
    for (const bad of [{ author: 'a\ud800' }, { 'k\u0000': 'v' }, { text: ['\udc00'] }] as JsonObject[]) {
      const err = await refusal(h.notify.notify({ userId, category: 'comments', data: { ...data, ...bad } }));
      expect(err.code).toBe(Code.InvalidArgument);
      expect(err.rawMessage).toBe('data must not contain NUL characters or broken text');
    }
  });

  it('the same key and content returns the same notification and sends nothing again; other content is ALREADY_EXISTS', async () => {
    const userId = newUserId();
    const address = `idem-${randomUUID()}@example.com`;
    h.directory.add({ userId, emails: [address] });
    const key = `order-${randomUUID()}`;
    const first = await h.notify.notify({
      userId,
      category: 'comments',
      data,
      idempotencyKey: 'k'.repeat(255),
    });
    expect(first.created).toBe(true);
    const a = await h.notify.notify({ userId, category: 'comments', data, idempotencyKey: key });
    const b = await h.notify.notify({ userId, category: 'comments', data, idempotencyKey: key });
    expect(b.created).toBe(false);
    expect(b.notification!.id).toBe(a.notification!.id);
    expect(b.notification!.channels.map((l) => l.messageId)).toEqual(
      a.notification!.channels.map((l) => l.messageId),
    );
    expect((await h.running.inboxConnect.getInbox({ userId })).messages).toHaveLength(2);
    const conflict = await refusal(
      h.notify.notify({
        userId,
        category: 'comments',
        data: { ...data, text: 'other' },
        idempotencyKey: key,
      }),
    );
    expect(conflict.code).toBe(Code.AlreadyExists);
    await waitFor(() => h.smtp!.received.filter((m) => m.recipients.includes(address)).length === 2);
  });

  it('isolates channels: an SMS submit error is recorded on its line, the email goes, and a retried call sends the email once', async () => {
    const userId = newUserId();
    const address = `iso-${randomUUID()}@example.com`;
    h.directory.add({ userId, emails: [address], phones: ['+15550107777'] });
    const request = {
      userId,
      category: 'comments',
      data,
      idempotencyKey: `iso-${randomUUID()}`,
      overrides: [{ channel: TemplateChannel.SMS, backend: 'no-such-backend' }],
    };
    const { notification } = await h.notify.notify(request);
    const sms = notification!.channels.find((l) => l.channel === TemplateChannel.SMS)!;
    expect(sms.messageId).toBe('');
    expect(sms.error).toContain('unknown SMS backend');
    const email = notification!.channels.find((l) => l.channel === TemplateChannel.EMAIL)!;
    expect(email.messageId).not.toBe('');
    await h.notify.notify(request);
    await waitFor(() => h.smtp!.received.some((m) => m.recipients.includes(address)));
    await new Promise((r) => setTimeout(r, 200));
    expect(h.smtp!.received.filter((m) => m.recipients.includes(address))).toHaveLength(1);
  });

  it('overrides: skip is OVERRIDDEN, content replaces the template’s parts for that call', async () => {
    const userId = newUserId();
    h.directory.add({ userId, emails: [`ov-${randomUUID()}@example.com`] });
    const { notification } = await h.notify.notify({
      userId,
      category: 'comments',
      data,
      overrides: [
        { channel: TemplateChannel.EMAIL, skip: true },
        { channel: TemplateChannel.INBOX, content: { title: 'Hola {{ data.author }}' } },
      ],
    });
    expect(notification!.channels.find((l) => l.channel === TemplateChannel.EMAIL)!.skipped).toBe(
      SkipReason.OVERRIDDEN,
    );
    const [message] = (await h.running.inboxConnect.getInbox({ userId })).messages;
    expect([message!.title, message!.body]).toEqual(['Hola Zoë 😀', '你好 שלום']);
  });

  it('a suppressed contact point is reported SUPPRESSED (its delivery failed at once, never sent)', async () => {
    const userId = newUserId();
    const address = `supp-${randomUUID()}@example.com`;
    h.directory.add({ userId, emails: [address] });
    await h.running.notificationConnect.addSuppression({ channel: Channel.EMAIL, recipient: address });
    const { notification } = await h.notify.notify({ userId, category: 'comments', data });
    const email = notification!.channels.find((l) => l.channel === TemplateChannel.EMAIL)!;
    expect(email.skipped).toBe(SkipReason.SUPPRESSED);
    expect(email.messageId).not.toBe('');
  });

  it('records the locale of the template used (es-MX falls back to es; no inbox template for es-MX)', async () => {
    const userId = newUserId();
    h.directory.add({ userId, locale: 'es-MX' });
    const { notification } = await h.notify.notify({ userId, category: 'comments', data });
    expect(notification!.channels[0]!.locale).toBe('es');
    const [message] = (await h.running.inboxConnect.getInbox({ userId })).messages;
    expect(message!.title).toBe('Nuevo comentario de Zoë 😀');
  });

  it('a category without templates for a channel is skipped NO_TEMPLATE', async () => {
    const userId = newUserId();
    h.directory.add({ userId });
    const { notification } = await h.notify.notify({ userId, category: 'digest', data });
    expect(notification!.channels.map((l) => l.skipped)).toEqual([SkipReason.NO_TEMPLATE]);
  });
});

describe('GetNotification and ListNotifications', () => {
  it('lists a user’s notifications newest first in pages, and GetNotification of an unknown id is NOT_FOUND', async () => {
    const userId = newUserId();
    h.directory.add({ userId });
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      ids.push((await h.notify.notify({ userId, category: 'comments', data })).notification!.id);
      await new Promise((r) => setTimeout(r, 5));
    }
    const first = await h.notify.listNotifications({ userId, pageSize: 2 });
    expect(first.notifications.map((n) => n.id)).toEqual([ids[2], ids[1]]);
    const rest = await h.notify.listNotifications({ userId, pageSize: 2, pageToken: first.nextPageToken });
    expect(rest.notifications.map((n) => n.id)).toEqual([ids[0]]);
    expect(rest.nextPageToken).toBe('');
    const other = await refusal(
      h.notify.listNotifications({ userId: newUserId(), pageToken: first.nextPageToken }),
    );
    expect(other.code).toBe(Code.InvalidArgument);
    expect((await refusal(h.notify.getNotification({ id: randomUUID() }))).code).toBe(Code.NotFound);
    expect((await refusal(h.notify.getNotification({ id: 'not-a-uuid' }))).code).toBe(Code.InvalidArgument);
  });
});
