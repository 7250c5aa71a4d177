/**
 * The behaviour every DigestBook passes (memory, PGlite, PostgreSQL): one digest per key and window,
 * keys never merged, out-of-order events by their own time, max_count, claim/finish/defer with
 * leases, an event arriving while its digest is taken going into the next, removal and erasure.
 */
import { randomUUID } from 'node:crypto';
import type { CategoryConfig } from '../../../../services/notification/notify/config';
import { CategoryConfigSchema } from '../../../../services/notification/notify/config';
import type { DigestEvent } from '../../../../services/notification/notify/timing';
import type { DigestStore } from '../../../../services/notification/notify/digest';

/** What a backend's test file provides. */
export interface BookBackend {
  /** A book over these categories (the same storage each call). */
  book(categories: readonly CategoryConfig[]): DigestStore;
  /** The book's "now" (the database's on a database). */
  now(): Promise<Date>;
  /** Lets `ms` pass on the book's clock (a fake clock moves; a database waits). */
  pass(ms: number): Promise<void>;
}

const HOUR = 3600_000;

/** A category digesting email (and push) with this config. */
export function digestCategory(
  name: string,
  digest: Record<string, unknown>,
  channels: ('email' | 'push')[] = ['email', 'push'],
): CategoryConfig {
  return CategoryConfigSchema.parse({
    name,
    channels: ['inbox', ...channels],
    digest: Object.fromEntries(channels.map((c) => [c, digest])),
  });
}

/** An event of `comments` for email, key `thread-1`, at `occurredAt`. */
export function digestEvent(occurredAt: Date, over: Partial<DigestEvent> = {}): DigestEvent {
  return {
    scope: 'caller-a',
    userId: 'user-1',
    category: 'comments',
    channel: 'email',
    key: 'thread-1',
    notificationId: randomUUID(),
    occurredAt,
    data: { text: 'hello' },
    ...over,
  };
}

const plus = (d: Date, ms: number) => new Date(d.getTime() + ms);

/** Registers the contract suite for one backend. */
export function describeDigestBookContract(name: string, open: () => Promise<BookBackend>): void {
  describe(`${name}: digest book contract`, () => {
    let backend: BookBackend;
    let book: DigestStore;
    // Each test has its own user, so tests never see each other's digests.
    let user: string;
    const ev = (at: Date, over: Partial<DigestEvent> = {}) => digestEvent(at, { userId: user, ...over });

    beforeAll(async () => {
      backend = await open();
      book = backend.book([
        digestCategory('comments', { window: '1h', key: 'thread_id', max_count: 3 }),
        digestCategory('daily', { daily_at: '09:00' }),
        digestCategory('tiny', { window: 1, max_count: 1000 }),
      ]);
    });
    beforeEach(() => {
      user = `user-${randomUUID()}`;
    });

    /** Claims until nothing is due; every digest claimed by `owner`. */
    async function claimAll(owner = 'runner-a') {
      const all = [];
      for (;;) {
        const got = await book.claimDue(owner, 60_000, 50);
        if (got.length === 0) return all;
        all.push(...got);
      }
    }

    it('events of one key inside the window make one open digest, due at the window end', async () => {
      const now = await backend.now();
      const a = await book.add(ev(now));
      const b = await book.add(ev(plus(now, 10 * 60_000)));
      expect(b.digestId).toBe(a.digestId);
      expect(a.flushAt).toEqual(plus(now, HOUR));
      expect(await book.get(a.digestId)).toEqual({
        id: a.digestId,
        status: 'open',
        flushAt: plus(now, HOUR),
        count: 2,
        messageId: null,
        error: null,
      });
    });

    it('two keys, users, categories, channels or callers never merge', async () => {
      const now = await backend.now();
      const ids = new Set<string>();
      for (const over of [
        {},
        { key: 'thread-2' },
        { userId: `${user}-b` },
        { category: 'daily' },
        { channel: 'push' as const },
        { scope: 'caller-b' },
      ]) {
        ids.add((await book.add(ev(now, over))).digestId);
      }
      expect(ids.size).toBe(6);
      for (const id of ids) expect((await book.get(id))?.count).toBe(1);
    });

    it('adding the same notification and channel again is the same event, counted once', async () => {
      const now = await backend.now();
      const e = ev(now);
      const a = await book.add(e);
      const again = await book.add({ ...e, occurredAt: plus(now, 1000) });
      expect(again.digestId).toBe(a.digestId);
      expect((await book.get(a.digestId))?.count).toBe(1);
    });

    it('at max_count the digest is due at once and the next event opens a new digest', async () => {
      const now = await backend.now();
      const ids = [];
      for (let i = 0; i < 3; i++) ids.push((await book.add(ev(plus(now, i)))).digestId);
      expect(new Set(ids).size).toBe(1);
      const full = await book.get(ids[0]!);
      expect(full?.count).toBe(3);
      expect(full!.flushAt.getTime()).toBeLessThanOrEqual((await backend.now()).getTime());
      const next = await book.add(ev(plus(now, 3)));
      expect(next.digestId).not.toBe(ids[0]);
      const claimed = (await claimAll()).filter((d) => d.userId === user);
      expect(claimed.map((d) => d.id)).toEqual([ids[0]]);
      expect(claimed[0]!.events).toHaveLength(3);
    });

    it('a taken digest has its events oldest first by their own time, data intact (emoji, CJK, RTL)', async () => {
      const now = await backend.now();
      const texts = ['😀 first', '第二 second', 'שלישי third'];
      // Added out of order: third, first, second.
      const order = [2, 0, 1];
      for (const i of order) await book.add(ev(plus(now, i * 1000), { data: { text: texts[i] } }));
      const [digest] = (await claimAll()).filter((d) => d.userId === user);
      expect(digest).toMatchObject({
        scope: 'caller-a',
        userId: user,
        category: 'comments',
        channel: 'email',
        key: 'thread-1',
        // The window opened at the first event added (the third); the older two joined it.
        windowStart: plus(now, 2000),
      });
      expect(digest!.events.map((e) => e.data)).toEqual(texts.map((text) => ({ text })));
      expect(digest!.events.map((e) => e.occurredAt)).toEqual([0, 1, 2].map((i) => plus(now, i * 1000)));
      expect((await book.get(digest!.id))?.status).toBe('sending');
    });

    it('out-of-order events go to the digest of their own time while it is open', async () => {
      const now = await backend.now();
      const first = await book.add(ev(plus(now, -30 * 60_000)));
      // Past the first digest's window: a second digest opens.
      const second = await book.add(ev(plus(now, 40 * 60_000)));
      expect(second.digestId).not.toBe(first.digestId);
      // Late events: inside the first window, and older than every open digest.
      expect((await book.add(ev(plus(now, -20 * 60_000)))).digestId).toBe(first.digestId);
      expect((await book.add(ev(plus(now, -40 * 60_000)))).digestId).toBe(first.digestId);
      // Between the two windows: the next open one.
      expect((await book.add(ev(plus(now, 35 * 60_000)))).digestId).toBe(second.digestId);
    });

    it('an event added while its digest is being sent goes into the next digest', async () => {
      const now = await backend.now();
      const [a, b, c] = [ev(now), ev(plus(now, 1)), ev(plus(now, 2))];
      await book.add(a);
      await book.add(b);
      await book.add(c);
      const [taken] = (await claimAll()).filter((d) => d.userId === user);
      const late = ev(plus(now, 3));
      const next = await book.add(late);
      expect(next.digestId).not.toBe(taken!.id);
      expect((await book.get(taken!.id))?.count).toBe(3);
      expect((await book.get(next.digestId))?.count).toBe(1);
    });

    it('finish marks a taken digest sent for its owner only', async () => {
      const now = await backend.now();
      for (let i = 0; i < 3; i++) await book.add(ev(plus(now, i)));
      const [taken] = (await claimAll('runner-a')).filter((d) => d.userId === user);
      expect(await book.finish(taken!.id, 'runner-b', 'm-1', null)).toBe(false);
      expect(await book.finish(taken!.id, 'runner-a', 'delivery-1', null)).toBe(true);
      expect(await book.get(taken!.id)).toMatchObject({ status: 'sent', messageId: 'delivery-1', count: 3 });
      expect(await book.finish(taken!.id, 'runner-a', 'delivery-1', null)).toBe(false);
      const failed = await book.add(ev(plus(now, 5), { key: 'other' }));
      expect(failed.digestId).not.toBe(taken!.id);
    });

    it('defer puts a taken digest back, due later; events meanwhile go to the next digest', async () => {
      const now = await backend.now();
      for (let i = 0; i < 3; i++) await book.add(ev(plus(now, i)));
      const [taken] = (await claimAll()).filter((d) => d.userId === user);
      expect(await book.defer(taken!.id, 'runner-b', plus(now, HOUR))).toBe(false);
      const until = plus(await backend.now(), 1500);
      expect(await book.defer(taken!.id, 'runner-a', until)).toBe(true);
      expect(await book.get(taken!.id)).toMatchObject({ status: 'open', flushAt: until, count: 3 });
      const meanwhile = await book.add(ev(plus(now, 4)));
      expect(meanwhile.digestId).not.toBe(taken!.id);
      expect((await claimAll()).filter((d) => d.userId === user)).toEqual([]);
      await backend.pass(2000);
      const again = (await claimAll()).filter((d) => d.userId === user);
      expect(again.map((d) => d.id)).toEqual([taken!.id]);
      expect(again[0]!.events).toHaveLength(3);
    });

    it('a digest is due at its window end, and an expired lease is taken again by another runner', async () => {
      const now = await backend.now();
      const { digestId } = await book.add(ev(now, { category: 'tiny' }));
      expect((await claimAll()).filter((d) => d.userId === user)).toEqual([]);
      await backend.pass(1500);
      const first = (await book.claimDue('runner-a', 1, 50)).filter((d) => d.userId === user);
      expect(first.map((d) => d.id)).toEqual([digestId]);
      await backend.pass(20);
      const second = (await claimAll('runner-b')).filter((d) => d.userId === user);
      expect(second.map((d) => d.id)).toEqual([digestId]);
      expect(await book.finish(digestId, 'runner-a', 'x', null)).toBe(false);
      expect(await book.finish(digestId, 'runner-b', null, 'no contact point')).toBe(true);
      expect(await book.get(digestId)).toMatchObject({
        status: 'sent',
        messageId: null,
        error: 'no contact point',
      });
    });

    it('removeNotification takes its events out of digests not yet taken; the last one out cancels it', async () => {
      const now = await backend.now();
      const e1 = ev(now);
      const e2 = ev(plus(now, 1));
      const { digestId } = await book.add(e1);
      await book.add(e2);
      await book.add({ ...e2, channel: 'push' });
      expect(await book.removeNotification(e2.notificationId)).toBe(2);
      expect((await book.get(digestId))?.count).toBe(1);
      expect(await book.removeNotification(e1.notificationId)).toBe(1);
      expect((await book.get(digestId))?.status).toBe('cancelled');
      expect(await book.removeNotification(e1.notificationId)).toBe(0);
      expect((await claimAll()).filter((d) => d.userId === user)).toEqual([]);
      // A taken digest keeps its events.
      const taken = [ev(now, { key: 'k2' }), ev(now, { key: 'k2' }), ev(now, { key: 'k2' })];
      for (const e of taken) await book.add(e);
      await claimAll();
      expect(await book.removeNotification(taken[0]!.notificationId)).toBe(0);
    });

    it('eraseUser forgets every digest of the user and no other', async () => {
      const now = await backend.now();
      const mine = await book.add(ev(now));
      const other = await book.add(ev(now, { userId: `${user}-other` }));
      await book.eraseUser(user);
      expect(await book.get(mine.digestId)).toBeNull();
      expect(await book.get(other.digestId)).not.toBeNull();
    });

    it('purgeFinished deletes sent and cancelled digests finished before a time, oldest first, never open ones', async () => {
      const now = await backend.now();
      const sent = [ev(now, { key: 'p' }), ev(now, { key: 'p' }), ev(now, { key: 'p' })];
      for (const e of sent) await book.add(e);
      const [taken] = (await claimAll()).filter((d) => d.userId === user);
      await book.finish(taken!.id, 'runner-a', 'm', null);
      const cancelledEvent = ev(now, { key: 'c' });
      const cancelled = await book.add(cancelledEvent);
      await book.removeNotification(cancelledEvent.notificationId);
      const open = await book.add(ev(now, { key: 'o' }));
      await backend.pass(20);
      const cutoff = await backend.now();
      expect(await book.purgeFinished(new Date(now.getTime() - HOUR), 100)).toBe(0);
      let purged = 0;
      for (let n; (n = await book.purgeFinished(cutoff, 1)) > 0;) purged += n;
      expect(purged).toBeGreaterThanOrEqual(2);
      expect(await book.get(taken!.id)).toBeNull();
      expect(await book.get(cancelled.digestId)).toBeNull();
      expect((await book.get(open.digestId))?.status).toBe('open');
      // The events went with their digest: the notification may be digested again.
      expect((await book.add(sent[0]!)).digestId).not.toBe(taken!.id);
    });

    it('get of an unknown digest is null', async () => {
      expect(await book.get(randomUUID())).toBeNull();
    });

    it('a daily_at digest is due at the next 09:00 of the user zone', async () => {
      const now = await backend.now();
      const { flushAt } = await book.add(ev(now, { category: 'daily', timeZone: 'Asia/Tokyo' }));
      const tokyo = new Intl.DateTimeFormat('en-GB', {
        timeZone: 'Asia/Tokyo',
        hour: '2-digit',
        minute: '2-digit',
        hourCycle: 'h23',
      });
      expect(tokyo.format(flushAt)).toBe('09:00');
      expect(flushAt.getTime()).toBeGreaterThan(now.getTime());
      expect(flushAt.getTime() - now.getTime()).toBeLessThanOrEqual(24 * HOUR);
    });

    it('keys longer than 256 characters stay apart (stored hashed, never cut)', async () => {
      const now = await backend.now();
      const long = '😀'.repeat(300);
      const a = await book.add(ev(now, { key: `${long}a` }));
      const b = await book.add(ev(now, { key: `${long}b` }));
      const a2 = await book.add(ev(now, { key: `${long}a` }));
      expect(b.digestId).not.toBe(a.digestId);
      expect(a2.digestId).toBe(a.digestId);
    });

    it('takes event data of exactly 64 KiB as JSON and refuses one byte more', async () => {
      const now = await backend.now();
      const exact = { t: '😀'.repeat((64 * 1024 - 8) / 4) }; // {"t":""} is 8 bytes, an emoji 4
      expect(Buffer.byteLength(JSON.stringify(exact))).toBe(64 * 1024);
      const { digestId } = await book.add(ev(now, { category: 'tiny', data: exact }));
      expect((await book.get(digestId))?.count).toBe(1);
      await expect(book.add(ev(now, { category: 'tiny', data: { t: `${exact.t}x` } }))).rejects.toMatchObject(
        { code: 'INVALID_ARGUMENT', field: 'data' },
      );
    });

    it('a lone surrogate in data is stored as U+FFFD, and keys with lone surrogates stay apart', async () => {
      const now = await backend.now();
      const a = await book.add(ev(now, { key: 'k\ud83d', data: { text: 'cut \ud83d' } }));
      const b = await book.add(ev(now, { key: 'k\ud83e' }));
      expect(b.digestId).not.toBe(a.digestId);
      await backend.pass(10);
      for (let i = 0; i < 2; i++) await book.add(ev(now, { key: 'k\ud83d' }));
      const [taken] = (await claimAll()).filter((d) => d.id === a.digestId);
      expect(taken!.events[0]!.data).toEqual({ text: 'cut \ufffd' });
    });

    it('refuses event data over 64 KiB and a category without a digest with INVALID_ARGUMENT', async () => {
      const now = await backend.now();
      await expect(book.add(ev(now, { data: { text: 'x'.repeat(64 * 1024) } }))).rejects.toMatchObject({
        code: 'INVALID_ARGUMENT',
      });
      await expect(book.add(ev(now, { category: 'unknown' }))).rejects.toMatchObject({
        code: 'INVALID_ARGUMENT',
      });
      await expect(book.add(ev(now, { channel: 'sms' }))).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    });

    it('at 1 MiB of data a digest is full like at max_count', async () => {
      const now = await backend.now();
      const big = { text: 'é'.repeat(30_000) }; // about 60 KB as JSON
      const ids = new Set<string>();
      let first: string | undefined;
      for (let i = 0; i < 20; i++) {
        const r = await book.add(ev(plus(now, i), { category: 'tiny', data: big }));
        first ??= r.digestId;
        ids.add(r.digestId);
      }
      expect(ids.size).toBe(2);
      const state = await book.get(first!);
      expect(state!.count).toBeLessThan(20);
      expect(state!.flushAt.getTime()).toBeLessThanOrEqual((await backend.now()).getTime());
    });
  });
}
