import { ResourceExhaustedError } from '../../../shared/errors';
import type { InboxEvent, WatchOptions } from '../../../services/notification/inbox/types';
import { FakeInbox } from './fake-inbox';
import { hsToken, startGateway, type RunningGateway } from './harness';
import { openSse, type SseConnection } from './sse-client';

const STREAM = '/admin/notifications/stream';

/** Resolves once `condition` holds, checking on every turn of the event loop. */
function until(condition: () => boolean): Promise<void> {
  return new Promise((resolve) => {
    const poll = (): void => (condition() ? resolve() : void setImmediate(poll));
    poll();
  });
}

describe('GET /admin/notifications/stream', () => {
  let gw: RunningGateway;
  const open: SseConnection[] = [];

  beforeAll(async () => {
    gw = await startGateway({ heartbeatMs: 25 });
  });
  afterEach(() => {
    for (const conn of open.splice(0)) conn.close();
  });
  afterAll(() => gw.close());

  async function connect(
    user: string,
    headers: Record<string, string> = {},
    query = '',
  ): Promise<SseConnection> {
    const conn = await openSse(`${gw.baseUrl}${STREAM}${query}`, {
      Authorization: `Bearer ${await hsToken(user)}`,
      ...headers,
    });
    open.push(conn);
    return conn;
  }

  const eventCount = (n: number) => (frames: { data?: string }[]) => frames.filter((f) => f.data).length >= n;

  it('without a token answers 401 before any stream starts', async () => {
    const conn = await openSse(`${gw.baseUrl}${STREAM}`, {});
    open.push(conn);
    expect(conn.status).toBe(401);
    expect(conn.headers['www-authenticate']).toBe('Bearer realm="admin"');
  });

  it("streams the user's inbox events with the cursor as id, the type as event name and the JSON payload", async () => {
    const conn = await connect('sse-basic');
    expect(conn.status).toBe(200);
    expect(conn.headers['content-type']).toBe('text/event-stream; charset=utf-8');
    await conn.waitFor((frames) => frames.some((f) => f.comments.includes('connected')));
    const sent = await gw.inbox.send({
      userId: 'sse-basic',
      title: 'Hello',
      body: 'World',
      metadata: { k: 1 },
    });
    await gw.inbox.send({ userId: 'not-me', title: 'x', body: 'y' });
    await gw.inbox.markRead('sse-basic', sent.id);
    await conn.waitFor(eventCount(2));

    const [first, second] = conn.events();
    expect(first.id).toMatch(/^c\d+$/);
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
    expect(second.data).toMatchObject({ type: 'read', message: null, message_id: sent.id, unread_count: 0 });
  });

  it('resuming with Last-Event-ID replays only the events after it', async () => {
    const first = await connect('sse-resume');
    await first.waitFor((frames) => frames.length > 0);
    await gw.inbox.send({ userId: 'sse-resume', title: 'one', body: '1' });
    await gw.inbox.send({ userId: 'sse-resume', title: 'two', body: '2' });
    await first.waitFor(eventCount(2));
    const [one] = first.events();
    first.close();
    await gw.inbox.send({ userId: 'sse-resume', title: 'three', body: '3' });

    const resumed = await connect('sse-resume', { 'Last-Event-ID': one.id! });
    await resumed.waitFor(eventCount(2));
    const titles = resumed.events().map((e) => (e.data.message as { title: string }).title);
    expect(titles).toEqual(['two', 'three']);
  });

  it('accepts the resume point as ?last_event_id too', async () => {
    const first = await connect('sse-query');
    await first.waitFor((frames) => frames.length > 0);
    await gw.inbox.send({ userId: 'sse-query', title: 'one', body: '1' });
    await gw.inbox.send({ userId: 'sse-query', title: 'two', body: '2' });
    await first.waitFor(eventCount(2));
    const resumed = await connect('sse-query', {}, `?last_event_id=${first.events()[0].id}`);
    await resumed.waitFor(eventCount(1));
    expect((resumed.events()[0].data.message as { title: string }).title).toBe('two');
  });

  it('sends heartbeat comments while nothing happens', async () => {
    const conn = await connect('sse-quiet');
    await conn.waitFor((frames) => frames.filter((f) => f.comments.includes('heartbeat')).length >= 2);
    expect(conn.events()).toEqual([]);
  });

  it('when the client disconnects, the inbox watch is aborted and closed', async () => {
    await until(() => gw.inbox.activeWatches === 0);
    const abortedBefore = gw.inbox.abortedWatches;
    const conn = await connect('sse-leaver');
    await until(() => gw.inbox.activeWatches === 1);
    conn.close();
    await until(() => gw.inbox.activeWatches === 0);
    expect(gw.inbox.abortedWatches).toBe(abortedBefore + 1);
  });

  it('when Last-Event-ID is not a cursor of ours, the stream carries an INVALID_ARGUMENT error event and ends', async () => {
    const conn = await connect('sse-bad-cursor', { 'Last-Event-ID': 'garbage' });
    await conn.ended;
    const errors = conn.frames.filter((f) => f.event === 'error');
    expect(errors).toHaveLength(1);
    expect(JSON.parse(errors[0].data!)).toEqual({
      error: { code: 'INVALID_ARGUMENT', message: expect.any(String) },
    });
  });

  it('when Last-Event-ID is absurdly long, answers 400 before streaming', async () => {
    const conn = await connect('sse-long', { 'Last-Event-ID': 'c'.repeat(600) });
    expect(conn.status).toBe(400);
  });
});

describe('GET /admin/notifications/stream with a subscriber that falls behind', () => {
  it('ends the stream cleanly after the events delivered so far, so the browser resumes by cursor', async () => {
    class OverflowingInbox extends FakeInbox {
      override async *watch(userId: string, _options?: WatchOptions): AsyncIterable<InboxEvent> {
        yield { cursor: 'c000000000001', type: 'all_read', userId, unreadCount: 0, occurredAt: new Date() };
        throw new ResourceExhaustedError('inbox watcher fell behind');
      }
    }
    const gw = await startGateway({ inbox: new OverflowingInbox() });
    try {
      const conn = await openSse(`${gw.baseUrl}${STREAM}`, {
        Authorization: `Bearer ${await hsToken('slow')}`,
      });
      await conn.ended;
      expect(conn.events().map((e) => e.id)).toEqual(['c000000000001']);
      expect(conn.frames.some((f) => f.event === 'error')).toBe(false);
    } finally {
      await gw.close();
    }
  });
});
