/**
 * The behaviour every NotificationStore passes (memory, PGlite, PostgreSQL): records and their
 * lines, idempotency per caller, a user's keyset pages, erasure, and the topic jobs' lease, page and
 * cursor rules.
 */
import { randomUUID } from 'node:crypto';
import type { NotificationStore } from '../../../services/notification/notify/store';
import type { ChannelLine, NewNotification } from '../../../services/notification/notify/types';

/** What a backend's test file provides. */
export interface StoreBackend {
  store: NotificationStore;
  close(): Promise<void>;
}

let tick = Date.parse('2026-11-27T10:00:00.000Z');

/** A new user notification (a distinct, later creation time each call). */
export function newNotification(over: Partial<NewNotification> = {}): NewNotification {
  return {
    id: randomUUID(),
    scope: 'caller-a',
    userId: `user-${randomUUID()}`,
    topic: null,
    parentId: null,
    category: 'comments',
    priority: 'normal',
    idempotencyKey: null,
    requestHash: 'h1',
    status: 'accepted',
    createdAt: new Date((tick += 1000)),
    ...over,
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Registers the contract suite for one backend. */
export function describeNotificationStoreContract(name: string, open: () => Promise<StoreBackend>): void {
  describe(`${name}: notification store contract`, () => {
    let backend: StoreBackend;
    let store: NotificationStore;

    beforeAll(async () => {
      backend = await open();
      store = backend.store;
    });
    afterAll(async () => {
      await backend?.close();
    });

    it('when a fan-out is saved, get returns the notification fanned out with its lines in order (emoji, CJK, RTL intact)', async () => {
      const n = newNotification({ userId: 'user-😀-用户-משתמש' });
      const { record, created } = await store.create(n);
      expect(created).toBe(true);
      expect(record).toMatchObject({
        id: n.id,
        status: 'accepted',
        channels: [],
        usersTotal: 0,
        usersDone: 0,
      });
      const lines: ChannelLine[] = [
        { channel: 'inbox', contact: '', messageId: randomUUID(), skipped: null, error: null, locale: 'es' },
        {
          channel: 'email',
          contact: '😀***@例え.jp',
          messageId: randomUUID(),
          skipped: null,
          error: null,
          locale: 'he',
        },
        {
          channel: 'sms',
          contact: '',
          messageId: null,
          skipped: 'no_contact_point',
          error: null,
          locale: '',
        },
        {
          channel: 'push',
          contact: 'abcd…wxyz',
          messageId: null,
          skipped: null,
          error: 'שגיאה 😀',
          locale: 'en',
        },
      ];
      await store.saveFanOut(n.id, lines);
      const got = await store.get(n.id);
      expect(got).toMatchObject({ status: 'fanned_out', userId: 'user-😀-用户-משתמש', channels: lines });
    });

    it('when the same caller uses a key twice, the first notification comes back (created false); another caller gets its own', async () => {
      const key = `key-${randomUUID()}`;
      const first = await store.create(newNotification({ idempotencyKey: key }));
      const again = await store.create(newNotification({ idempotencyKey: key, requestHash: 'other' }));
      expect(again.created).toBe(false);
      expect(again.record.id).toBe(first.record.id);
      expect(again.record.requestHash).toBe('h1');
      expect((await store.findByKey('caller-a', key))?.id).toBe(first.record.id);
      const other = await store.create(newNotification({ idempotencyKey: key, scope: 'caller-b' }));
      expect(other.created).toBe(true);
      expect(await store.findByKey('caller-c', key)).toBeNull();
    });

    it('list pages one user of one caller newest first, with a next key exactly when more remain', async () => {
      const userId = `user-${randomUUID()}`;
      const ids: string[] = [];
      for (let i = 0; i < 5; i++) ids.push((await store.create(newNotification({ userId }))).record.id);
      await store.create(newNotification({ userId, scope: 'caller-b' }));
      await store.create(newNotification());
      const first = await store.list('caller-a', userId, 2);
      expect(first.records.map((r) => r.id)).toEqual([ids[4], ids[3]]);
      const second = await store.list('caller-a', userId, 2, first.nextKey!);
      expect(second.records.map((r) => r.id)).toEqual([ids[2], ids[1]]);
      const last = await store.list('caller-a', userId, 2, second.nextKey!);
      expect(last.records.map((r) => r.id)).toEqual([ids[0]]);
      expect(last.nextKey).toBeNull();
      // A page of exactly the rest has no next key.
      const exact = await store.list('caller-a', userId, 5);
      expect(exact.records).toHaveLength(5);
      expect(exact.nextKey).toBeNull();
    });

    it('eraseUser deletes every notification of the user (lines included) and nobody else’s', async () => {
      const userId = `user-${randomUUID()}`;
      const mine = await store.create(newNotification({ userId, idempotencyKey: `k-${randomUUID()}` }));
      await store.saveFanOut(mine.record.id, [
        { channel: 'inbox', contact: '', messageId: randomUUID(), skipped: null, error: null, locale: 'en' },
      ]);
      const other = await store.create(newNotification());
      expect(await store.eraseUser(userId)).toBe(1);
      expect(await store.get(mine.record.id)).toBeNull();
      expect((await store.list('caller-a', userId, 10)).records).toEqual([]);
      expect(await store.get(other.record.id)).not.toBeNull();
    });

    it('purgeBefore deletes the oldest first up to the limit, with their lines and topic members, and keeps an unfinished topic fan-out', async () => {
      const longAgo = (d: number) => new Date(Date.parse('2020-01-01T00:00:00.000Z') + d * 1000);
      const oldest = await store.create(newNotification({ createdAt: longAgo(1) }));
      await store.saveFanOut(oldest.record.id, [
        { channel: 'inbox', contact: '', messageId: randomUUID(), skipped: null, error: null, locale: 'en' },
      ]);
      const older = await store.create(
        newNotification({ createdAt: longAgo(2), idempotencyKey: `p-${randomUUID()}` }),
      );
      const running = newNotification({ userId: null, topic: 'still-running', createdAt: longAgo(3) });
      await store.create(running, { data: {}, overrides: [] });
      const recent = await store.create(newNotification());
      expect(await store.purgeBefore(new Date('2021-01-01T00:00:00.000Z'), 1)).toBe(1);
      expect(await store.get(oldest.record.id)).toBeNull();
      expect(await store.get(older.record.id)).not.toBeNull();
      expect(await store.purgeBefore(new Date('2021-01-01T00:00:00.000Z'), 1000)).toBe(1);
      expect(await store.get(older.record.id)).toBeNull();
      expect(await store.findByKey('caller-a', older.record.idempotencyKey!)).toBeNull();
      expect(await store.get(running.id)).not.toBeNull();
      expect(await store.get(recent.record.id)).not.toBeNull();
      // Once its fan-out finished, the old topic notification goes too, with its members.
      let job = await store.claimTopicJob('purger', 60_000);
      while (job && job.notification.id !== running.id) {
        await store.finishTopicJob(job.notification.id, 'purger');
        job = await store.claimTopicJob('purger', 60_000);
      }
      const member = {
        ...newNotification({ userId: 'm1', topic: 'still-running', parentId: running.id }),
        userId: 'm1',
        parentId: running.id,
      };
      await store.addTopicPage(running.id, 'purger', [member], 1, '$end');
      await store.finishTopicJob(running.id, 'purger');
      expect(await store.purgeBefore(new Date('2021-01-01T00:00:00.000Z'), 1000)).toBe(1);
      expect(await store.get(running.id)).toBeNull();
      expect(await store.get(member.id)).toBeNull();
    });

    describe('topic jobs', () => {
      // Jobs are claimed oldest first across the store: each test drains what it created.
      async function claimOwn(id: string, owner: string, leaseMs = 60_000) {
        for (;;) {
          const job = await store.claimTopicJob(owner, leaseMs);
          if (!job) return null;
          if (job.notification.id === id) return job;
          await store.finishTopicJob(job.notification.id, owner);
        }
      }

      it('a topic notification gets a job one owner leases at a time; its request comes back with it', async () => {
        const topic = newNotification({ userId: null, topic: 'launch-🚀' });
        await store.create(topic, { data: { title: 'مرحبا 世界' }, overrides: [] });
        const job = await claimOwn(topic.id, 'owner-1');
        expect(job).toMatchObject({
          topic: 'launch-🚀',
          cursor: null,
          counted: false,
          request: { data: { title: 'مرحبا 世界' }, overrides: [] },
        });
        expect(job!.notification.status).toBe('fanning_out');
        expect(await store.claimTopicJob('owner-2', 60_000)).toBeNull();
        expect(await store.renewTopicJob(topic.id, 'owner-2', 60_000)).toBe(false);
        expect(await store.setTopicTotal(topic.id, 'owner-2', 3)).toBe(false);
        expect(await store.setTopicTotal(topic.id, 'owner-1', 3)).toBe(true);
        expect((await store.get(topic.id))!.usersTotal).toBe(3);
        await store.releaseTopicJob(topic.id, 'owner-1');
        const taken = await store.claimTopicJob('owner-2', 60_000);
        expect(taken).toMatchObject({ counted: true });
        expect(taken!.notification.id).toBe(topic.id);
        expect(await store.finishTopicJob(topic.id, 'owner-2')).toBe(true);
      });

      it('a page creates each member once per topic notification, moves the cursor and counts users_done; a lost lease writes nothing', async () => {
        const topic = newNotification({ userId: null, topic: 'news' });
        await store.create(topic, { data: {}, overrides: [] });
        await claimOwn(topic.id, 'owner-1');
        const child = (userId: string) => ({
          ...newNotification({ userId, topic: 'news', parentId: topic.id }),
          userId,
          parentId: topic.id,
        });
        expect(await store.addTopicPage(topic.id, 'owner-1', [child('u1'), child('u2')], 2, 'tok-1')).toBe(
          true,
        );
        // The same page redone (a crash before the fan-out) creates nothing twice.
        expect(await store.addTopicPage(topic.id, 'owner-1', [child('u1'), child('u2')], 0, 'tok-1')).toBe(
          true,
        );
        expect(await store.addTopicPage(topic.id, 'owner-2', [child('u3')], 1, 'tok-2')).toBe(false);
        const pending = await store.pendingChildren(topic.id, 10);
        expect(pending.map((p) => p.userId).sort()).toEqual(['u1', 'u2']);
        expect(pending.every((p) => p.parentId === topic.id && p.topic === 'news')).toBe(true);
        await store.saveFanOut(pending[0]!.id, []);
        expect(await store.pendingChildren(topic.id, 10)).toHaveLength(1);
        expect((await store.get(topic.id))!.usersDone).toBe(2);
        await store.releaseTopicJob(topic.id, 'owner-1');
        const resumed = await claimOwn(topic.id, 'owner-3');
        expect(resumed!.cursor).toBe('tok-1');
        expect(await store.finishTopicJob(topic.id, 'owner-3')).toBe(true);
        expect((await store.get(topic.id))!.status).toBe('fanned_out');
        expect(await claimOwn(topic.id, 'owner-4')).toBeNull();
      });

      it('an expired lease can be claimed by another owner, and the old owner can no longer write', async () => {
        const topic = newNotification({ userId: null, topic: 'expiring' });
        await store.create(topic, { data: {}, overrides: [] });
        await claimOwn(topic.id, 'owner-1', 1);
        await sleep(30);
        const job = await claimOwn(topic.id, 'owner-2');
        expect(job).not.toBeNull();
        expect(await store.renewTopicJob(topic.id, 'owner-1', 60_000)).toBe(false);
        expect(await store.finishTopicJob(topic.id, 'owner-1')).toBe(false);
        expect(await store.finishTopicJob(topic.id, 'owner-2')).toBe(true);
      });
    });
  });
}
