/**
 * Making next weeks' partitions on PostgreSQL (delivery/README.md, "Partitions"): creating a
 * partition takes an ACCESS EXCLUSIVE lock on its parent, so behind a long transaction on the table it
 * would hold every later statement on the table behind it. `ensurePartitions` gives up after its lock
 * timeout (SQLSTATE 55P03) instead; the next retention pass makes them.
 */
import type { Knex } from 'knex';
import { Client } from 'pg';
import { ensurePartitions } from '../../../services/notification/delivery/database-retention';
import { notificationMigrations } from '../../../services/notification/migrations';
import { runMigrations } from '../../../shared/storage/migrations';
import { pooledTestDatabase, type PooledTestDatabase } from '../../support/database';

let db: PooledTestDatabase;
let knex: Knex;
/** A Monday far ahead: none of its weeks has a partition yet. */
const AHEAD = new Date('2031-06-02T00:00:00Z');

beforeAll(async () => {
  db = await pooledTestDatabase('partlock');
  // The pool's statement_timeout is the default minute: what gives up here is the 2 s lock timeout.
  knex = await db.pool();
  await runMigrations(knex, notificationMigrations);
});

afterAll(async () => {
  await db?.close();
});

async function partitionsOf(week: string): Promise<string[]> {
  const { rows } = (await knex.raw(`SELECT relname FROM pg_class WHERE relname LIKE ? ORDER BY relname`, [
    `%_p${week}`,
  ])) as { rows: { relname: string }[] };
  return rows.map((r) => r.relname);
}

test('behind a transaction that reads deliveries, making partitions gives up on the lock; afterwards it makes them', async () => {
  const reader = new Client({ connectionString: db.url });
  await reader.connect();
  try {
    await reader.query('BEGIN');
    await reader.query('SELECT count(*) FROM deliveries');
    // The reader holds ACCESS SHARE until it ends: the CREATE ... PARTITION OF cannot have its lock.
    await expect(ensurePartitions(knex, AHEAD)).rejects.toMatchObject({ code: '55P03' });
    // Nothing half made: the transaction rolled back whatever it had created before the lock failed.
    expect(await partitionsOf('20310602')).toEqual([]);
  } finally {
    await reader.query('ROLLBACK');
    await reader.end();
  }
  expect(await ensurePartitions(knex, AHEAD)).toBe(9);
  expect(await partitionsOf('20310602')).toEqual([
    'deliveries_p20310602',
    'delivery_events_p20310602',
    'inbox_events_p20310602',
  ]);
  // A second pass finds them all and takes no lock.
  expect(await ensurePartitions(knex, AHEAD)).toBe(0);
});
