/**
 * Digest ingest (issue 26): events per second into open digests through DatabaseDigestBook.add on
 * real PostgreSQL (100 users, one digest key each, 16 adds in flight, pool of 8), against plain
 * INSERTs of the same event rows into a table of the same shape (`LIKE notification_digest_events
 * INCLUDING ALL`: same columns, same unique indexes) at the same concurrency on the same pool, rounds
 * alternating, in the same run. Reported (the add takes the digest's row lock, which every event of a
 * key takes in turn; a plain insert takes none).
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { Client } from 'pg';
import { notificationMigrations } from '../../services/notification/migrations';
import { CategoryConfigSchema } from '../../services/notification/notify/config';
import { DatabaseDigestBook } from '../../services/notification/notify/digest';
import { silentLogger } from '../../shared/logging/logger';
import { openDatabase } from '../../shared/storage/database';
import { runMigrations } from '../../shared/storage/migrations';
import { compareThroughput, type BenchRow } from './measure';

const IN_FLIGHT = 16;
const POOL_SIZE = 8;
const USERS = 100;
const PER_ROUND = 3000;

async function run(n: number, call: (i: number) => Promise<unknown>): Promise<number> {
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async () => {
      while (next < n) await call(next++);
    }),
  );
  return n / ((performance.now() - started) / 1000);
}

/** The digest-ingest row; `serverUrl` is any database on a PostgreSQL server (a scratch one is made). */
export async function runDigestBench(serverUrl: string): Promise<BenchRow[]> {
  const name = `digest_bench_${randomBytes(4).toString('hex')}`;
  const admin = new Client({ connectionString: serverUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  const knex = await openDatabase({ url: url.toString(), data_dir: '', pool_max: POOL_SIZE }, silentLogger());
  try {
    await runMigrations(knex, notificationMigrations);
    await knex.raw('CREATE TABLE bench_plain_digest_events (LIKE notification_digest_events INCLUDING ALL)');
    const book = new DatabaseDigestBook({
      knex,
      categories: [
        CategoryConfigSchema.parse({
          name: 'comments',
          channels: ['inbox', 'email'],
          digest: { email: { window: '1h', key: 'thread_id', max_count: 10_000 } },
        }),
      ],
    });
    const digestOf = Array.from({ length: USERS }, () => randomUUID());
    const data = (i: number) => ({ author: `user ${i % 37}`, text: `comment ${i}: nice 😀 評論 تعليق` });
    const add = (i: number) =>
      book.add({
        scope: 'bench',
        userId: `bench-user-${i % USERS}`,
        category: 'comments',
        channel: 'email',
        key: `thread-${i % USERS}`,
        notificationId: randomUUID(),
        occurredAt: new Date(),
        data: data(i),
      });
    const plain = (i: number) => {
      const json = JSON.stringify(data(i));
      return knex.raw(
        `INSERT INTO bench_plain_digest_events (digest_id, notification_id, channel, occurred_at, data, data_bytes)
         VALUES (?, ?, 'email', ?, ?::jsonb, ?)`,
        [digestOf[i % USERS], randomUUID(), new Date().toISOString(), json, Buffer.byteLength(json)],
      );
    };
    const result = await compareThroughput(
      () => run(PER_ROUND, add),
      () => run(PER_ROUND, plain),
    );
    const { rows } = await knex.raw(
      'SELECT count(*)::int AS digests, max(event_count)::int AS largest FROM notification_digests',
    );
    return [
      {
        name: `Digest ingest on PostgreSQL (${USERS} users, one key each, ${IN_FLIGHT} in flight) vs plain INSERTs of the same rows`,
        ...result,
        target: 'reported',
        unit: 'events/s',
        detail: [`${rows[0].digests} digests, the largest ${rows[0].largest} events`],
      },
    ];
  } finally {
    await knex.destroy();
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.end();
  }
}
