/**
 * Benchmark: InboxService.send through DatabaseInboxStore on real PostgreSQL at 64 concurrent calls,
 * against raw `pg` single-row INSERTs of the same rows, at the same concurrency and pool size, into a
 * table with the same columns and indexes, in the same run. Reported as a ratio (target >= 0.8).
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { Client, Pool } from 'pg';
import { DEFAULT_INBOX_CONFIG } from '../../services/notification/inbox/config';
import { DatabaseInboxStore } from '../../services/notification/inbox/database-store';
import { InboxHub } from '../../services/notification/inbox/inbox-hub';
import { InboxService } from '../../services/notification/inbox/inbox-service';
import { notificationMigrations } from '../../services/notification/migrations';
import { silentLogger } from '../../shared/logging/logger';
import { openDatabase } from '../../shared/storage/database';
import { runMigrations } from '../../shared/storage/migrations';
import type { BenchRow } from './measure';

const CONCURRENCY = 64;
const POOL_SIZE = 8;
const USERS = 1000;

interface Row {
  userId: string;
  title: string;
  body: string;
  metadata: Record<string, unknown>;
}

function rows(n: number): Row[] {
  return Array.from({ length: n }, (_, i) => ({
    userId: `bench-user-${i % USERS}`,
    title: `Order ${i} shipped`,
    body: `Your order ${i} is on its way and should arrive within two days.`,
    metadata: { orderId: i, kind: 'shipping' },
  }));
}

/** Runs `work` over `items` with `concurrency` workers; returns items per second. */
async function throughput<T>(
  items: T[],
  concurrency: number,
  work: (item: T) => Promise<unknown>,
): Promise<number> {
  let next = 0;
  const started = process.hrtime.bigint();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < items.length) await work(items[next++]!);
    }),
  );
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  return items.length / seconds;
}

async function withScratchDatabase<T>(serverUrl: string, run: (url: string) => Promise<T>): Promise<T> {
  const name = `inbox_bench_${randomBytes(4).toString('hex')}`;
  const admin = new Client({ connectionString: serverUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  try {
    return await run(url.toString());
  } finally {
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.end();
  }
}

/** Measures InboxService.send (database store) against raw pg inserts; `databaseUrl` is any database on the server. */
export async function runInboxStoreBench(databaseUrl: string, count = 6000): Promise<BenchRow[]> {
  return withScratchDatabase(databaseUrl, async (url) => {
    const knex = await openDatabase({ url, data_dir: '', pool_max: POOL_SIZE }, silentLogger());
    const pool = new Pool({ connectionString: url, max: POOL_SIZE });
    try {
      await runMigrations(knex, notificationMigrations);
      // The baseline's table: same columns, same indexes.
      await knex.raw('CREATE TABLE bench_raw_messages (LIKE inbox_messages INCLUDING ALL)');
      const store = new DatabaseInboxStore(knex);
      const hub = new InboxHub(store, { bufferSize: 256 });
      const service = new InboxService({ store, hub, config: DEFAULT_INBOX_CONFIG });
      const raw = (r: Row) =>
        pool.query(
          'INSERT INTO bench_raw_messages (id, user_id, title, body, metadata, created_at) VALUES ($1, $2, $3, $4, $5, $6)',
          [randomUUID(), r.userId, r.title, r.body, JSON.stringify(r.metadata), new Date()],
        );
      const send = (r: Row) => service.send(r);

      // Warm both paths (connections, plans), then measure each twice, alternating, and keep the best.
      await throughput(rows(500), CONCURRENCY, raw);
      await throughput(rows(500), CONCURRENCY, send);
      const data = rows(count);
      let baseline = 0;
      let value = 0;
      for (let round = 0; round < 2; round++) {
        baseline = Math.max(baseline, await throughput(data, CONCURRENCY, raw));
        value = Math.max(value, await throughput(data, CONCURRENCY, send));
      }
      return [
        {
          name: `inbox send, database store on PostgreSQL, ${CONCURRENCY} concurrent (calls/s vs raw pg INSERT/s)`,
          value: Math.round(value),
          baseline: Math.round(baseline),
          ratio: Math.round((value / baseline) * 100) / 100,
          target: '>= 0.8',
        },
      ];
    } finally {
      await pool.end();
      await knex.destroy();
    }
  });
}

// `node dist/test/bench/inbox-store.bench.js postgres://...` runs it alone.
if (require.main === module) {
  const url = process.argv[2];
  if (!url) {
    console.error('usage: inbox-store.bench <postgres-url>');
    process.exit(2);
  }
  runInboxStoreBench(url).then(
    (result) => console.table(result),
    (err: unknown) => {
      console.error(err);
      process.exit(1);
    },
  );
}
