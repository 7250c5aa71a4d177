/**
 * The one behaviour suite every InboxStoreProtocol implementation passes, exercised through
 * InboxService and InboxHub the way the RPC layer uses them.
 */
import { InvalidArgumentError, NotFoundError, ResourceExhaustedError } from '../../../shared/errors';
import type { InboxConfig } from '../../../services/notification/inbox/config';
import type { InboxHub, InboxHubOptions } from '../../../services/notification/inbox/inbox-hub';
import type { InboxService } from '../../../services/notification/inbox/inbox-service';
import { InboxRetention } from '../../../services/notification/inbox/retention';
import type { InboxStoreProtocol } from '../../../services/notification/inbox/store';
import type { InboxEvent, InboxSentPayload } from '../../../services/notification/inbox/types';
import { ManualClock, buildService, newUser, take, waitFor } from './support';
import type { Clock } from '../../../shared/runtime/clock';

/** What a backend's test file provides to the contract. */
export interface ContractBackend {
  store: InboxStoreProtocol;
  close(): Promise<void>;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** Registers the contract suite for one backend. */
export function describeInboxContract(name: string, open: () => Promise<ContractBackend>): void {
  describe(`${name} store: inbox contract`, () => {
    let backend: ContractBackend;
    const hubs: InboxHub[] = [];

    beforeAll(async () => {
      backend = await open();
    });

    afterAll(async () => {
      for (const hub of hubs) await hub.stop();
      await backend?.close();
    });

    async function make(
      overrides: Partial<InboxConfig> = {},
      clock?: Clock,
      hubOptions: Partial<InboxHubOptions> = {},
    ): Promise<{ service: InboxService; hub: InboxHub }> {
      const built = buildService(backend.store, overrides, clock, hubOptions);
      hubs.push(built.hub);
      await built.hub.start();
      return built;
    }

    async function sendMany(service: InboxService, userId: string, n: number): Promise<string[]> {
      const ids: string[] = [];
      for (let i = 0; i < n; i++)
        ids.push((await service.send({ userId, title: `t${i}`, body: `b${i}` })).id);
      return ids;
    }

    describe('send and getInbox', () => {
      it('when a message is sent, getInbox returns it unread with its metadata', async () => {
        const { service } = await make();
        const user = newUser();
        const sent = await service.send({
          userId: user,
          title: 'Hello',
          body: 'World',
          metadata: { a: { b: [1, 2] } },
        });
        expect(sent.id).toMatch(UUID);
        const page = await service.getInbox(user);
        expect(page.unreadCount).toBe(1);
        expect(page.nextPageToken).toBe('');
        expect(page.messages).toHaveLength(1);
        expect(page.messages[0]).toMatchObject({
          id: sent.id,
          userId: user,
          title: 'Hello',
          body: 'World',
          metadata: { a: { b: [1, 2] } },
          readAt: null,
        });
        expect(page.messages[0]!.createdAt.getTime()).toBe(sent.createdAt.getTime());
      });

      it('when messages share a creation time, pages still return every message exactly once, newest first', async () => {
        const clock = new ManualClock();
        const { service } = await make({ max_page_size: 50 }, clock);
        const user = newUser();
        const sameTime = await sendMany(service, user, 5);
        clock.advance(1000);
        const newer = await sendMany(service, user, 2);
        const seen: string[] = [];
        let token = '';
        let pages = 0;
        do {
          const page = await service.getInbox(user, { pageSize: 2, pageToken: token || undefined });
          seen.push(...page.messages.map((m) => m.id));
          token = page.nextPageToken;
          pages++;
        } while (token);
        expect(pages).toBe(4);
        expect(seen).toHaveLength(7);
        expect(new Set(seen).size).toBe(7);
        expect(seen.slice(0, 2).sort()).toEqual([...newer].sort());
        // Ties on creation time are ordered by id, descending.
        expect(seen.slice(2)).toEqual([...sameTime].sort().reverse());
      });

      it('when a page larger than max_page_size is asked for, the page is capped rather than refused', async () => {
        const { service } = await make({ max_page_size: 3 });
        const user = newUser();
        await sendMany(service, user, 5);
        const page = await service.getInbox(user, { pageSize: 100 });
        expect(page.messages).toHaveLength(3);
        expect(page.nextPageToken).not.toBe('');
      });

      it('when no page size is given, the page holds max_page_size messages', async () => {
        const { service } = await make({ max_page_size: 2 });
        const user = newUser();
        await sendMany(service, user, 3);
        expect((await service.getInbox(user, { pageSize: 0 })).messages).toHaveLength(2);
        expect((await service.getInbox(user)).messages).toHaveLength(2);
      });

      it('when the unread count exceeds the page size, it is still exact', async () => {
        const { service } = await make({ max_page_size: 2 });
        const user = newUser();
        await sendMany(service, user, 7);
        expect((await service.getInbox(user)).unreadCount).toBe(7);
        expect(await service.countUnread(user)).toBe(7);
      });

      it('when unreadOnly is set, read messages are left out', async () => {
        const { service } = await make();
        const user = newUser();
        const [a, b, c] = await sendMany(service, user, 3);
        await service.markRead(user, b!);
        const page = await service.getInbox(user, { unreadOnly: true });
        expect(page.messages.map((m) => m.id).sort()).toEqual([a!, c!].sort());
        expect(page.unreadCount).toBe(2);
      });

      it('when a page token is malformed, getInbox throws InvalidArgumentError', async () => {
        const { service } = await make();
        await expect(service.getInbox(newUser(), { pageToken: 'not-a-token' })).rejects.toBeInstanceOf(
          InvalidArgumentError,
        );
        const forged = Buffer.from(JSON.stringify({ v: 1, u: 'x', t: 'yesterday', i: 'nope' })).toString(
          'base64url',
        );
        await expect(service.getInbox(newUser(), { pageToken: forged })).rejects.toBeInstanceOf(
          InvalidArgumentError,
        );
      });

      it("when a page token of another user's inbox is used, getInbox throws InvalidArgumentError", async () => {
        const { service } = await make({ max_page_size: 1 });
        const alice = newUser('alice');
        const bob = newUser('bob');
        await sendMany(service, alice, 2);
        await sendMany(service, bob, 2);
        const token = (await service.getInbox(alice)).nextPageToken;
        expect(token).not.toBe('');
        await expect(service.getInbox(bob, { pageToken: token })).rejects.toBeInstanceOf(
          InvalidArgumentError,
        );
      });

      it('when a page size is negative or fractional, getInbox throws InvalidArgumentError', async () => {
        const { service } = await make();
        await expect(service.getInbox(newUser(), { pageSize: -1 })).rejects.toBeInstanceOf(
          InvalidArgumentError,
        );
        await expect(service.getInbox(newUser(), { pageSize: 1.5 })).rejects.toBeInstanceOf(
          InvalidArgumentError,
        );
      });
    });

    describe('validation', () => {
      it('when the user id is empty, send throws InvalidArgumentError', async () => {
        const { service } = await make();
        await expect(service.send({ userId: '', title: 't', body: 'b' })).rejects.toBeInstanceOf(
          InvalidArgumentError,
        );
        await expect(service.countUnread(' ')).rejects.toBeInstanceOf(InvalidArgumentError);
      });

      it('when the title or body is over its limit, send throws InvalidArgumentError naming the field', async () => {
        const { service } = await make({ max_title_length: 5, max_body_length: 10 });
        const user = newUser();
        await expect(service.send({ userId: user, title: 'x'.repeat(6), body: '' })).rejects.toMatchObject({
          code: 'INVALID_ARGUMENT',
          field: 'title',
        });
        await expect(service.send({ userId: user, title: 'ok', body: 'y'.repeat(11) })).rejects.toMatchObject(
          {
            code: 'INVALID_ARGUMENT',
            field: 'body',
          },
        );
        // Limits count characters, not UTF-16 units: five emoji fit a five-character title.
        await expect(service.send({ userId: user, title: '😀😀😀😀😀', body: '' })).resolves.toMatchObject({
          title: '😀😀😀😀😀',
        });
      });

      it('when metadata is not a JSON object or is too large, send throws InvalidArgumentError', async () => {
        const { service } = await make({ max_metadata_bytes: 64 });
        const user = newUser();
        for (const metadata of [[1, 2], 'text', 5, { big: 'z'.repeat(100) }, { nul: 'a\u0000b' }]) {
          await expect(
            service.send({
              userId: user,
              title: 't',
              body: 'b',
              metadata: metadata as Record<string, unknown>,
            }),
          ).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', field: 'metadata' });
        }
        expect(await service.countUnread(user)).toBe(0);
      });

      it('when metadata holds a NUL or a lone surrogate (jsonb refuses both), send throws InvalidArgumentError', async () => {
        const { service } = await make();
        const user = newUser();
        // Connect JSON carries `"\ud800"` in a Struct as it is; a key is checked as much as a value.
        for (const metadata of [{ k: 'a\ud800b' }, { k: '\udc00' }, { 'a\ud83d': 1 }, { 'k\u0000': 1 }]) {
          await expect(service.send({ userId: user, title: 't', body: 'b', metadata })).rejects.toMatchObject(
            {
              code: 'INVALID_ARGUMENT',
              field: 'metadata',
            },
          );
        }
        // A whole pair is text, and an escaped backslash before `u0000` is not a NUL.
        const kept = { emoji: '😀', literal: '\\u0000 and \\ud800' };
        await expect(
          service.send({ userId: user, title: 't', body: 'b', metadata: kept }),
        ).resolves.toMatchObject({
          metadata: kept,
        });
        expect(await service.countUnread(user)).toBe(1);
      });

      it('when a text field holds a NUL character, send throws InvalidArgumentError', async () => {
        const { service } = await make();
        await expect(service.send({ userId: newUser(), title: 'a\u0000', body: '' })).rejects.toBeInstanceOf(
          InvalidArgumentError,
        );
      });

      it('when a message id is not a UUID, markRead and delete throw InvalidArgumentError', async () => {
        const { service } = await make();
        await expect(service.markRead(newUser(), 'abc')).rejects.toBeInstanceOf(InvalidArgumentError);
        await expect(service.delete(newUser(), "1' OR '1'='1")).rejects.toBeInstanceOf(InvalidArgumentError);
      });
    });

    describe('read, delete and clear', () => {
      it('when a message is marked read, the unread count drops and marking it again changes nothing', async () => {
        const { service } = await make();
        const user = newUser();
        const [a] = await sendMany(service, user, 2);
        expect(await service.markRead(user, a!)).toEqual({ unreadCount: 1 });
        expect(await service.markRead(user, a!.toUpperCase())).toEqual({ unreadCount: 1 });
        const page = await service.getInbox(user);
        expect(page.messages.find((m) => m.id === a)!.readAt).toBeInstanceOf(Date);
      });

      it('when a message belongs to another user, markRead throws NotFoundError exactly like an unknown id', async () => {
        const { service } = await make();
        const alice = newUser('alice');
        const [message] = await sendMany(service, alice, 1);
        const foreign = await service.markRead(newUser('mallory'), message!).catch((e: unknown) => e);
        const unknown = await service
          .markRead(newUser('mallory'), '00000000-0000-4000-8000-000000000000')
          .catch((e: unknown) => e);
        expect(foreign).toBeInstanceOf(NotFoundError);
        expect(unknown).toBeInstanceOf(NotFoundError);
        expect((foreign as Error).message).toBe((unknown as Error).message);
        expect(await service.countUnread(alice)).toBe(1);
      });

      it('when a message belongs to another user, delete throws NotFoundError and the message stays', async () => {
        const { service } = await make();
        const alice = newUser('alice');
        const [message] = await sendMany(service, alice, 1);
        await expect(service.delete(newUser('mallory'), message!)).rejects.toBeInstanceOf(NotFoundError);
        expect((await service.getInbox(alice)).messages.map((m) => m.id)).toEqual([message]);
      });

      it('when a message is deleted, it is gone and deleting it again is NotFoundError', async () => {
        const { service } = await make();
        const user = newUser();
        const [a, b] = await sendMany(service, user, 2);
        expect(await service.delete(user, a!)).toEqual({ unreadCount: 1 });
        expect((await service.getInbox(user)).messages.map((m) => m.id)).toEqual([b]);
        await expect(service.delete(user, a!)).rejects.toBeInstanceOf(NotFoundError);
      });

      it('when all are marked read, only that user is affected', async () => {
        const { service } = await make();
        const alice = newUser('alice');
        const bob = newUser('bob');
        await sendMany(service, alice, 3);
        await sendMany(service, bob, 2);
        expect(await service.markAllRead(alice)).toEqual({ updated: 3, unreadCount: 0 });
        expect(await service.markAllRead(alice)).toEqual({ updated: 0, unreadCount: 0 });
        expect(await service.countUnread(bob)).toBe(2);
      });

      it('when an inbox is cleared, only that user loses messages', async () => {
        const { service } = await make();
        const alice = newUser('alice');
        const bob = newUser('bob');
        await sendMany(service, alice, 3);
        await sendMany(service, bob, 1);
        expect(await service.clearAll(alice)).toEqual({ deleted: 3 });
        expect((await service.getInbox(alice)).messages).toHaveLength(0);
        expect((await service.getInbox(bob)).messages).toHaveLength(1);
      });
    });

    describe('INBOX_SENT_HOOK', () => {
      it('when a message is sent, listeners receive the message, user id, title and body', async () => {
        const { service } = await make();
        const seen: InboxSentPayload[] = [];
        service.onInboxSent((p) => void seen.push(p));
        const user = newUser();
        const message = await service.send({ userId: user, title: 'T', body: 'B' });
        expect(seen).toEqual([{ message, userId: user, title: 'T', body: 'B' }]);
      });

      it('when a listener throws or rejects, send still succeeds and later listeners still run', async () => {
        const { service } = await make();
        let reached = 0;
        service.onInboxSent(() => {
          throw new Error('listener bug');
        });
        service.onInboxSent(async () => {
          throw new Error('async listener bug');
        });
        service.onInboxSent(() => void reached++);
        const user = newUser();
        await expect(service.send({ userId: user, title: 'T', body: 'B' })).resolves.toMatchObject({
          userId: user,
        });
        expect(reached).toBe(1);
        expect(await service.countUnread(user)).toBe(1);
      });
    });

    describe('watch', () => {
      it('when watching from the start, every event is replayed in order with the unread count after it', async () => {
        const { service } = await make();
        const user = newUser();
        const [a, b] = await sendMany(service, user, 2);
        await service.markRead(user, a!);
        await service.delete(user, b!);
        await sendMany(service, user, 1);
        await service.markAllRead(user);
        await service.clearAll(user);
        const events = await take(service.watch(user, { after: '0' })[Symbol.asyncIterator](), 7);
        expect(events.map((e) => [e.type, e.unreadCount])).toEqual([
          ['sent', 1],
          ['sent', 2],
          ['read', 1],
          ['deleted', 0],
          ['sent', 1],
          ['all_read', 0],
          ['cleared', 0],
        ]);
        // Cleared at the end: every `sent` event keeps its ids and type, not the content.
        expect(events[0]!.message).toBeUndefined();
        expect(events[0]!.messageId).toBe(a);
        expect(events[2]!.messageId).toBe(a);
        const cursors = events.map((e) => Number(e.cursor));
        expect([...cursors].sort((x, y) => x - y)).toEqual(cursors);
      });

      it('onLive fires once the watch is live (after the replay), and a message sent right then is delivered', async () => {
        const { service } = await make();
        const user = newUser();
        const [old] = await sendMany(service, user, 1);
        let liveCalls = 0;
        let replayedBeforeLive = 0;
        const received: string[] = [];
        let markLive!: () => void;
        const live = new Promise<void>((resolve) => (markLive = resolve));
        const watch = service.watch(user, {
          after: '0',
          onLive: () => {
            liveCalls++;
            replayedBeforeLive = received.length;
            markLive();
          },
        });
        const iterator = watch[Symbol.asyncIterator]();
        const reading = (async () => {
          for (let r = await iterator.next(); !r.done; r = await iterator.next()) {
            received.push(r.value.message!.id);
            if (received.length === 2) return;
          }
        })();
        await live;
        const [fresh] = await sendMany(service, user, 1);
        await reading;
        await iterator.return?.();
        expect(liveCalls).toBe(1);
        expect(replayedBeforeLive).toBe(1);
        expect(received).toEqual([old, fresh]);
      });

      it('when a watcher resumes after its last cursor, it gets exactly the events it missed', async () => {
        const { service } = await make();
        const user = newUser();
        await sendMany(service, user, 2);
        const abort = new AbortController();
        const first = service.watch(user, { after: '0', signal: abort.signal })[Symbol.asyncIterator]();
        const seen = await take(first, 2);
        abort.abort();
        expect((await first.next()).done).toBe(true);
        const missed = await sendMany(service, user, 3);
        const resumed = service.watch(user, { after: seen[1]!.cursor })[Symbol.asyncIterator]();
        const replayed = await take(resumed, 3);
        expect(replayed.map((e) => e.message!.id)).toEqual(missed);
        // And then live, with nothing repeated.
        const pending = resumed.next();
        const [live] = await sendMany(service, user, 1);
        expect((await pending).value.message.id).toBe(live);
        await resumed.return?.();
      });

      it("when another user's inbox changes, a watcher sees none of it", async () => {
        const { service } = await make();
        const alice = newUser('alice');
        const bob = newUser('bob');
        await sendMany(service, bob, 2);
        const [mine] = await sendMany(service, alice, 1);
        const iterator = service.watch(alice, { after: '0' })[Symbol.asyncIterator]();
        const [event] = await take(iterator, 1);
        expect(event!.message!.id).toBe(mine);
        const pending = iterator.next();
        await sendMany(service, bob, 1);
        const [next] = await sendMany(service, alice, 1);
        expect((await pending).value.message.id).toBe(next);
        await iterator.return?.();
      });

      it('when a live watcher stops reading, it gets ResourceExhaustedError and can resume without loss', async () => {
        let now = 1_000_000;
        const { service, hub } = await make({ watch_buffer_size: 3 }, undefined, {
          stallMs: 5_000,
          clock: { now: () => now, monotonic: () => now },
        });
        const user = newUser();
        await sendMany(service, user, 1);
        const iterator = service.watch(user, { after: '0' })[Symbol.asyncIterator]();
        await take(iterator, 1);
        const pending = iterator.next();
        await sendMany(service, user, 1);
        const live = (await pending).value;
        // The watcher is live and stalled: it asks for nothing while more than its buffer arrives.
        const missed = await sendMany(service, user, 6);
        // Within the stall time it is only behind, not closed.
        expect(hub.watcherCount).toBe(1);
        now += 5_000;
        missed.push(...(await sendMany(service, user, 1)));
        await waitFor(() => hub.watcherCount === 0, 'the stalled watcher to be dropped');
        await expect(iterator.next()).rejects.toBeInstanceOf(ResourceExhaustedError);
        const resumed = service.watch(user, { after: live.cursor })[Symbol.asyncIterator]();
        expect((await take(resumed, 7)).map((e) => e.message!.id)).toEqual(missed);
        await resumed.return?.();
      });

      it('when a burst of 2,000 sends reaches a reader that keeps up, it receives every event once, in order', async () => {
        const { service, hub } = await make({ watch_buffer_size: 256 });
        const user = newUser('burst');
        const iterator = service.watch(user)[Symbol.asyncIterator]();
        const [start] = await take(iterator, 1);
        expect(start!.type).toBe('live');
        const received: InboxEvent[] = [];
        const reading = (async () => {
          while (received.length < 2000) {
            const next = await iterator.next();
            if (next.done) throw new Error('the stream ended early');
            received.push(next.value);
          }
        })();
        const sends: Promise<{ id: string }>[] = [];
        for (let i = 0; i < 2000; i++) sends.push(service.send({ userId: user, title: `m${i}`, body: '' }));
        const sent = await Promise.all(sends);
        await reading;
        await iterator.return?.();
        expect(hub.watcherCount).toBe(0);
        const cursors = received.map((e) => Number(e.cursor));
        expect(cursors).toEqual([...cursors].sort((x, y) => x - y));
        expect(new Set(cursors).size).toBe(2000);
        expect(new Set(received.map((e) => e.message!.id))).toEqual(new Set(sent.map((m) => m.id)));
      }, 60_000);

      it('when a watch opens without a cursor, its first event is `live` with the current cursor, and resuming after it loses nothing', async () => {
        const { service } = await make();
        const user = newUser();
        await sendMany(service, user, 2);
        const abort = new AbortController();
        const iterator = service.watch(user, { signal: abort.signal })[Symbol.asyncIterator]();
        const [live] = await take(iterator, 1);
        expect(live).toMatchObject({ type: 'live', userId: user, unreadCount: 2 });
        expect(live!.cursor).toBe(String(await backend.store.latestSeq(user)));
        // The subscriber drops before any event; what is sent meanwhile is replayed on resume.
        abort.abort();
        expect((await iterator.next()).done).toBe(true);
        const [missed] = await sendMany(service, user, 1);
        const resumed = service.watch(user, { after: live!.cursor })[Symbol.asyncIterator]();
        const [event] = await take(resumed, 1);
        expect(event).toMatchObject({ type: 'sent', messageId: missed, unreadCount: 3 });
        await resumed.return?.();
      });

      it('when a user has max_watchers_per_user watches open, one more is ResourceExhaustedError and other users still watch', async () => {
        const { service, hub } = await make({ max_watchers_per_user: 2, max_watchers: 3 });
        const user = newUser();
        const open = [service.watch(user), service.watch(user)].map((w) => w[Symbol.asyncIterator]());
        for (const it of open) await take(it, 1);
        expect(() => service.watch(user)).toThrow(ResourceExhaustedError);
        const other = service.watch(newUser())[Symbol.asyncIterator]();
        await take(other, 1);
        expect(hub.watcherCount).toBe(3);
        // The process-wide cap, whoever asks.
        expect(() => service.watch(newUser())).toThrow(ResourceExhaustedError);
        await open[0]!.return?.();
        const again = service.watch(user)[Symbol.asyncIterator]();
        await take(again, 1);
        for (const it of [open[1]!, other, again]) await it.return?.();
        expect(hub.watcherCount).toBe(0);
      });

      it('when a cursor is malformed, watch throws InvalidArgumentError', async () => {
        const { service } = await make();
        expect(() => service.watch(newUser(), { after: 'abc' })).toThrow(InvalidArgumentError);
      });
    });

    describe('erasure', () => {
      it('when a message is deleted, no replay shows its content; its events keep ids and type', async () => {
        const { service } = await make();
        const user = newUser();
        const secret = await service.send({
          userId: user,
          title: 'secret title',
          body: 'secret body',
          metadata: { secret: 'meta' },
        });
        const kept = await service.send({ userId: user, title: 'kept', body: 'kept body' });
        await service.delete(user, secret.id);
        const events = await take(service.watch(user, { after: '0' })[Symbol.asyncIterator](), 3);
        expect(events.map((e) => [e.type, e.messageId])).toEqual([
          ['sent', secret.id],
          ['sent', kept.id],
          ['deleted', secret.id],
        ]);
        expect(events[0]!.message).toBeUndefined();
        expect(events[1]!.message).toMatchObject({ title: 'kept', body: 'kept body' });
        const stored = await backend.store.eventsAfter(user, 0, 10);
        expect(JSON.stringify(stored)).not.toMatch(/secret/);
      });

      it('when an inbox is cleared, no replay shows any of its content, and other users keep theirs', async () => {
        const { service } = await make();
        const user = newUser();
        const other = newUser();
        await service.send({ userId: user, title: 'private one', body: 'x' });
        await service.send({ userId: user, title: 'private two', body: 'y', metadata: { k: 'private' } });
        await service.send({ userId: other, title: 'theirs', body: 'z' });
        await service.clearAll(user);
        const stored = await backend.store.eventsAfter(user, 0, 10);
        expect(stored.map((e) => e.type)).toEqual(['sent', 'sent', 'cleared']);
        expect(stored.slice(0, 2).every((e) => e.message === null && typeof e.messageId === 'string')).toBe(
          true,
        );
        expect(JSON.stringify(stored)).not.toMatch(/private/);
        const theirs = await backend.store.eventsAfter(other, 0, 10);
        expect(theirs[0]!.message).toMatchObject({ title: 'theirs' });
      });
    });

    // The purge's lease (its last run time) is shared by the whole suite: these tests run in the
    // order of their clocks (2001, 2002, 2003, 2040), or a later test would see a run "in the future".
    describe('retention', () => {
      it('when the purge runs, only rows older than retention_days go, in batches of purge_batch_size', async () => {
        const clock = new ManualClock(new Date('2001-01-01T00:00:00.000Z'));
        const { service } = await make({}, clock);
        const user = newUser();
        await sendMany(service, user, 5);
        clock.advance(20 * 86_400_000);
        const kept = await sendMany(service, user, 2);
        clock.advance(15 * 86_400_000);
        const retention = new InboxRetention({
          store: backend.store,
          config: { retention_days: 30, purge_interval_seconds: 3600, purge_batch_size: 2 },
          clock: clock,
        });
        const result = await retention.purgeOnce();
        expect(result).toEqual({ ran: true, messages: 5, events: 5, batches: 3 });
        expect((await service.getInbox(user)).messages.map((m) => m.id).sort()).toEqual([...kept].sort());
        // Within the interval, a second purge does not run.
        clock.advance(60_000);
        expect((await retention.purgeOnce()).ran).toBe(false);
      });

      it('when a cursor is older than the oldest kept event, the watch starts with `reset` and then carries on live', async () => {
        const clock = new ManualClock(new Date('2002-01-01T00:00:00.000Z'));
        const { service } = await make({}, clock);
        const user = newUser('reset');
        await sendMany(service, user, 3);
        clock.advance(40 * 86_400_000);
        const [recent] = await sendMany(service, user, 1);
        const retention = new InboxRetention({
          store: backend.store,
          config: { retention_days: 30, purge_interval_seconds: 1, purge_batch_size: 1000 },
          clock: clock,
        });
        expect((await retention.purgeOnce()).ran).toBe(true);
        const iterator = service.watch(user, { after: '0' })[Symbol.asyncIterator]();
        const [reset] = await take(iterator, 1);
        expect(reset).toMatchObject({ type: 'reset', userId: user, unreadCount: 1 });
        expect(reset!.cursor).toBe(String(await backend.store.latestSeq(user)));
        // No silent jump: what the reset covers is reloaded by the client; later events arrive.
        const pending = iterator.next();
        const [next] = await sendMany(service, user, 1);
        expect((await pending).value).toMatchObject({ type: 'sent', messageId: next });
        await iterator.return?.();
        // A cursor at or after the horizon replays normally.
        const fromRecent = await backend.store.eventsAfter(user, 0, 10);
        const recentSent = fromRecent.find((e) => e.messageId === recent)!;
        const resumed = service.watch(user, { after: String(recentSent.seq - 1) })[Symbol.asyncIterator]();
        const [first] = await take(resumed, 1);
        expect(first).toMatchObject({ type: 'sent', messageId: recent });
        await resumed.return?.();
      });

      it('when every event of a user was purged, an old cursor gets one `reset` at the horizon, then live events', async () => {
        const clock = new ManualClock(new Date('2003-01-01T00:00:00.000Z'));
        const { service } = await make({}, clock);
        const user = newUser('all-gone');
        await sendMany(service, user, 2);
        clock.advance(40 * 86_400_000);
        const retention = new InboxRetention({
          store: backend.store,
          config: { retention_days: 30, purge_interval_seconds: 1, purge_batch_size: 1000 },
          clock: clock,
        });
        expect((await retention.purgeOnce()).ran).toBe(true);
        const horizon = await backend.store.purgedThrough(user);
        expect(horizon).toBeGreaterThan(0);
        expect(await backend.store.latestSeq(user)).toBe(horizon);
        const iterator = service.watch(user, { after: '0' })[Symbol.asyncIterator]();
        const [reset] = await take(iterator, 1);
        expect(reset).toMatchObject({ type: 'reset', cursor: String(horizon), unreadCount: 0 });
        const pending = iterator.next();
        const [next] = await sendMany(service, user, 1);
        expect((await pending).value).toMatchObject({ type: 'sent', messageId: next });
        await iterator.return?.();
        // A fresh watch starts at the horizon too, so its cursor never asks for a reset.
        const fresh = service.watch(user)[Symbol.asyncIterator]();
        const [live] = await take(fresh, 1);
        expect(Number(live!.cursor)).toBeGreaterThan(horizon);
        await fresh.return?.();
      });

      it('when stop() is called during a large purge, it returns after the current batch and the rest waits', async () => {
        const clock = new ManualClock(new Date('2040-01-01T00:00:00.000Z'));
        const { service } = await make({}, clock);
        const user = newUser('bigpurge');
        await Promise.all(
          Array.from({ length: 60 }, (_, i) => service.send({ userId: user, title: `old${i}`, body: '' })),
        );
        clock.advance(40 * 86_400_000);
        let batches = 0;
        let stopping: Promise<void> | undefined;
        const retention = new InboxRetention({
          store: backend.store,
          config: { retention_days: 30, purge_interval_seconds: 3600, purge_batch_size: 5 },
          clock: clock,
          pause: async () => {
            if (++batches === 2) stopping = retention.stop();
          },
        });
        const result = await retention.purgeOnce();
        await stopping;
        expect(result.ran).toBe(true);
        // Stopped between batches: two batches of five, not the whole purge (older rows of other
        // tests may be among them, so this user keeps at least fifty).
        expect(result.batches).toBe(2);
        expect(result.messages).toBe(10);
        expect((await service.getInbox(user, { pageSize: 100 })).messages.length).toBeGreaterThanOrEqual(50);
        // Once stopped, it no longer runs.
        expect((await retention.purgeOnce()).ran).toBe(false);
      });
    });
  });
}
