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

    describe('due work (scheduled notifications, held lines) and cancel', () => {
      const past = () => new Date(Date.now() - 1000);
      const later = () => new Date(Date.now() + 3_600_000);
      const request = { data: { text: 'שלום 😀 你好' }, overrides: [] };

      /** Claims every due item as `owner` and returns the one of `id` (the others stay leased). */
      async function claimMine(id: string, owner: string, leaseMs = 60_000) {
        const all = await store.claimDue(owner, leaseMs, 1000);
        return all.find((d) => d.notification.id === id) ?? null;
      }

      function scheduled(sendAt: Date) {
        return newNotification({ status: 'scheduled', sendAt });
      }

      it('a scheduled notification keeps its send time and request, is not claimed before it is due, and once due is claimed by one owner as fanning out', async () => {
        const early = scheduled(later());
        await store.create(early, request);
        expect(await store.get(early.id)).toMatchObject({ status: 'scheduled', sendAt: early.sendAt });
        expect(await claimMine(early.id, 'owner-1')).toBeNull();
        const due = scheduled(past());
        await store.create(due, request);
        const claimed = await claimMine(due.id, 'owner-1');
        expect(claimed).toMatchObject({ kind: 'send', request });
        expect(claimed!.notification.status).toBe('fanning_out');
        expect(claimed!.notification.sendAt).toEqual(due.sendAt);
        expect(await claimMine(due.id, 'owner-2')).toBeNull();
        const line: ChannelLine = {
          channel: 'inbox',
          contact: '',
          messageId: randomUUID(),
          skipped: null,
          error: null,
          locale: 'he',
        };
        expect(await store.finishDue(due.id, 'owner-2', [line])).toBe(false);
        expect(await store.finishDue(due.id, 'owner-1', [line])).toBe(true);
        expect(await store.get(due.id)).toMatchObject({ status: 'fanned_out', channels: [line] });
        // Done: never due again.
        expect(await claimMine(due.id, 'owner-3')).toBeNull();
      });

      it('an expired lease of due work is claimed again by another owner; the first can no longer save', async () => {
        const due = scheduled(past());
        await store.create(due, request);
        expect(await claimMine(due.id, 'owner-1', 1)).not.toBeNull();
        await sleep(30);
        const again = await claimMine(due.id, 'owner-2');
        expect(again).toMatchObject({ kind: 'send' });
        expect(await store.finishDue(due.id, 'owner-1', [])).toBe(false);
        expect(await store.finishDue(due.id, 'owner-2', [])).toBe(true);
      });

      it('a stopping owner gives its lease up and another owner takes the work at once', async () => {
        const due = scheduled(past());
        await store.create(due, request);
        await claimMine(due.id, 'owner-1');
        await store.releaseDue(due.id, 'owner-1');
        expect(await claimMine(due.id, 'owner-2')).toMatchObject({ kind: 'send' });
        expect(await store.finishDue(due.id, 'owner-2', [])).toBe(true);
      });

      it('held, throttled and digested lines keep their fields; held lines make the notification due at the earliest hold, with its request, and once released it is done', async () => {
        const n = newNotification();
        await store.create(n);
        const heldUntil = past();
        const lines: ChannelLine[] = [
          {
            channel: 'inbox',
            contact: '',
            messageId: randomUUID(),
            skipped: null,
            error: null,
            locale: 'en',
          },
          {
            channel: 'sms',
            contact: '',
            messageId: null,
            skipped: null,
            error: null,
            locale: 'en',
            heldUntil,
            holdReason: 'quiet_hours',
            throttledBy: null,
            digestId: null,
          },
          {
            channel: 'push',
            contact: '',
            messageId: null,
            skipped: null,
            error: null,
            locale: 'en',
            heldUntil: later(),
            holdReason: 'cap_deferred',
            throttledBy: null,
            digestId: null,
          },
          {
            channel: 'email',
            contact: '',
            messageId: null,
            skipped: 'throttled',
            error: null,
            locale: 'en',
            heldUntil: null,
            holdReason: null,
            throttledBy: 'email 3/1h',
            digestId: null,
          },
        ];
        await store.saveFanOut(n.id, lines, request);
        expect(await store.get(n.id)).toMatchObject({ status: 'fanned_out', channels: lines });
        const due = await claimMine(n.id, 'owner-1');
        expect(due).toMatchObject({ kind: 'release', request });
        expect(due!.notification.status).toBe('fanned_out');
        expect(due!.notification.channels).toMatchObject(lines);
        // The SMS line released and sent; the push line still held (later): due again then, not now.
        const released = lines.map((l) =>
          l.channel === 'sms' ? { ...l, heldUntil: null, holdReason: null, messageId: randomUUID() } : l,
        );
        expect(await store.finishDue(n.id, 'owner-1', released)).toBe(true);
        expect(await claimMine(n.id, 'owner-2')).toBeNull();
        expect((await store.get(n.id))!.channels[1]).toMatchObject({ heldUntil: null, holdReason: null });
        // A saved fan-out without held lines is not due at all.
        const plain = newNotification();
        await store.create(plain);
        await store.saveFanOut(plain.id, [lines[0]!], request);
        expect(await claimMine(plain.id, 'owner-3')).toBeNull();
      });

      it('saveFanOuts saves a group in one call: each its own lines (replacing old ones) and status, a held one due with its request, an unknown id ignored', async () => {
        const held = newNotification({ userId: 'user-held-😀' });
        const plain = newNotification({ userId: 'user-plain-משתמש' });
        const empty = newNotification({ userId: 'user-empty-用户' });
        for (const n of [held, plain, empty]) await store.create(n);
        const line = (over: Partial<ChannelLine>): ChannelLine => ({
          channel: 'inbox',
          contact: '',
          messageId: randomUUID(),
          skipped: null,
          error: null,
          locale: 'en',
          ...over,
        });
        // Old lines of `plain` (a redone fan-out) are replaced, not added to.
        await store.saveFanOut(plain.id, [line({}), line({})]);
        const plainLines = [line({ locale: 'he' }), line({ channel: 'email', contact: 'a***@example.com' })];
        const heldLines = [
          line({}),
          line({ channel: 'sms', messageId: null, heldUntil: past(), holdReason: 'quiet_hours' }),
        ];
        await store.saveFanOuts([
          { id: plain.id, lines: plainLines, request },
          { id: randomUUID(), lines: [line({})] },
          { id: held.id, lines: heldLines, request },
          { id: empty.id, lines: [] },
        ]);
        await store.saveFanOuts([]);
        expect(await store.get(plain.id)).toMatchObject({ status: 'fanned_out', channels: plainLines });
        expect((await store.get(plain.id))!.channels).toHaveLength(2);
        expect(await store.get(held.id)).toMatchObject({ status: 'fanned_out', channels: heldLines });
        expect(await store.get(empty.id)).toMatchObject({ status: 'fanned_out', channels: [] });
        // One claim (it leases every due item): only the held one of the three is due.
        const due = (await store.claimDue('owner-1', 60_000, 1000)).map((d) => d.notification.id);
        expect(due).toContain(held.id);
        expect(due).not.toContain(plain.id);
        expect(due).not.toContain(empty.id);
      });

      it('cancel: a scheduled notification becomes cancelled (1) and is never claimed; again 0; an unknown id is null', async () => {
        const n = scheduled(past());
        await store.create(n, request);
        const first = await store.cancel(n.id, []);
        expect(first).toMatchObject({ cancelled: 1, going: false });
        expect(first!.record.status).toBe('cancelled');
        expect(await claimMine(n.id, 'owner-1')).toBeNull();
        const again = await store.cancel(n.id, []);
        expect(again).toMatchObject({ cancelled: 0 });
        expect(again!.record.status).toBe('cancelled');
        expect(await store.cancel(randomUUID(), [])).toBeNull();
      });

      it('cancel loses to a runner that already claimed it: nothing cancelled, it is going', async () => {
        const n = scheduled(past());
        await store.create(n, request);
        await claimMine(n.id, 'owner-1');
        const lost = await store.cancel(n.id, []);
        expect(lost).toMatchObject({ cancelled: 0, going: true });
        expect(lost!.record.status).toBe('fanning_out');
        expect(await store.finishDue(n.id, 'owner-1', [])).toBe(true);
        // Held lines a runner is releasing are going too: the cancel leaves them to it.
        const held = newNotification();
        await store.create(held);
        const line: ChannelLine = {
          channel: 'sms',
          contact: '',
          messageId: null,
          skipped: null,
          error: null,
          locale: 'en',
          heldUntil: past(),
          holdReason: 'quiet_hours',
        };
        await store.saveFanOut(held.id, [line], request);
        expect(await claimMine(held.id, 'owner-1')).toMatchObject({ kind: 'release' });
        const going = await store.cancel(held.id, []);
        expect(going!.cancelled).toBe(0);
        expect(going!.record.channels[0]).toMatchObject({ skipped: null, holdReason: 'quiet_hours' });
        expect(await store.finishDue(held.id, 'owner-1', [])).toBe(true);
      });

      it('cancel: held lines and the given digests’ unsent lines become skipped cancelled, sent lines stay, and it is no longer due', async () => {
        const n = newNotification();
        await store.create(n);
        const sent: ChannelLine = {
          channel: 'inbox',
          contact: '',
          messageId: randomUUID(),
          skipped: null,
          error: null,
          locale: 'en',
        };
        const base = { contact: '', messageId: null, skipped: null, error: null, locale: 'en' };
        await store.saveFanOut(
          n.id,
          [
            sent,
            { ...base, channel: 'sms', heldUntil: past(), holdReason: 'quiet_hours' },
            { ...base, channel: 'email', digestId: 'digest-1' },
            { ...base, channel: 'push', digestId: 'digest-2' },
          ],
          request,
        );
        const result = await store.cancel(n.id, ['digest-1']);
        expect(result!.cancelled).toBe(2);
        expect(result!.record.channels.map((l) => [l.channel, l.skipped, l.heldUntil ?? null])).toEqual([
          ['inbox', null, null],
          ['sms', 'cancelled', null],
          ['email', 'cancelled', null],
          ['push', null, null],
        ]);
        expect(result!.record.channels[0]!.messageId).toBe(sent.messageId);
        expect(await claimMine(n.id, 'owner-1')).toBeNull();
        expect((await store.cancel(n.id, ['digest-1']))!.cancelled).toBe(0);
      });

      it('the retention keeps what is still due (scheduled, or with held lines) however old, and purges it once done or cancelled', async () => {
        const longAgo = new Date('2020-01-01T00:00:00.000Z');
        const cutoff = new Date('2021-01-01T00:00:00.000Z');
        const waiting = newNotification({ status: 'scheduled', sendAt: later(), createdAt: longAgo });
        await store.create(waiting, request);
        const held = newNotification({ createdAt: longAgo });
        await store.create(held);
        await store.saveFanOut(
          held.id,
          [
            {
              channel: 'sms',
              contact: '',
              messageId: null,
              skipped: null,
              error: null,
              locale: 'en',
              heldUntil: later(),
              holdReason: 'cap_deferred',
            },
          ],
          request,
        );
        await store.purgeBefore(cutoff, 1000);
        expect(await store.get(waiting.id)).not.toBeNull();
        expect(await store.get(held.id)).not.toBeNull();
        await store.cancel(waiting.id, []);
        await store.cancel(held.id, []);
        await store.purgeBefore(cutoff, 1000);
        expect(await store.get(waiting.id)).toBeNull();
        expect(await store.get(held.id)).toBeNull();
      });

      it('a scheduled topic notification’s job is not claimed before its send time; cancelled while scheduled, its job ends without being handed out', async () => {
        const drain = async (owner: string) => {
          const seen: string[] = [];
          for (let job = await store.claimTopicJob(owner, 60_000); job;) {
            seen.push(job.notification.id);
            await store.finishTopicJob(job.notification.id, owner);
            job = await store.claimTopicJob(owner, 60_000);
          }
          return seen;
        };
        await drain('drainer');
        const early = newNotification({ userId: null, topic: 'later', status: 'scheduled', sendAt: later() });
        await store.create(early, request);
        const cancelled = newNotification({
          userId: null,
          topic: 'cancelled',
          status: 'scheduled',
          sendAt: past(),
        });
        await store.create(cancelled, request);
        expect((await store.cancel(cancelled.id, []))!.cancelled).toBe(1);
        const due = newNotification({ userId: null, topic: 'due', status: 'scheduled', sendAt: past() });
        await store.create(due, request);
        expect(await drain('owner-1')).toEqual([due.id]);
        expect((await store.get(cancelled.id))!.status).toBe('cancelled');
        expect((await store.get(early.id))!.status).toBe('scheduled');
      });
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
