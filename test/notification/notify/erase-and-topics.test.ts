/**
 * Through the real service (memory stores): the notify area's erasers (what DeleteUser runs), and a
 * topic fan-out in pages.
 */
import { Code, ConnectError } from '@connectrpc/connect';
import { randomUUID } from 'node:crypto';
import { NotificationStatus, SkipReason } from '../../../shared/gen/svc/notification/v1/notify_pb';
import { TemplateChannel } from '../../../shared/gen/svc/notification/v1/templates_pb';
import { DeliveryStatus } from '../../../shared/gen/svc/notification/v1/notification_pb';
import { startNotifyHarness, waitForAsync, type NotifyHarness } from './support';

let h: NotifyHarness;

beforeAll(async () => {
  h = await startNotifyHarness({ notify: { topic_page_size: 7 } });
  h.renderer.set('comments', 'inbox', 'en', {
    title: 'Hi {{ user.attributes.name }}',
    body: '{{ data.text }}',
  });
  h.renderer.set('comments', 'sms', 'en', { text: '{{ data.text }}' });
  h.renderer.set('comments', 'email', 'en', { subject: 'S', text: '{{ data.text }}' });
});

afterAll(async () => {
  await h?.close();
});

async function code(p: Promise<unknown>): Promise<Code | undefined> {
  try {
    await p;
    return undefined;
  } catch (err) {
    return ConnectError.from(err).code;
  }
}

describe('erasure (the erasers DeleteUser runs)', () => {
  it('after the erasers ran, the user’s notifications are gone and their deliveries keep status and mask but no content', async () => {
    const userId = `user-${randomUUID()}`;
    h.directory.add({
      userId,
      emails: ['erase@example.com'],
      phones: ['+15550105555'],
      attributes: { name: 'Ana' },
    });
    const { notification } = await h.notify.notify({
      userId,
      category: 'comments',
      data: { text: 'secret 😀' },
    });
    const deliveryIds = notification!.channels
      .filter((l) => l.channel === TemplateChannel.EMAIL || l.channel === TemplateChannel.SMS)
      .map((l) => l.messageId);
    expect(notification!.channels.map((l) => l.error)).toEqual(['', '', '', '']);
    expect(deliveryIds).toHaveLength(2);
    await waitForAsync(async () => {
      const got = await h.notify.getNotification({ id: notification!.id });
      return got.notification!.channels.filter((l) => l.deliveryStatus === DeliveryStatus.SENT).length === 2;
    });

    for (const erase of h.running.app.userErasers) await erase(userId);

    expect(await code(h.notify.getNotification({ id: notification!.id }))).toBe(Code.NotFound);
    expect((await h.notify.listNotifications({ userId })).notifications).toEqual([]);
    for (const id of deliveryIds) {
      const { delivery } = await h.running.notificationConnect.getDelivery({ id });
      expect(delivery!.status).toBe(DeliveryStatus.SENT);
      expect(delivery!.recipient).toMatch(/\*\*\*/);
      const record = await h.running.app.deliveries.get(id);
      expect(record.contentErasedAt).not.toBeNull();
    }
  });
});

describe('topic fan-out', () => {
  it('a topic notification answers at once, then each member gets one notification of their own; a member whose data fails to render is RENDER_FAILED', async () => {
    const topic = `launch-${randomUUID()}`;
    const members: string[] = [];
    for (let i = 0; i < 30; i++) {
      const userId = `member-${String(i).padStart(3, '0')}-${randomUUID()}`;
      // Member 5 lacks the attribute the inbox template reads.
      h.directory.add({ userId, attributes: i === 5 ? {} : { name: `名前 ${i}` } });
      members.push(userId);
    }
    h.directory.subscribe(topic, members);
    const { notification, created } = await h.notify.notify({
      topic,
      category: 'comments',
      data: { text: 'نص 🚀' },
    });
    expect(created).toBe(true);
    expect(notification!.userId).toBe('');
    expect(notification!.topic).toBe(topic);
    const id = notification!.id;
    await waitForAsync(
      async () =>
        (await h.notify.getNotification({ id })).notification!.status === NotificationStatus.FANNED_OUT,
      'the topic fan-out',
    );
    const done = (await h.notify.getNotification({ id })).notification!;
    expect(done.progress).toMatchObject({ usersTotal: 30n, usersDone: 30n });
    for (const [i, userId] of members.entries()) {
      const { notifications } = await h.notify.listNotifications({ userId });
      expect(notifications).toHaveLength(1);
      const [mine] = notifications;
      expect(mine!.parentId).toBe(id);
      expect(mine!.topic).toBe(topic);
      const inbox = mine!.channels.find((l) => l.channel === TemplateChannel.INBOX)!;
      if (i === 5) {
        expect(inbox.skipped).toBe(SkipReason.RENDER_FAILED);
        expect(inbox.error).toContain('user.attributes.name');
      } else {
        expect(inbox.skipped).toBe(SkipReason.UNSPECIFIED);
        const messages = (await h.running.inboxConnect.getInbox({ userId })).messages;
        expect(messages.map((m) => m.title)).toEqual([`Hi 名前 ${i}`]);
      }
    }
  });

  it('a member deleted after its group was read and before it was written gets the erasers run again', async () => {
    // DeleteUser's erasers may run between the group's read and its writes (inbox, deliveries,
    // lines): the group's end asks the directory to erase again whoever is gone by then.
    const topic = `race-${randomUUID()}`;
    const gone = `member-gone-😀-${randomUUID()}`;
    const kept = `member-kept-${randomUUID()}`;
    h.directory.add({ userId: gone, attributes: { name: 'x' } });
    h.directory.add({ userId: kept, attributes: { name: 'y' } });
    h.directory.subscribe(topic, [gone, kept]);
    const findUsers = h.directory.findUsers.bind(h.directory);
    h.directory.findUsers = async (ids) => {
      const found = await findUsers(ids);
      if (ids.includes(gone)) h.directory.users.delete(gone);
      return found;
    };
    try {
      const { notification } = await h.notify.notify({ topic, category: 'comments', data: { text: 'שלום' } });
      await waitForAsync(
        async () =>
          (await h.notify.getNotification({ id: notification!.id })).notification!.status ===
          NotificationStatus.FANNED_OUT,
        'the topic fan-out',
      );
    } finally {
      h.directory.findUsers = findUsers;
    }
    expect(h.directory.erasedAfterWrite).toContain(gone);
    expect(h.directory.erasedAfterWrite).not.toContain(kept);
  });

  it('the same key again returns the topic notification (created false) and starts no second fan-out', async () => {
    const topic = `again-${randomUUID()}`;
    const userId = `member-${randomUUID()}`;
    h.directory.add({ userId, attributes: { name: 'x' } });
    h.directory.subscribe(topic, [userId]);
    const key = `topic-${randomUUID()}`;
    const a = await h.notify.notify({
      topic,
      category: 'comments',
      data: { text: 't' },
      idempotencyKey: key,
    });
    const b = await h.notify.notify({
      topic,
      category: 'comments',
      data: { text: 't' },
      idempotencyKey: key,
    });
    expect(b.created).toBe(false);
    expect(b.notification!.id).toBe(a.notification!.id);
    await waitForAsync(
      async () =>
        (await h.notify.getNotification({ id: a.notification!.id })).notification!.status ===
        NotificationStatus.FANNED_OUT,
    );
    expect((await h.notify.listNotifications({ userId })).notifications).toHaveLength(1);
  });
});
