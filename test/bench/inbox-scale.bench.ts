/**
 * Inbox at scale (issue 4), against the notification service running as its own process
 * (`dist/services/notification/main.js`), so client and server each get a core:
 *
 * 1. Reads: `GetInbox` first page and `CountUnread` of a user with 10,000 messages in a table of
 *    1,000,000 rows on real PostgreSQL, p50/p99 over gRPC, sequential and 8 in flight. Baseline: the
 *    store's own SQL sent directly with `pg` (same pool size, same concurrency), interleaved in rounds.
 * 2. Live fan-out: 2,000 open `WatchInbox` streams (distinct users) and 500 sends/s spread over
 *    them (memory store), 3 rounds of 3.5 s: p50/p99 from Send acknowledged to the event on the
 *    subscriber's stream. Baseline: the Send round trip at the same rate with no watchers open,
 *    in rounds alternating with the fan-out ones.
 *
 * Ratios are value / baseline (latency: higher means slower than the baseline). The issue sets no
 * target for these, so every row says `report`.
 */
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import * as grpc from '@grpc/grpc-js';
import { Client, Pool } from 'pg';
import { InboxService } from '../../shared/gen/svc/notification/v1/inbox_pb';
import { createGrpcServiceDefinition } from '../../shared/rpc/grpc-adapter';
import { silentLogger } from '../../shared/logging/logger';
import { openDatabase } from '../../shared/storage/database';
import { runMigrations } from '../../shared/storage/migrations';
import {
  NOTIFICATION_MIGRATIONS_TABLE,
  notificationMigrations,
} from '../../services/notification/migrations';
import { startCluster } from '../support/postgres-cluster';
import { percentile, type BenchRow } from './measure';
import { tmpdir } from 'node:os';
import { startServiceProcess } from '../support/service-process';

/** Sizes of the read benchmark's data set. */
const TABLE_ROWS = 1_000_000;
const HEAVY_USER = 'scale-heavy-user';
const HEAVY_USER_ROWS = 10_000;
const OTHER_USERS = 999;
const UNREAD_FRACTION = 0.2;
/** Rows span 29 days: inside the 30-day retention, so the service's purge has nothing to delete. */
const SPAN_DAYS = 29;
/** The service's default `database.pool_max`; the raw baseline gets the same pool. */
const POOL_SIZE = 10;
const PAGE_SIZE = 50;

const READ_CONCURRENCIES = [1, 8] as const;
const READ_WARMUP_CALLS = 200;
const READ_ROUNDS = 3;
const READ_CALLS_PER_ROUND = 500;

const WATCHERS = 2000;
const WATCH_CHANNELS = 4;
const SEND_RATE = 500;
/** Fan-out and baseline alternate in rounds (watches opened and closed each time), 10.5 s each in all. */
const FANOUT_ROUNDS = 3;
const ROUND_MS = 3500;
const ROUND_WARMUP_MS = 500;
const DRAIN_TIMEOUT_MS = 10_000;
const WATCH_READY_TIMEOUT_MS = 30_000;

type Callback<T> = (err: grpc.ServiceError | null, res: T) => void;
interface InboxGrpcClient extends grpc.Client {
  send(req: unknown, cb: Callback<{ message?: { id: string } }>): grpc.ClientUnaryCall;
  getInbox(req: unknown, cb: Callback<{ messages: unknown[]; unreadCount: number }>): grpc.ClientUnaryCall;
  countUnread(req: unknown, cb: Callback<{ unreadCount: number }>): grpc.ClientUnaryCall;
  watchInbox(req: unknown): grpc.ClientReadableStream<{ message?: { id: string } }>;
}

const InboxClient = grpc.makeGenericClientConstructor(
  createGrpcServiceDefinition(InboxService),
  InboxService.name,
);

/** A client on its own HTTP/2 connection (grpc-js shares one per target unless told otherwise). */
function inboxClient(address: string): InboxGrpcClient {
  return new InboxClient(address, grpc.credentials.createInsecure(), {
    'grpc.use_local_subchannel_pool': 1,
  }) as unknown as InboxGrpcClient;
}

function call<T>(start: (cb: Callback<T>) => unknown): Promise<T> {
  return new Promise((resolve, reject) => start((err, res) => (err ? reject(err) : resolve(res))));
}

/** Runs `fn` `count` times with `concurrency` calls in flight; returns each call's latency in ms. */
async function latencies(fn: () => Promise<unknown>, count: number, concurrency: number): Promise<number[]> {
  const out: number[] = [];
  let started = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (started < count) {
        started++;
        const t0 = performance.now();
        await fn();
        out.push(performance.now() - t0);
      }
    }),
  );
  return out;
}

function round2(n: number): number {
  return Math.round(n * 100) / 100;
}

function latencyRows(name: string, value: number[], baseline: number[], baselineName: string): BenchRow[] {
  return ([0.5, 0.99] as const).map((p) => {
    const v = percentile(value, p);
    const b = percentile(baseline, p);
    return {
      name: `${name}: p${p * 100} (ms) vs ${baselineName}`,
      value: v,
      baseline: b,
      ratio: b > 0 ? round2(v / b) : Number.NaN,
      target: 'report',
      unit: 'ms',
    };
  });
}

/** Creates a scratch database on the server of `serverUrl`, runs `work` on it, then drops it. */
async function withScratchDatabase<T>(serverUrl: string, work: (url: string) => Promise<T>): Promise<T> {
  const name = `inbox_scale_${randomBytes(4).toString('hex')}`;
  const admin = new Client({ connectionString: serverUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
    const url = new URL(serverUrl);
    url.pathname = `/${name}`;
    try {
      return await work(url.toString());
    } finally {
      await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    }
  } finally {
    await admin.end();
  }
}

/**
 * Migrates and fills inbox_messages: TABLE_ROWS rows in creation order over SPAN_DAYS, every 100th
 * row the heavy user's (exactly HEAVY_USER_ROWS), the others spread over OTHER_USERS users, about
 * UNREAD_FRACTION unread. VACUUM (ANALYZE) afterwards stands in for autovacuum on a table this old
 * (it sets the visibility map that index-only scans rely on).
 */
async function loadInbox(url: string): Promise<{ heavyUnread: number }> {
  const knex = await openDatabase({ url, data_dir: '', pool_max: 1 }, silentLogger());
  try {
    await runMigrations(knex, notificationMigrations, { tableName: NOTIFICATION_MIGRATIONS_TABLE });
  } finally {
    await knex.destroy();
  }
  const db = new Client({ connectionString: url });
  await db.connect();
  try {
    await db.query('SELECT setseed(0.42)');
    await db.query(
      `INSERT INTO inbox_messages (id, user_id, title, body, metadata, read_at, created_at)
       SELECT gen_random_uuid(),
         CASE WHEN g % 100 = 0 THEN $1 ELSE 'scale-user-' || (g % $2) END,
         'Order ' || g || ' shipped',
         'Your order ' || g || ' is on its way and should arrive within two days.',
         jsonb_build_object('orderId', g, 'kind', 'shipping'),
         CASE WHEN random() < $3 THEN NULL ELSE t.at + interval '2 hours' END,
         t.at
       FROM generate_series(1, $4::int) AS g,
         LATERAL (SELECT now() - make_interval(days => $5) * (1 - g / $4::float8) AS at) AS t`,
      [HEAVY_USER, OTHER_USERS, UNREAD_FRACTION, TABLE_ROWS, SPAN_DAYS],
    );
    await db.query('VACUUM (ANALYZE) inbox_messages');
    const { rows } = await db.query<{ total: string; heavy: string; unread: string }>(
      `SELECT count(*) AS total, count(*) FILTER (WHERE user_id = $1) AS heavy,
         count(*) FILTER (WHERE user_id = $1 AND read_at IS NULL) AS unread FROM inbox_messages`,
      [HEAVY_USER],
    );
    if (Number(rows[0]!.total) !== TABLE_ROWS || Number(rows[0]!.heavy) !== HEAVY_USER_ROWS) {
      throw new Error(`inbox-scale: unexpected data set ${JSON.stringify(rows[0])}`);
    }
    return { heavyUnread: Number(rows[0]!.unread) };
  } finally {
    await db.end();
  }
}

// The store's own SQL (DatabaseInboxStore.listMessages / countUnread), sent directly with pg.
const PAGE_SQL = `SELECT id, user_id, title, body, metadata, read_at, created_at,
  to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS created_key
  FROM inbox_messages WHERE user_id = $1 ORDER BY created_at DESC, id DESC LIMIT $2`;
const COUNT_SQL = 'SELECT count(*) AS n FROM inbox_messages WHERE user_id = $1 AND read_at IS NULL';

/** Benchmark 1: GetInbox first page and CountUnread over gRPC vs the same SQL through pg. */
export async function runInboxReadBench(databaseUrl: string): Promise<BenchRow[]> {
  return withScratchDatabase(databaseUrl, async (url) => {
    const loadStarted = performance.now();
    const { heavyUnread } = await loadInbox(url);
    process.stdout.write(
      `  loaded ${TABLE_ROWS} rows in ${((performance.now() - loadStarted) / 1000).toFixed(1)} s\n`,
    );
    const service = await startServiceProcess(
      'notification',
      {
        SVC_NOTIFICATION__DATABASE__URL: url,
        SVC_NOTIFICATION__DATABASE__POOL_MAX: String(POOL_SIZE),
      },
      { cwd: tmpdir() },
    );
    const client = inboxClient(`127.0.0.1:${service.grpcPort}`);
    const pool = new Pool({ connectionString: url, max: POOL_SIZE });
    try {
      const ops = {
        GetInbox: {
          service: () =>
            call<{ messages: unknown[]; unreadCount: number }>((cb) =>
              client.getInbox({ userId: HEAVY_USER, pageSize: PAGE_SIZE }, cb),
            ),
          // GetInbox runs the page and the count in parallel; so does its baseline.
          raw: () =>
            Promise.all([
              pool.query(PAGE_SQL, [HEAVY_USER, PAGE_SIZE + 1]),
              pool.query(COUNT_SQL, [HEAVY_USER]),
            ]),
        },
        CountUnread: {
          service: () => call((cb) => client.countUnread({ userId: HEAVY_USER }, cb)),
          raw: () => pool.query(COUNT_SQL, [HEAVY_USER]),
        },
      };
      // The service answers what the data set holds (a wrong answer would make the timings moot).
      const page = await ops.GetInbox.service();
      if (page.messages.length !== PAGE_SIZE || page.unreadCount !== heavyUnread) {
        throw new Error(
          `inbox-scale: GetInbox answered ${page.messages.length} messages, ${page.unreadCount} unread`,
        );
      }
      const rows: BenchRow[] = [];
      for (const [name, op] of Object.entries(ops)) {
        for (const concurrency of READ_CONCURRENCIES) {
          await latencies(op.raw, READ_WARMUP_CALLS, concurrency);
          await latencies(op.service, READ_WARMUP_CALLS, concurrency);
          const value: number[] = [];
          const baseline: number[] = [];
          for (let round = 0; round < READ_ROUNDS; round++) {
            baseline.push(...(await latencies(op.raw, READ_CALLS_PER_ROUND, concurrency)));
            value.push(...(await latencies(op.service, READ_CALLS_PER_ROUND, concurrency)));
          }
          const how = concurrency === 1 ? 'sequential' : `${concurrency} in flight`;
          rows.push(
            ...latencyRows(
              `inbox ${name} over gRPC, user with ${HEAVY_USER_ROWS} of ${TABLE_ROWS} rows, ${how}`,
              value,
              baseline,
              'the same SQL through pg',
            ),
          );
        }
      }
      return rows;
    } finally {
      client.close();
      await pool.end();
      await service.stop();
    }
  });
}

interface SendRecord {
  sentAt: number;
  ackAt?: number;
  id?: string;
}

/**
 * Sends at `rate` per second for `durationMs` (open loop: the schedule does not wait for answers),
 * to `userOf(i)`, and waits for every answer. Throws when a send fails.
 */
async function pacedSends(
  client: InboxGrpcClient,
  userOf: (i: number) => string,
  rate: number,
  durationMs: number,
): Promise<SendRecord[]> {
  const total = Math.round((rate * durationMs) / 1000);
  const records: SendRecord[] = [];
  const pending: Promise<void>[] = [];
  const start = performance.now();
  while (records.length < total) {
    const due = Math.min(total, Math.floor(((performance.now() - start) * rate) / 1000) + 1);
    while (records.length < due) {
      const record: SendRecord = { sentAt: performance.now() };
      const i = records.length;
      records.push(record);
      pending.push(
        call<{ message?: { id: string } }>((cb) =>
          client.send({ userId: userOf(i), title: `Build ${i} finished`, body: 'All checks passed.' }, cb),
        ).then((res) => {
          record.ackAt = performance.now();
          record.id = res.message?.id;
        }),
      );
    }
    await sleep(1);
  }
  await Promise.all(pending);
  return records;
}

interface Watches {
  /** When each message's event first arrived on its user's stream. */
  receivedAt: Map<string, number>;
  cancel(): void;
}

/**
 * Opens one WatchInbox stream per user, spread over `channels`, and waits until every one is live:
 * a watch without a cursor sees only what comes after it joined, so it pokes each user whose stream
 * has heard nothing yet until all have.
 */
async function openWatches(
  channels: InboxGrpcClient[],
  sender: InboxGrpcClient,
  user: (i: number) => string,
  receivedAt: Map<string, number>,
): Promise<Watches> {
  const streams: grpc.ClientReadableStream<unknown>[] = [];
  const heard = new Set<number>();
  let errors = 0;
  const cancel = () => {
    for (const stream of streams) stream.cancel();
  };
  for (let w = 0; w < WATCHERS; w++) {
    const stream = channels[w % channels.length]!.watchInbox({ userId: user(w) });
    stream.on('data', (event: { message?: { id: string } }) => {
      heard.add(w);
      const id = event.message?.id;
      if (id && !receivedAt.has(id)) receivedAt.set(id, performance.now());
    });
    stream.on('error', (err: grpc.ServiceError) => {
      if (err.code !== grpc.status.CANCELLED) errors++;
    });
    streams.push(stream);
  }
  const readyBy = performance.now() + WATCH_READY_TIMEOUT_MS;
  while (heard.size < WATCHERS) {
    if (performance.now() > readyBy || errors > 0) {
      cancel();
      throw new Error(`inbox-scale: only ${heard.size} of ${WATCHERS} watches live (${errors} failed)`);
    }
    await Promise.all(
      Array.from({ length: WATCHERS }, (_, w) => w)
        .filter((w) => !heard.has(w))
        .map((w) => call((cb) => sender.send({ userId: user(w), title: 'warm-up', body: '' }, cb))),
    );
    await sleep(500);
  }
  return {
    receivedAt,
    cancel() {
      cancel();
      if (errors > 0) throw new Error(`inbox-scale: ${errors} WatchInbox streams failed`);
    },
  };
}

/**
 * Benchmark 2: live fan-out to WatchInbox streams (memory store) vs the Send round trip alone, in
 * alternating rounds so a noisy machine moves both sides alike.
 */
export async function runInboxFanOutBench(): Promise<BenchRow[]> {
  const service = await startServiceProcess(
    'notification',
    {
      SVC_NOTIFICATION__INBOX__STORE_BACKEND: 'memory',
      SVC_NOTIFICATION__DELIVERY__STORE_BACKEND: 'memory',
    },
    { cwd: tmpdir() },
  );
  const address = `127.0.0.1:${service.grpcPort}`;
  const sender = inboxClient(address);
  const channels = Array.from({ length: WATCH_CHANNELS }, () => inboxClient(address));
  const user = (i: number) => `scale-watcher-${i % WATCHERS}`;
  let open: Watches | null = null;
  try {
    const alone: SendRecord[] = [];
    const fanned: SendRecord[] = [];
    const receivedAt = new Map<string, number>();
    for (let round = 0; round < FANOUT_ROUNDS; round++) {
      // Baseline: the same paced sends with nobody watching (after a short unmeasured warm-up).
      await pacedSends(sender, user, SEND_RATE, ROUND_WARMUP_MS);
      alone.push(...(await pacedSends(sender, user, SEND_RATE, ROUND_MS)));

      open = await openWatches(channels, sender, user, receivedAt);
      await pacedSends(sender, user, SEND_RATE, ROUND_WARMUP_MS);
      const sent = await pacedSends(sender, user, SEND_RATE, ROUND_MS);
      fanned.push(...sent);
      const drainBy = performance.now() + DRAIN_TIMEOUT_MS;
      while (sent.some((r) => !receivedAt.has(r.id!)) && performance.now() < drainBy) await sleep(20);
      open.cancel();
      open = null;
      // Let the server see the cancellations before the next baseline.
      await sleep(500);
    }

    const ackToEvent: number[] = [];
    const sendToEvent: number[] = [];
    let beforeAck = 0;
    for (const r of fanned) {
      const at = receivedAt.get(r.id!);
      if (at === undefined) continue;
      // The event can overtake the Send answer (both leave the server together): no wait after the ack.
      if (at < r.ackAt!) beforeAck++;
      ackToEvent.push(Math.max(0, at - r.ackAt!));
      sendToEvent.push(at - r.sentAt);
    }
    const lost = fanned.length - ackToEvent.length;
    const rtt = (records: SendRecord[]) => records.map((r) => r.ackAt! - r.sentAt);
    const setting = `${WATCHERS} WatchInbox streams, ${SEND_RATE} sends/s`;
    process.stdout.write(
      `  fan-out: ${ackToEvent.length} of ${fanned.length} events received` +
        `${lost ? ` (${lost} LOST)` : ''}, ${beforeAck} of them before their Send answer\n`,
    );
    if (lost > 0) throw new Error(`inbox-scale: ${lost} of ${fanned.length} events never arrived`);
    return [
      ...latencyRows(
        `inbox live fan-out, ${setting}: Send answered -> event received`,
        ackToEvent,
        rtt(alone),
        'Send round trip, no watchers',
      ),
      ...latencyRows(
        `inbox live fan-out, ${setting}: Send issued -> event received`,
        sendToEvent,
        rtt(alone),
        'Send round trip, no watchers',
      ),
      ...latencyRows(
        `inbox Send round trip at ${SEND_RATE}/s with ${WATCHERS} watchers`,
        rtt(fanned),
        rtt(alone),
        'no watchers',
      ),
    ];
  } finally {
    try {
      open?.cancel();
    } finally {
      for (const c of channels) c.close();
      sender.close();
      await service.stop();
    }
  }
}

/** Both benchmarks; PostgreSQL from TEST_DATABASE_URL or a throwaway cluster. */
export async function runInboxScaleBench(): Promise<BenchRow[]> {
  const rows: BenchRow[] = [];
  const url = process.env.TEST_DATABASE_URL;
  if (url) rows.push(...(await runInboxReadBench(url)));
  else {
    const cluster = await startCluster();
    try {
      rows.push(...(await runInboxReadBench(cluster.url)));
    } finally {
      cluster.stop();
    }
  }
  rows.push(...(await runInboxFanOutBench()));
  return rows;
}
