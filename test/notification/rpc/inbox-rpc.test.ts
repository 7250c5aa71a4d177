import * as grpc from '@grpc/grpc-js';
import { Code, ConnectError } from '@connectrpc/connect';
import { InboxEventType } from '../../../shared/gen/svc/notification/v1/inbox_pb';
import { startNotificationApp, type RunningNotificationApp } from '../../support/notification-app';
import { healthCheck, healthClient, unary } from '../../support/grpc-clients';
import { waitFor } from '../../support/wait';

let n: RunningNotificationApp;
beforeAll(async () => {
  n = await startNotificationApp({ inbox: { max_page_size: 3 } });
});
afterAll(async () => {
  await n.close();
});

type WireMessage = {
  id: string;
  userId: string;
  title: string;
  read: boolean;
  metadata?: Record<string, unknown>;
};

async function send(
  userId: string,
  title: string,
  metadata: Record<string, unknown> = {},
): Promise<WireMessage> {
  const { response } = await unary<{ message: WireMessage }>(n.inboxGrpc, 'send', {
    userId,
    title,
    body: `${title} body`,
    metadata,
  });
  return response.message;
}

async function grpcCode(p: Promise<unknown>): Promise<number> {
  try {
    await p;
  } catch (err) {
    return (err as grpc.ServiceError).code;
  }
  throw new Error('expected failure');
}

describe('InboxService over gRPC', () => {
  test('Send stores an unread message with metadata that GetInbox returns newest first', async () => {
    await send('alice', 'first', { link: '/orders/1' });
    await send('alice', 'second');
    const { response } = await unary<{ messages: WireMessage[]; unreadCount: number }>(
      n.inboxGrpc,
      'getInbox',
      {
        userId: 'alice',
      },
    );
    expect(response.messages.map((m) => m.title)).toEqual(['second', 'first']);
    expect(response.messages[1]!.metadata).toEqual({ link: '/orders/1' });
    expect(response.messages.every((m) => !m.read && m.userId === 'alice')).toBe(true);
    expect(response.unreadCount).toBe(2);
  });

  test('a page size above inbox.max_page_size is capped and the token walks every page', async () => {
    for (let i = 0; i < 5; i++) await send('pager', `m${i}`);
    const seen: string[] = [];
    let pageToken = '';
    do {
      const { response } = await unary<{ messages: WireMessage[]; nextPageToken: string }>(
        n.inboxGrpc,
        'getInbox',
        {
          userId: 'pager',
          pageSize: 100,
          pageToken,
        },
      );
      expect(response.messages.length).toBeLessThanOrEqual(3);
      seen.push(...response.messages.map((m) => m.title));
      pageToken = response.nextPageToken;
    } while (pageToken);
    expect(seen).toEqual(['m4', 'm3', 'm2', 'm1', 'm0']);
  });

  test('MarkRead, CountUnread, MarkAllRead, Delete and ClearAll act on the caller user only', async () => {
    const a = await send('bob', 'a');
    await send('bob', 'b');
    await send('carol', 'c');
    expect(
      (await unary<{ unreadCount: number }>(n.inboxGrpc, 'markRead', { userId: 'bob', messageId: a.id }))
        .response.unreadCount,
    ).toBe(1);
    expect(
      (await unary<{ unreadCount: number }>(n.inboxGrpc, 'countUnread', { userId: 'bob' })).response
        .unreadCount,
    ).toBe(1);
    expect(
      (await unary<{ updated: number }>(n.inboxGrpc, 'markAllRead', { userId: 'bob' })).response.updated,
    ).toBe(1);
    expect(
      (await unary<{ unreadCount: number }>(n.inboxGrpc, 'delete', { userId: 'bob', messageId: a.id }))
        .response.unreadCount,
    ).toBe(0);
    expect(
      (await unary<{ deleted: number }>(n.inboxGrpc, 'clearAll', { userId: 'bob' })).response.deleted,
    ).toBe(1);
    expect(
      (await unary<{ unreadCount: number }>(n.inboxGrpc, 'countUnread', { userId: 'carol' })).response
        .unreadCount,
    ).toBe(1);
  });

  test("every attempt on another user's message is NOT_FOUND, like a missing one, and changes nothing", async () => {
    const mine = await send('dave', 'private');
    const missing = '00000000-0000-4000-8000-000000000000';
    expect(await grpcCode(unary(n.inboxGrpc, 'markRead', { userId: 'eve', messageId: mine.id }))).toBe(
      grpc.status.NOT_FOUND,
    );
    expect(await grpcCode(unary(n.inboxGrpc, 'markRead', { userId: 'eve', messageId: missing }))).toBe(
      grpc.status.NOT_FOUND,
    );
    expect(await grpcCode(unary(n.inboxGrpc, 'delete', { userId: 'eve', messageId: mine.id }))).toBe(
      grpc.status.NOT_FOUND,
    );
    const { response } = await unary<{ messages: WireMessage[]; unreadCount: number }>(
      n.inboxGrpc,
      'getInbox',
      { userId: 'dave' },
    );
    expect(response.messages.map((m) => [m.id, m.read])).toEqual([[mine.id, false]]);
    const eve = await unary<{ messages: WireMessage[] }>(n.inboxGrpc, 'getInbox', { userId: 'eve' });
    expect(eve.response.messages).toEqual([]);
  });

  test('bad input is INVALID_ARGUMENT with a clear message', async () => {
    const err = await unary(n.inboxGrpc, 'send', { userId: '', title: 'x' }).catch(
      (e: grpc.ServiceError) => e,
    );
    expect(err).toMatchObject({ code: grpc.status.INVALID_ARGUMENT });
    expect((err as grpc.ServiceError).details).toMatch(/user/i);
    expect(await grpcCode(unary(n.inboxGrpc, 'markRead', { userId: 'x', messageId: 'not-a-uuid' }))).toBe(
      grpc.status.INVALID_ARGUMENT,
    );
    expect(await grpcCode(unary(n.inboxGrpc, 'getInbox', { userId: 'x', pageToken: '!!garbage!!' }))).toBe(
      grpc.status.INVALID_ARGUMENT,
    );
  });
});

describe('WatchInbox', () => {
  type Ev = {
    cursor: string;
    type: InboxEventType;
    messageId: string;
    unreadCount: number;
    message?: WireMessage;
  };

  function watch(userId: string, afterCursor = ''): { events: Ev[]; call: grpc.ClientReadableStream<Ev> } {
    const call = (n.inboxGrpc.watchInbox as (r: unknown) => grpc.ClientReadableStream<Ev>).call(n.inboxGrpc, {
      userId,
      afterCursor,
    });
    const events: Ev[] = [];
    call.on('data', (e: Ev) => events.push(e));
    call.on('error', () => undefined);
    return { events, call };
  }

  test('streams sent, read and deleted events of one user with the new unread count', async () => {
    await waitFor(() => n.app.inboxHub.watcherCount === 0);
    const w = watch('frank');
    const other = watch('grace');
    await waitFor(() => n.app.inboxHub.watcherCount === 2);
    const m = await send('frank', 'hello');
    await send('grace', 'not for frank');
    await unary(n.inboxGrpc, 'markRead', { userId: 'frank', messageId: m.id });
    await unary(n.inboxGrpc, 'delete', { userId: 'frank', messageId: m.id });
    await waitFor(() => w.events.length >= 4);
    w.call.cancel();
    other.call.cancel();
    expect(w.events.map((e) => [e.type, e.unreadCount])).toEqual([
      [InboxEventType.LIVE, 0],
      [InboxEventType.SENT, 1],
      [InboxEventType.READ, 0],
      [InboxEventType.DELETED, 0],
    ]);
    expect(w.events[1]!.message!.title).toBe('hello');
    expect(w.events[1]!.messageId).toBe(m.id);
    expect(w.events[2]!.messageId).toBe(m.id);
    expect(other.events.every((e) => e.message?.title !== 'hello')).toBe(true);
  });

  test('a subscriber that resumes after its last cursor gets exactly the events it missed', async () => {
    await waitFor(() => n.app.inboxHub.watcherCount === 0);
    const first = watch('heidi');
    await waitFor(() => n.app.inboxHub.watcherCount === 1);
    await send('heidi', 'one');
    await waitFor(() => first.events.length === 2);
    first.call.cancel();
    const cursor = first.events[1]!.cursor;
    await send('heidi', 'two');
    await send('heidi', 'three');
    const resumed = watch('heidi', cursor);
    await waitFor(() => resumed.events.length >= 2);
    await send('heidi', 'four');
    await waitFor(() => resumed.events.length >= 3);
    resumed.call.cancel();
    expect(resumed.events.map((e) => e.message?.title)).toEqual(['two', 'three', 'four']);
  });

  test('a cursor past the end of the log (made up, or from a wiped database) gets RESET with the unread count, then every new event', async () => {
    // Found by the black-box probe: the stream stayed silent and dropped every new event as "not after
    // the cursor".
    await send('oscar', 'before');
    // The largest cursor of the rule (15 digits): past the end of any log, the memory store's too
    // (numbered from its start time, epochFirstSeq).
    const madeUp = '999999999999999';
    const w = watch('oscar', madeUp);
    await waitFor(() => w.events.length >= 1);
    await send('oscar', 'after');
    await waitFor(() => w.events.length >= 2);
    w.call.cancel();
    expect(w.events.map((e) => [e.type, e.unreadCount])).toEqual([
      [InboxEventType.RESET, 1],
      [InboxEventType.SENT, 2],
    ]);
    // The reset's cursor is the log's real end, so a resume from it loses nothing.
    expect(Number(w.events[0]!.cursor)).toBeLessThan(Number(madeUp));
    expect(Number(w.events[1]!.cursor)).toBeGreaterThan(Number(w.events[0]!.cursor));
    expect(w.events[1]!.message!.title).toBe('after');
  });

  test('the same stream works over Connect for browsers and HTTP clients', async () => {
    await waitFor(() => n.app.inboxHub.watcherCount === 0);
    const controller = new AbortController();
    const got: string[] = [];
    const reading = (async () => {
      for await (const e of n.inboxConnect.watchInbox({ userId: 'ivan' }, { signal: controller.signal })) {
        if (e.type === InboxEventType.LIVE) continue;
        got.push(e.message?.title ?? '');
        if (got.length === 1) controller.abort();
      }
    })().catch((e: unknown) => ConnectError.from(e));
    await waitFor(() => n.app.inboxHub.watcherCount === 1);
    await n.inboxConnect.send({ userId: 'ivan', title: 'via connect', body: '' });
    const end = await reading;
    expect(got).toEqual(['via connect']);
    expect(end).toMatchObject({ code: Code.Canceled });
  });

  test('the first frame of a stream without a cursor is LIVE with the current cursor, so a reconnect before any event loses nothing', async () => {
    await send('judy', 'earlier');
    const first = watch('judy');
    await waitFor(() => first.events.length === 1);
    first.call.cancel();
    const live = first.events[0]!;
    expect(live.type).toBe(InboxEventType.LIVE);
    expect(live.unreadCount).toBe(1);
    expect(live.message).toBeUndefined();
    const missed = await send('judy', 'while away');
    const resumed = watch('judy', live.cursor);
    await waitFor(() => resumed.events.length >= 1);
    resumed.call.cancel();
    expect(resumed.events.map((e) => [e.type, e.messageId])).toEqual([[InboxEventType.SENT, missed.id]]);
  });

  test('after Delete and ClearAll, a replay from before the first event carries ids and types but none of the content', async () => {
    // Where mallory's events start: a live cursor (the memory store's log is numbered past every
    // earlier process's, so cursor 0 is below its horizon and gets a reset).
    const live = watch('mallory');
    await waitFor(() => live.events.length === 1);
    live.call.cancel();
    const gone = await send('mallory', 'deleted title', { secret: 'deleted meta' });
    await send('mallory', 'cleared title');
    await unary(n.inboxGrpc, 'delete', { userId: 'mallory', messageId: gone.id });
    await unary(n.inboxGrpc, 'clearAll', { userId: 'mallory' });
    const replay = watch('mallory', live.events[0]!.cursor);
    await waitFor(() => replay.events.length >= 4);
    replay.call.cancel();
    expect(replay.events.map((e) => e.type)).toEqual([
      InboxEventType.SENT,
      InboxEventType.SENT,
      InboxEventType.DELETED,
      InboxEventType.CLEARED,
    ]);
    expect(replay.events[0]!.messageId).toBe(gone.id);
    expect(replay.events.every((e) => e.message === undefined || e.message === null)).toBe(true);
    const text = JSON.stringify(replay.events, (_k, v: unknown) => (typeof v === 'bigint' ? String(v) : v));
    expect(text).not.toMatch(/title|meta/);
  });
});

describe('WatchInbox caps', () => {
  let capped: RunningNotificationApp;
  beforeAll(async () => {
    capped = await startNotificationApp({ inbox: { max_watchers_per_user: 2, max_watchers: 3 } });
  });
  afterAll(() => capped.close());

  function open(userId: string): {
    call: grpc.ClientReadableStream<unknown>;
    error: Promise<grpc.ServiceError>;
  } {
    const call = (capped.inboxGrpc.watchInbox as (r: unknown) => grpc.ClientReadableStream<unknown>).call(
      capped.inboxGrpc,
      { userId },
    );
    const error = new Promise<grpc.ServiceError>((resolve) => call.on('error', resolve));
    call.on('data', () => undefined);
    return { call, error };
  }

  test('beyond max_watchers_per_user and max_watchers, WatchInbox is RESOURCE_EXHAUSTED and the service stays healthy', async () => {
    const first = [open('olivia'), open('olivia')];
    await waitFor(() => capped.app.inboxHub.watcherCount === 2);
    const third = open('olivia');
    expect((await third.error).code).toBe(grpc.status.RESOURCE_EXHAUSTED);
    const otherUser = open('peggy');
    await waitFor(() => capped.app.inboxHub.watcherCount === 3);
    const overall = open('quentin');
    expect((await overall.error).code).toBe(grpc.status.RESOURCE_EXHAUSTED);
    // Everything else still answers, and a freed place can be taken again.
    const { response } = await unary<{ unreadCount: number }>(capped.inboxGrpc, 'countUnread', {
      userId: 'olivia',
    });
    expect(response.unreadCount).toBe(0);
    expect(await healthCheck(healthClient(capped.grpcAddress))).toBe('SERVING');
    first[0]!.call.cancel();
    await waitFor(() => capped.app.inboxHub.watcherCount === 2);
    const again = open('olivia');
    await waitFor(() => capped.app.inboxHub.watcherCount === 3);
    for (const w of [first[1]!, otherUser, again]) w.call.cancel();
    await waitFor(() => capped.app.inboxHub.watcherCount === 0);
  });
});
