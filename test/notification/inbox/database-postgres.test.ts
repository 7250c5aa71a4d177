/**
 * What only real PostgreSQL can show: the query plans, several replicas sharing one database
 * (LISTEN/NOTIFY), and the retention purge's cross-replica lock.
 */
import type { Knex } from 'knex';
import { Client } from 'pg';
import { DatabaseInboxStore } from '../../../services/notification/inbox/database-store';
import { DEFAULT_INBOX_CONFIG } from '../../../services/notification/inbox/config';
import { InboxHealthCheck } from '../../../services/notification/inbox/inbox-health';
import { InboxHub } from '../../../services/notification/inbox/inbox-hub';
import { InboxService } from '../../../services/notification/inbox/inbox-service';
import { InboxRetention } from '../../../services/notification/inbox/retention';
import { notificationMigrations } from '../../../services/notification/migrations';
import { silentLogger } from '../../../shared/logging/logger';
import { openDatabase } from '../../../shared/storage/database';
import { runMigrations } from '../../../shared/storage/migrations';
import { PgNotifyFeed } from '../../../shared/streams/notify-feed';
import { INBOX_EVENTS_CHANNEL } from '../../../services/notification/inbox/database-store';
import { createTestDatabase } from '../../support/database';
import { ManualClock, newUser, take, waitFor } from './support';

interface Replica {
  knex: Knex;
  store: DatabaseInboxStore;
  hub: InboxHub;
  feed: PgNotifyFeed;
  service: InboxService;
}

let db: { url: string; drop(): Promise<void> };
const replicas: Replica[] = [];

async function replica(): Promise<Replica> {
  const knex = await openDatabase({ url: db.url, data_dir: '', pool_max: 4 }, silentLogger());
  const store = new DatabaseInboxStore(knex);
  // The LISTEN connection a composition root would hand the hub.
  const feed = new PgNotifyFeed({
    url: db.url,
    channels: [INBOX_EVENTS_CHANNEL],
    logger: silentLogger(),
    applicationName: 'inbox-hub',
  });
  await feed.start();
  const hub = new InboxHub(store, { bufferSize: 64, notifications: feed });
  await hub.start();
  const service = new InboxService({ store, hub, config: DEFAULT_INBOX_CONFIG });
  const r = { knex, store, hub, feed, service };
  replicas.push(r);
  return r;
}

beforeAll(async () => {
  db = await createTestDatabase('inboxpg');
  const knex = await openDatabase({ url: db.url, data_dir: '', pool_max: 1 }, silentLogger());
  await runMigrations(knex, notificationMigrations);
  await knex.destroy();
});

afterAll(async () => {
  for (const r of replicas) {
    await r.hub.stop();
    await r.feed.stop();
    await r.knex.destroy();
  }
  await db?.drop();
});

interface PlanNode {
  'Node Type': string;
  'Index Name'?: string;
  'Index Cond'?: string;
  Plans?: PlanNode[];
}

function nodesOf(plan: PlanNode): PlanNode[] {
  return [plan, ...(plan.Plans ?? []).flatMap(nodesOf)];
}

function indexesIn(plan: PlanNode): string[] {
  return nodesOf(plan).flatMap((n) => (n['Index Name'] ? [n['Index Name']] : []));
}

describe('query plans on PostgreSQL', () => {
  const captured: { sql: string; bindings: unknown[] }[] = [];
  let r: Replica;
  let heavy: string;

  beforeAll(async () => {
    r = await replica();
    // 400 users x 100 messages: enough rows that a sequential scan is clearly the worse plan, so the
    // planner's choice is its own (no enable_seqscan tricks).
    await r.knex.raw(`
      INSERT INTO inbox_messages (id, user_id, title, body, metadata, read_at, created_at)
      SELECT gen_random_uuid(), 'plan-user-' || (g % 400), 't', 'b', '{}'::jsonb,
             CASE WHEN g % 3 = 0 THEN NULL ELSE now() END, now() - (g || ' seconds')::interval
      FROM generate_series(1, 40000) AS g`);
    await r.knex.raw('ANALYZE inbox_messages');
    heavy = 'plan-user-7';
    r.knex.on('query', (q: { sql: string; bindings?: unknown[] }) => {
      captured.push({ sql: q.sql, bindings: q.bindings ?? [] });
    });
  });

  async function explain(run: () => Promise<unknown>, match: RegExp): Promise<PlanNode> {
    captured.length = 0;
    await run();
    const query = captured.find((q) => match.test(q.sql));
    if (!query) throw new Error(`no captured query matched ${match}`);
    const client = new Client({ connectionString: db.url });
    await client.connect();
    try {
      const result = await client.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(
        `EXPLAIN (FORMAT JSON) ${query.sql}`,
        query.bindings,
      );
      return result.rows[0]!['QUERY PLAN'][0].Plan;
    } finally {
      await client.end();
    }
  }

  it('when a first page is read, the query uses the (user_id, created_at, id) index', async () => {
    const plan = await explain(() => r.service.getInbox(heavy, { pageSize: 20 }), /ORDER BY created_at DESC/);
    expect(indexesIn(plan)).toContain('inbox_messages_user_created_idx');
    // The index delivers the order: no sort step.
    expect(nodesOf(plan).map((n) => n['Node Type'])).not.toContain('Sort');
  });

  it('when a later page is read by token, the keyset query uses the same index', async () => {
    const first = await r.service.getInbox(heavy, { pageSize: 20 });
    const plan = await explain(
      () => r.service.getInbox(heavy, { pageSize: 20, pageToken: first.nextPageToken }),
      /\(created_at, id\) </,
    );
    const scan = nodesOf(plan).find((n) => n['Index Name'] === 'inbox_messages_user_created_idx');
    // The keyset condition is part of the index condition, not a filter over skipped rows.
    expect(scan?.['Index Cond']).toMatch(/ROW\(created_at, id\) </);
  });

  it('when unread messages are counted, the query uses the partial unread index', async () => {
    const plan = await explain(() => r.service.countUnread(heavy), /count\(\*\) AS n FROM inbox_messages/);
    expect(indexesIn(plan)).toEqual(['inbox_messages_unread_idx']);
  });
});

describe('replicas on one PostgreSQL', () => {
  it('when a message is sent through one replica, a watcher on another receives it live', async () => {
    const a = await replica();
    const b = await replica();
    const user = newUser();
    await a.service.send({ userId: user, title: 'first', body: '' });
    const iterator = b.service.watch(user, { after: '0' })[Symbol.asyncIterator]();
    await take(iterator, 1);
    // Replay is done: what comes next can only arrive through LISTEN/NOTIFY.
    const pending = iterator.next();
    const sent = await a.service.send({ userId: user, title: 'second', body: '' });
    const event = (await pending).value;
    expect(event).toMatchObject({ type: 'sent', userId: user, unreadCount: 2 });
    expect(event.message.id).toBe(sent.id);
    await iterator.return?.();
  });

  it('when both replicas write for one user, a watcher sees every event once, in seq order', async () => {
    const a = await replica();
    const b = await replica();
    const user = newUser();
    const iterator = b.service.watch(user, { after: '0' })[Symbol.asyncIterator]();
    const sends = [];
    for (let i = 0; i < 10; i++)
      sends.push((i % 2 ? a : b).service.send({ userId: user, title: `m${i}`, body: '' }));
    const sent = await Promise.all(sends);
    const events = await take(iterator, 10);
    expect(new Set(events.map((e) => e.message!.id))).toEqual(new Set(sent.map((m) => m.id)));
    const cursors = events.map((e) => Number(e.cursor));
    expect(cursors).toEqual([...cursors].sort((x, y) => x - y));
    expect(events.map((e) => e.unreadCount)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    await iterator.return?.();
  });

  it('when the LISTEN backend is terminated, events sent meanwhile still reach the other replica', async () => {
    const a = await replica();
    const b = await replica();
    const user = newUser();
    await a.service.send({ userId: user, title: 'before', body: '' });
    const iterator = b.service.watch(user, { after: '0' })[Symbol.asyncIterator]();
    await take(iterator, 1);
    const admin = new Client({ connectionString: db.url });
    await admin.connect();
    try {
      await admin.query(
        `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
         WHERE application_name = 'inbox-hub' AND datname = current_database()`,
      );
    } finally {
      await admin.end();
    }
    // Sent at once, while b's LISTEN connection is down or coming back: their NOTIFYs are lost, and
    // b's catch-up after the reconnect must deliver them anyway.
    const sent = [];
    for (const title of ['during-1', 'during-2', 'during-3'])
      sent.push(await a.service.send({ userId: user, title, body: '' }));
    const events = await take(iterator, 3);
    expect(events.map((e) => e.messageId)).toEqual(sent.map((m) => m.id));
    await waitFor(() => b.hub.listening, 'the listener to reconnect');
    const pending = iterator.next();
    const after = await a.service.send({ userId: user, title: 'after', body: '' });
    expect((await pending).value.messageId).toBe(after.id);
    await iterator.return?.();
  });

  it('when a reader keeps up with a burst of 2,000 sends from another replica, it gets every event once, in order', async () => {
    const a = await replica();
    const b = await replica();
    const user = newUser('burst');
    const iterator = b.service.watch(user)[Symbol.asyncIterator]();
    expect((await take(iterator, 1))[0]!.type).toBe('live');
    const received: string[] = [];
    const reading = (async () => {
      while (received.length < 2000) {
        const next = await iterator.next();
        if (next.done) throw new Error('the stream ended early');
        received.push(next.value.messageId!);
      }
    })();
    const sent = await Promise.all(
      Array.from({ length: 2000 }, (_, i) => a.service.send({ userId: user, title: `m${i}`, body: '' })),
    );
    await reading;
    await iterator.return?.();
    const stored = await a.store.eventsAfter(user, 0, 5000);
    expect(received).toEqual(stored.map((e) => e.messageId));
    expect(new Set(received)).toEqual(new Set(sent.map((m) => m.id)));
  }, 60_000);
});

describe('erasure in the event log on PostgreSQL', () => {
  it('when a message is deleted, its event row keeps ids and type and its payload column is NULL', async () => {
    const r = await replica();
    const user = newUser('erase');
    const gone = await r.service.send({
      userId: user,
      title: 'erase me',
      body: 'secret',
      metadata: { s: 1 },
    });
    const kept = await r.service.send({ userId: user, title: 'keep me', body: 'fine' });
    await r.service.delete(user, gone.id);
    const { rows } = (await r.knex.raw(
      'SELECT type, message_id, payload FROM inbox_events WHERE user_id = ? ORDER BY seq',
      [user],
    )) as { rows: { type: string; message_id: string | null; payload: unknown }[] };
    expect(rows.map((row) => [row.type, row.message_id, row.payload === null])).toEqual([
      ['sent', gone.id, true],
      ['sent', kept.id, false],
      ['deleted', gone.id, true],
    ]);
    await r.service.clearAll(user);
    const { rows: after } = (await r.knex.raw(
      'SELECT count(*)::int AS n FROM inbox_events WHERE user_id = ? AND payload IS NOT NULL',
      [user],
    )) as { rows: { n: number }[] };
    expect(after[0]!.n).toBe(0);
  });
});

describe('retention across replicas', () => {
  const config = { retention_days: 30, purge_interval_seconds: 3600, purge_batch_size: 3 };

  async function seedOld(r: Replica, clock: ManualClock, n: number): Promise<void> {
    const service = new InboxService({
      store: r.store,
      hub: r.hub,
      config: DEFAULT_INBOX_CONFIG,
      clock: clock,
    });
    for (let i = 0; i < n; i++) await service.send({ userId: newUser('old'), title: 'old', body: '' });
  }

  it('when two replicas purge at once, only one of them runs', async () => {
    const a = await replica();
    const b = await replica();
    const clock = new ManualClock(new Date('2010-01-01T00:00:00.000Z'));
    await seedOld(a, clock, 7);
    clock.advance(40 * 86_400_000);
    const results = await Promise.all([
      new InboxRetention({ store: a.store, config, clock: clock }).purgeOnce(),
      new InboxRetention({ store: b.store, config, clock: clock }).purgeOnce(),
    ]);
    expect(results.filter((r) => r.ran)).toHaveLength(1);
    expect(results.reduce((n, r) => n + r.messages, 0)).toBe(7);
    expect(results.find((r) => r.ran)!.batches).toBe(3);
  });

  it('when the pool has a single connection, the purge still runs', async () => {
    const knex = await openDatabase({ url: db.url, data_dir: '', pool_max: 1 }, silentLogger());
    try {
      const store = new DatabaseInboxStore(knex);
      const clock = new ManualClock(new Date('2020-01-01T00:00:00.000Z'));
      const result = await new InboxRetention({ store, config, clock: clock }).purgeOnce();
      expect(result.ran).toBe(true);
    } finally {
      await knex.destroy();
    }
  });

  it('when another replica holds the purge lock, the purge is skipped', async () => {
    const a = await replica();
    const holder = new Client({ connectionString: db.url });
    await holder.connect();
    try {
      await holder.query("SELECT pg_advisory_lock(hashtext('inbox.purge'), 0)");
      const clock = new ManualClock(new Date('2030-01-01T00:00:00.000Z'));
      const result = await new InboxRetention({ store: a.store, config, clock: clock }).purgeOnce();
      expect(result.ran).toBe(false);
    } finally {
      await holder.end();
    }
  });
});

describe('health check notifications.inbox', () => {
  it('when the database answers, the check is healthy with backend and latency', async () => {
    const a = await replica();
    const result = await new InboxHealthCheck(a.store).check();
    expect(result.status).toBe('healthy');
    expect(result.details.backend).toBe('database');
    expect(result.details.latency_ms).toBeGreaterThanOrEqual(0);
    expect(result.message).toBeUndefined();
  });

  it('when the database is gone, the check is unhealthy and says only the error type', async () => {
    const knex = await openDatabase({ url: db.url, data_dir: '', pool_max: 1 }, silentLogger());
    const store = new DatabaseInboxStore(knex);
    await knex.destroy();
    const result = await new InboxHealthCheck(store).check();
    expect(result.status).toBe('unhealthy');
    expect(result.message).toMatch(/^\w+: inbox store check failed$/);
    expect(result.message).not.toMatch(/postgres|select|pool/i);
  });
});
