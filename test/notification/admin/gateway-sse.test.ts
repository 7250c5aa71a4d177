import { DEFAULT_HEARTBEAT_MS } from '../../../services/notification/admin/gateway';
import type { RunningNotificationApp } from '../../support/notification-app';
import { hsToken, sendOverGrpc, startAdminService, until } from './harness';
import { openSse, type SseConnection, type SseFrame } from '../../support/sse-client';

const STREAM = '/admin/notifications/stream';

const eventCount = (n: number) => (frames: SseFrame[]) => frames.filter((f) => f.data).length >= n;
const connected = (frames: SseFrame[]): boolean => frames.some((f) => f.comments.includes('connected'));
const titleOf = (event: { data: Record<string, unknown> }): string =>
  (event.data.message as { title: string }).title;

describe('GET /admin/notifications/stream', () => {
  let svc: RunningNotificationApp;
  const open: SseConnection[] = [];

  beforeAll(async () => {
    svc = await startAdminService();
  });
  afterEach(async () => {
    for (const conn of open.splice(0)) conn.close();
    await until(() => svc.app.inboxHub.watcherCount === 0);
  });
  afterAll(() => svc.close());

  /** Opens a stream for `user`; resolves once the response headers arrived. */
  async function openFor(
    user: string,
    headers: Record<string, string> = {},
    query = '',
  ): Promise<SseConnection> {
    const conn = await openSse(`${svc.baseUrl}${STREAM}${query}`, {
      Authorization: `Bearer ${await hsToken(user)}`,
      ...headers,
    });
    open.push(conn);
    return conn;
  }

  /** Opens a stream for `user`; resolves once its inbox watch is registered with the hub. */
  async function connect(
    user: string,
    headers: Record<string, string> = {},
    query = '',
  ): Promise<SseConnection> {
    const watchesBefore = svc.app.inboxHub.watcherCount;
    const conn = await openFor(user, headers, query);
    await conn.waitFor(connected);
    await until(() => svc.app.inboxHub.watcherCount > watchesBefore);
    return conn;
  }

  it('without a token answers 401 before any stream starts', async () => {
    const conn = await openSse(`${svc.baseUrl}${STREAM}`, {});
    open.push(conn);
    expect(conn.status).toBe(401);
    expect(conn.headers['www-authenticate']).toBe('Bearer realm="admin"');
    expect(svc.app.inboxHub.watcherCount).toBe(0);
  });

  it("streams the user's inbox events with the cursor as id, the type as event name and the JSON payload", async () => {
    const conn = await connect('sse-basic');
    expect(conn.status).toBe(200);
    expect(conn.headers['content-type']).toBe('text/event-stream; charset=utf-8');
    const sent = await svc.app.inbox.send({
      userId: 'sse-basic',
      title: 'Hello',
      body: 'World',
      metadata: { k: 1 },
    });
    await svc.app.inbox.send({ userId: 'not-me', title: 'x', body: 'y' });
    await svc.app.inbox.markRead('sse-basic', sent.id);
    await conn.waitFor(eventCount(2));

    const [first, second] = conn.events();
    expect(first.id).toMatch(/^\d+$/);
    expect(first.event).toBe('sent');
    expect(first.data).toEqual({
      type: 'sent',
      message: {
        id: sent.id,
        title: 'Hello',
        body: 'World',
        read: false,
        created_at: sent.createdAt.toISOString(),
        metadata: { k: 1 },
      },
      message_id: sent.id,
      unread_count: 1,
      occurred_at: expect.any(String),
    });
    expect(second.event).toBe('read');
    expect(Number(second.id)).toBeGreaterThan(Number(first.id));
    expect(second.data).toMatchObject({ type: 'read', message: null, message_id: sent.id, unread_count: 0 });
  });

  it('a message sent over gRPC arrives on the stream as a sent event', async () => {
    const conn = await connect('sse-grpc');
    const sent = await sendOverGrpc(svc, 'sse-grpc', 'Build green', 'main #812 passed', { run: 812 });
    await conn.waitFor(eventCount(1));
    const [event] = conn.events();
    expect(event.event).toBe('sent');
    expect(event.data).toMatchObject({
      type: 'sent',
      message_id: sent.id,
      message: {
        id: sent.id,
        title: 'Build green',
        body: 'main #812 passed',
        read: false,
        metadata: { run: 812 },
      },
      unread_count: 1,
    });
  });

  it("a user's stream never carries another user's events", async () => {
    const alice = await connect('sse-alice');
    const bob = await connect('sse-bob');
    const bobs = await sendOverGrpc(svc, 'sse-bob', 'for bob', 'private');
    await svc.app.inbox.markRead('sse-bob', bobs.id);
    await sendOverGrpc(svc, 'sse-bob', 'for bob too', 'private');
    await svc.app.inbox.markAllRead('sse-bob');
    await bob.waitFor(eventCount(4));
    // Sent last: once it arrived, anything of Bob's that leaked would have arrived before it.
    const marker = await sendOverGrpc(svc, 'sse-alice', 'for alice', 'hers');
    await alice.waitFor(eventCount(1));

    expect(alice.events().map((e) => e.data.message_id)).toEqual([marker.id]);
    expect(bob.events().map((e) => e.event)).toEqual(['sent', 'read', 'sent', 'all_read']);
  });

  it('resuming with Last-Event-ID replays only the events after it', async () => {
    const first = await connect('sse-resume');
    await svc.app.inbox.send({ userId: 'sse-resume', title: 'one', body: '1' });
    await svc.app.inbox.send({ userId: 'sse-resume', title: 'two', body: '2' });
    await first.waitFor(eventCount(2));
    const [one] = first.events();
    first.close();
    await until(() => svc.app.inboxHub.watcherCount === 0);
    await svc.app.inbox.send({ userId: 'sse-resume', title: 'three', body: '3' });

    const resumed = await connect('sse-resume', { 'Last-Event-ID': one.id! });
    await resumed.waitFor(eventCount(2));
    expect(resumed.events().map(titleOf)).toEqual(['two', 'three']);
  });

  it('accepts the resume point as ?last_event_id too', async () => {
    const first = await connect('sse-query');
    await svc.app.inbox.send({ userId: 'sse-query', title: 'one', body: '1' });
    await svc.app.inbox.send({ userId: 'sse-query', title: 'two', body: '2' });
    await first.waitFor(eventCount(2));
    const resumed = await connect('sse-query', {}, `?last_event_id=${first.events()[0].id}`);
    await resumed.waitFor(eventCount(1));
    expect(resumed.events().map(titleOf)).toEqual(['two']);
  });

  it('sends heartbeat comments while nothing happens', async () => {
    // Only the interval timers are faked: sockets, the inbox and the polling in `until` stay real.
    jest.useFakeTimers({
      doNotFake: [
        'Date',
        'hrtime',
        'nextTick',
        'performance',
        'queueMicrotask',
        'setImmediate',
        'clearImmediate',
        'setTimeout',
        'clearTimeout',
      ],
    });
    try {
      const conn = await connect('sse-quiet');
      jest.advanceTimersByTime(DEFAULT_HEARTBEAT_MS * 2);
      await conn.waitFor((frames) => frames.filter((f) => f.comments.includes('heartbeat')).length >= 2);
      expect(conn.events()).toEqual([]);
      // Closed while the fake clock is installed, so the gateway clears its interval on that clock.
      conn.close();
      await until(() => svc.app.inboxHub.watcherCount === 0);
      await conn.ended;
    } finally {
      jest.useRealTimers();
    }
  });

  it('when the client disconnects, its inbox watch ends', async () => {
    const conn = await connect('sse-leaver');
    expect(svc.app.inboxHub.watcherCount).toBe(1);
    conn.close();
    await until(() => svc.app.inboxHub.watcherCount === 0);
    // The user's inbox keeps working without a watcher.
    await svc.app.inbox.send({ userId: 'sse-leaver', title: 'after', body: 'gone' });
    expect(await svc.app.inbox.countUnread('sse-leaver')).toBe(1);
  });

  it('when Last-Event-ID is not a cursor of ours, answers 400 INVALID_ARGUMENT before streaming', async () => {
    const conn = await openFor('sse-bad-cursor', { 'Last-Event-ID': 'garbage' });
    await conn.ended;
    expect(conn.status).toBe(400);
    expect(conn.headers['content-type']).toMatch(/^application\/json/);
    expect(svc.app.inboxHub.watcherCount).toBe(0);
  });

  it("the stream's first id: is the current cursor, so a reconnect before any event loses nothing", async () => {
    await svc.app.inbox.send({ userId: 'sse-first-id', title: 'old', body: '.' });
    const first = await connect('sse-first-id');
    await first.waitFor((frames) => frames.some((f) => f.id !== undefined));
    const cursorFrame = first.frames.find((f) => f.id !== undefined)!;
    // An id without data: it moves the browser's Last-Event-ID and dispatches no event.
    expect(cursorFrame.data).toBeUndefined();
    expect(cursorFrame.id).toMatch(/^\d+$/);
    expect(first.events()).toEqual([]);
    first.close();
    await until(() => svc.app.inboxHub.watcherCount === 0);
    const missed = await svc.app.inbox.send({ userId: 'sse-first-id', title: 'missed', body: '.' });
    const resumed = await connect('sse-first-id', { 'Last-Event-ID': cursorFrame.id! });
    await resumed.waitFor(eventCount(1));
    expect(resumed.events().map((e) => e.data.message_id)).toEqual([missed.id]);
  });

  it('when Last-Event-ID is absurdly long, answers 400 before streaming', async () => {
    const conn = await openFor('sse-long', { 'Last-Event-ID': '1'.repeat(600) });
    expect(conn.status).toBe(400);
    expect(svc.app.inboxHub.watcherCount).toBe(0);
  });
});

describe('GET /admin/notifications/stream with a burst larger than its buffer', () => {
  let svc: RunningNotificationApp;

  beforeAll(async () => {
    svc = await startAdminService({ inbox: { watch_buffer_size: 2 } });
  });
  afterAll(() => svc.close());

  it('a reader that keeps up gets every event once, in order, and the stream stays open', async () => {
    const token = await hsToken('bursty');
    const conn = await openSse(`${svc.baseUrl}${STREAM}`, { Authorization: `Bearer ${token}` });
    try {
      await conn.waitFor(connected);
      const first = await svc.app.inbox.send({ userId: 'bursty', title: 'first', body: '.' });
      await conn.waitFor(eventCount(1));
      // Sent in one turn of the event loop: more than the buffer holds arrives at once.
      const titles = Array.from({ length: 20 }, (_, i) => `b${i}`);
      await Promise.all(titles.map((title) => svc.app.inbox.send({ userId: 'bursty', title, body: '.' })));
      await conn.waitFor(eventCount(21));
      expect(conn.events()[0]!.data.message_id).toBe(first.id);
      expect(conn.events().slice(1).map(titleOf)).toEqual(titles);
      const ids = conn.events().map((e) => Number(e.id));
      expect(ids).toEqual([...ids].sort((a, b) => a - b));
      expect(conn.frames.some((f) => f.event === 'error')).toBe(false);
      expect(svc.app.inboxHub.watcherCount).toBe(1);
    } finally {
      conn.close();
    }
  });
});
