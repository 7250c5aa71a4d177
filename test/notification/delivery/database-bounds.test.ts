/**
 * Bounds (issue 23) on real PostgreSQL: the group-commit queue in front of the database holds at most
 * `delivery.max_pending_submits` submits (one more is RESOURCE_EXHAUSTED, so a slow database cannot
 * pile payloads up in memory), and a poll costs a few index pages whatever the backlog: after an
 * outage with 100,000 queued rows, `dueBackends` walks the queue's (channel, backend) pairs through
 * the index instead of reading every due row.
 */
import type { Knex } from 'knex';
import { Client } from 'pg';
import { DatabaseDeliveryStore } from '../../../services/notification/delivery/database-store';
import { notificationMigrations } from '../../../services/notification/migrations';
import { ResourceExhaustedError } from '../../../shared/errors';
import { silentLogger } from '../../../shared/logging/logger';
import { openDatabase } from '../../../shared/storage/database';
import { runMigrations } from '../../../shared/storage/migrations';
import { createTestDatabase } from '../../support/database';
import { ScriptedDriver, buildPipeline, newBackend, waitFor } from './support';

let db: { url: string; drop(): Promise<void> };
let knex: Knex;

beforeAll(async () => {
  db = await createTestDatabase('deliverybounds');
  knex = await openDatabase({ url: db.url, data_dir: '', pool_max: 4 }, silentLogger());
  await runMigrations(knex, notificationMigrations);
});

afterAll(async () => {
  await knex?.destroy();
  await db?.drop();
});

interface PlanNode {
  'Shared Hit Blocks': number;
  'Shared Read Blocks': number;
}

test('when the database is stalled, submits beyond max_pending_submits are RESOURCE_EXHAUSTED at once and the ones within commit when it resumes', async () => {
  const driver = new ScriptedDriver(newBackend('bound'), 'sms');
  const { pipeline } = buildPipeline(new DatabaseDeliveryStore(knex, { maxPendingCreates: 5 }), [driver]);
  const submit = (i: number) =>
    pipeline.submit({
      channel: 'sms',
      recipient: `+1555000${String(i).padStart(4, '0')}`,
      payload: { text: `m${i}` },
      scope: 's',
    });
  // A paused database: another session holds the table, every INSERT waits behind it.
  const holder = new Client({ connectionString: db.url });
  await holder.connect();
  try {
    await holder.query('BEGIN');
    await holder.query('LOCK TABLE deliveries IN ACCESS EXCLUSIVE MODE');
    const settled: string[] = [];
    const waiting = Array.from({ length: 5 }, (_, i) =>
      submit(i).then(
        (r) => (settled.push('ok'), r),
        (err: unknown) => (settled.push('failed'), Promise.reject(err)),
      ),
    );
    // Let the five reach the store (suppression-free: each is queued within a turn or two).
    await new Promise((resolve) => setImmediate(resolve));
    await new Promise((resolve) => setImmediate(resolve));
    const over = await submit(5).then(
      () => null,
      (err: unknown) => err,
    );
    expect(over).toBeInstanceOf(ResourceExhaustedError);
    expect((over as ResourceExhaustedError).code).toBe('RESOURCE_EXHAUSTED');
    expect(settled).toEqual([]);

    await holder.query('ROLLBACK');
    const results = await Promise.all(waiting);
    expect(results.every((r) => r.created)).toBe(true);
  } finally {
    await holder.end();
  }
  // Room again once they committed.
  expect((await submit(6)).created).toBe(true);
  await waitFor(() => true);
  const listed = await pipeline.list({ backend: driver.name }, '', 100);
  expect(listed.deliveries).toHaveLength(6);
});

test('after an outage with 100,000 queued deliveries, one poll (dueBackends) reads a few index pages and finds every backend with due work', async () => {
  await knex.raw(`
    INSERT INTO deliveries (id, channel, backend, masked_recipient, scope, content_hash, status,
      next_attempt_at, created_at, updated_at)
    SELECT gen_random_uuid(),
      CASE WHEN g % 10 < 6 THEN 'email' WHEN g % 10 < 9 THEN 'sms' ELSE 'push' END,
      CASE WHEN g % 10 < 6 THEN 'outage-mail' WHEN g % 10 < 9 THEN 'outage-sms' ELSE 'outage-later' END,
      '***', 's', 'h', CASE WHEN g % 2 = 0 THEN 'pending' ELSE 'retrying' END,
      CASE WHEN g % 10 < 9 THEN now() - interval '1 hour' ELSE now() + interval '1 hour' END, now(), now()
    FROM generate_series(1, 100000) AS g`);
  await knex.raw('ANALYZE deliveries');
  const store = new DatabaseDeliveryStore(knex);
  const captured: { sql: string; bindings: unknown[] }[] = [];
  const listener = (q: { sql: string; bindings?: unknown[] }) =>
    captured.push({ sql: q.sql, bindings: q.bindings ?? [] });
  knex.on('query', listener);
  const due = await store.dueBackends(new Date());
  knex.removeListener('query', listener);
  expect(
    due
      .map((d) => `${d.channel}/${d.backend}`)
      .filter((pair) => pair.includes('/outage-'))
      .sort(),
  ).toEqual(['email/outage-mail', 'sms/outage-sms']);
  expect(captured).toHaveLength(1);

  const client = new Client({ connectionString: db.url });
  await client.connect();
  try {
    // The statement as the store sent it, its `?` bindings as $n parameters.
    let n = 0;
    const sql = captured[0]!.sql.replace(/\?/g, () => `$${++n}`);
    const { rows } = await client.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(
      `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${sql}`,
      captured[0]!.bindings,
    );
    const plan = rows[0]!['QUERY PLAN'][0].Plan;
    const pages = plan['Shared Hit Blocks'] + plan['Shared Read Blocks'];
    // Reading the 90,000 due rows (or their index entries) is thousands of pages. deliveries is
    // partitioned by week (migration 20261129100000): each step of the walk probes every partition's
    // queued-rows index, so the bound is per partition (100 for the unpartitioned table).
    const { rows: parts } = await client.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_inherits WHERE inhparent = 'deliveries'::regclass`,
    );
    expect(pages).toBeLessThan(40 * parts[0]!.n);
  } finally {
    await client.end();
  }
});
