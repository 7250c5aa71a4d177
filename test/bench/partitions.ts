/**
 * `npm run capacity -- partitions [rows]` (issue 30, "Partitions for what grows with time"): on a
 * throwaway PostgreSQL, `rows` deliveries (5,000,000 by default) with one event each, made with
 * generate_series over 35 days, in the table the migrations before 20261129100000 leave ("before")
 * and, in a copy of that database, after 20261129100000 ("after", the migration itself timed).
 * Then, interleaved, claims of 10 (`delivery_claim`), and one retention pass on each (retention 30
 * days, batches of 1,000, as the DeliveryRetention job runs it: batch after batch until done).
 * Prints ratios after/before; deploy/capacity.md, "Partitions", has a run.
 */
import { performance } from 'node:perf_hooks';
import knexFactory, { type Knex } from 'knex';
import { runMigrations } from '../../shared/storage/migrations';
import { notificationMigrations } from '../../services/notification/migrations';
import { purgeExpired } from '../../services/notification/delivery/database-retention';
import { startCluster } from '../support/postgres-cluster';
import { median } from './measure';
import { dropIndexes } from './replicas';

const DAY_MS = 24 * 60 * 60 * 1000;
const PARTITIONS = '20261129100000_partitions';
const RETENTION_DAYS = 30;
const BATCH = 1000;
const QUEUED = 20_000;

/** What the bench reports. */
export interface PartitionsResult {
  rows: number;
  fillSeconds: number;
  migrationSeconds: number;
  claimMs: { before: number; after: number };
  retention: {
    before: { seconds: number; deleted: number; walBytes: number };
    after: { seconds: number; deleted: number; walBytes: number };
  };
}

/** The retention statement of before the migration (database-retention.ts at 012c0eb), one batch. */
async function purgeUnpartitioned(knex: Knex, deleteBefore: Date, eraseBefore: Date, now: Date) {
  const deleted = (
    (await knex.raw(
      `WITH gone AS (DELETE FROM deliveries WHERE id IN (
         SELECT id FROM deliveries WHERE finished_at < ? ORDER BY finished_at LIMIT ?)
       RETURNING id),
       ev AS (DELETE FROM delivery_events e USING gone WHERE e.delivery_id = gone.id
         RETURNING e.scope, e.seq),
       hz AS (INSERT INTO delivery_event_horizon (scope, purged_through)
         SELECT scope, max(seq) FROM ev WHERE seq IS NOT NULL GROUP BY scope
         ON CONFLICT (scope) DO UPDATE
           SET purged_through = GREATEST(delivery_event_horizon.purged_through, EXCLUDED.purged_through))
       SELECT id FROM gone`,
      [deleteBefore.toISOString(), BATCH],
    )) as { rows: unknown[] }
  ).rows.length;
  const erased = (
    (await knex.raw(
      `UPDATE deliveries SET payload = NULL, recipient = NULL, content_erased_at = ?
       WHERE id IN (SELECT id FROM deliveries WHERE finished_at < ? AND content_erased_at IS NULL
         ORDER BY finished_at LIMIT ?) RETURNING id`,
      [now.toISOString(), eraseBefore.toISOString(), BATCH],
    )) as { rows: unknown[] }
  ).rows.length;
  return { deleted, erased };
}

/** fsync and full_page_writes on (production) or off (for a fill only), reloaded, then a checkpoint. */
async function durability(admin: Knex, on: boolean): Promise<void> {
  for (const setting of ['fsync', 'full_page_writes'])
    await admin.raw(on ? `ALTER SYSTEM RESET ${setting}` : `ALTER SYSTEM SET ${setting} = off`);
  await admin.raw('SELECT pg_reload_conf()');
  // A backend takes the reload at its next statement: wait until this one has, then checkpoint.
  const want = on ? 'on' : 'off';
  for (let i = 0; i < 100; i++) {
    const { rows } = (await admin.raw(`SELECT setting FROM pg_settings WHERE name = 'fsync'`)) as {
      rows: { setting: string }[];
    };
    if (rows[0]!.setting === want) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  await admin.raw('CHECKPOINT');
}

/**
 * Fills the deliveries (and one event each); `indexed` runs after the rows are in and before the
 * VACUUM ANALYZE (the bench builds there the indexes it dropped before the fill).
 */
export async function fill(knex: Knex, rows: number, indexed?: () => Promise<void>): Promise<void> {
  // Spread over 35 days up to now; the newest QUEUED rows are due and pending, the rest sent.
  await knex.raw(
    `INSERT INTO deliveries (id, channel, backend, recipient, masked_recipient, scope, idempotency_key,
       content_hash, payload, status, attempts, next_attempt_at, provider_reference, created_at,
       updated_at, sent_at, finished_at, content_erased_at, user_id, attempts_started)
     SELECT gen_random_uuid(), 'email', 'smtp', CASE WHEN t.old THEN NULL ELSE 'user' || g || '@example.com' END,
       'u***@example.com', 'bench', CASE WHEN g % 2 = 0 THEN 'k' || g END, 'h',
       CASE WHEN t.old THEN NULL ELSE '{"subject":"hello","text":"hello there"}'::jsonb END,
       CASE WHEN t.queued THEN 'pending' ELSE 'sent' END,
       CASE WHEN t.queued THEN '[]'::jsonb ELSE '[{"at":"x","outcome":"sent"}]'::jsonb END,
       CASE WHEN t.queued THEN t.at END, CASE WHEN t.queued THEN NULL ELSE 'ref' || g END,
       t.at, t.at, CASE WHEN t.queued THEN NULL ELSE t.at + interval '1 minute' END,
       CASE WHEN t.queued THEN NULL ELSE t.at + interval '1 minute' END,
       CASE WHEN t.old THEN t.at + interval '1 day' END,
       CASE WHEN g % 10 = 0 THEN 'user' || (g % 1000) END, CASE WHEN t.queued THEN 0 ELSE 1 END
     FROM generate_series(1, ?::int) AS g
     CROSS JOIN LATERAL (SELECT
       now() - interval '35 days' + (g * (interval '35 days' - interval '10 minutes') / ?::int) AS at,
       g > ?::int - ?::int AS queued,
       g < ?::int * 30 / 35 AS old) AS t`,
    [rows, rows, rows, QUEUED, rows],
  );
  await knex.raw(
    `INSERT INTO delivery_events (seq, delivery_id, scope, channel, backend, status, provider_reference, occurred_at)
     SELECT row_number() OVER (ORDER BY finished_at), id, scope, channel, backend, status, provider_reference,
       finished_at FROM deliveries WHERE finished_at IS NOT NULL`,
  );
  await knex.raw('UPDATE delivery_event_counter SET last_seq = (SELECT max(seq) FROM delivery_events)');
  if (indexed) await indexed();
  await knex.raw('VACUUM ANALYZE deliveries');
  await knex.raw('VACUUM ANALYZE delivery_events');
}

async function walLsn(knex: Knex): Promise<bigint> {
  const { rows } = (await knex.raw(`SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::text AS lsn`)) as {
    rows: { lsn: string }[];
  };
  return BigInt(rows[0]!.lsn.split('.')[0]!);
}

/** Claims of 10 rows, `n` of them; the median ms per claim (the leased rows stay leased). */
async function claims(knex: Knex, n: number, owner: string): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < n; i++) {
    const start = performance.now();
    const { rows } = (await knex.raw(
      `SELECT id FROM delivery_claim('email', 'smtp', ?, NULL, interval '1 hour', 10)`,
      [owner],
    )) as { rows: unknown[] };
    times.push(performance.now() - start);
    if (rows.length !== 10) throw new Error(`partitions: a claim returned ${rows.length} rows`);
  }
  return median(times);
}

async function retentionPass(
  knex: Knex,
  batch: (now: Date, eraseBefore: Date, deleteBefore: Date) => Promise<{ deleted: number; erased: number }>,
) {
  const now = new Date();
  const deleteBefore = new Date(now.getTime() - RETENTION_DAYS * DAY_MS);
  const eraseBefore = new Date(now.getTime() - 7 * DAY_MS);
  const wal = await walLsn(knex);
  const start = performance.now();
  let deleted = 0;
  for (;;) {
    const r = await batch(now, eraseBefore, deleteBefore);
    deleted += r.deleted;
    if (r.deleted < BATCH && r.erased < BATCH) break;
  }
  return {
    seconds: (performance.now() - start) / 1000,
    deleted,
    walBytes: Number((await walLsn(knex)) - wal),
  };
}

/** Runs the bench on a throwaway cluster. */
export async function runPartitions(rows = 5_000_000): Promise<PartitionsResult> {
  const cluster = await startCluster({ durable: true, settings: { max_wal_size: '4GB' } });
  const open = (db: string) =>
    knexFactory({
      client: 'pg',
      connection: cluster.url.replace(/\/postgres$/, `/${db}`),
      pool: { min: 1, max: 1 },
    });
  const admin = open('postgres');
  let before: Knex | undefined;
  let after: Knex | undefined;
  try {
    await admin.raw('CREATE DATABASE parts_before');
    before = open('parts_before');
    await runMigrations(
      before,
      notificationMigrations.filter((m) => m.name < PARTITIONS),
    );
    let start = performance.now();
    // The fill alone runs without fsync and full-page writes (both reloadable), its indexes built
    // after the rows are in; production durability is back, and checkpointed, before anything is
    // measured. The 5,000,000-row fill took 874 s with durability on and the indexes in place.
    await durability(admin, false);
    const indexes = [
      ...(await dropIndexes(before, 'deliveries')),
      ...(await dropIndexes(before, 'delivery_events')),
    ];
    await fill(before, rows, async () => {
      for (const def of indexes) await before!.raw(def);
    });
    await durability(admin, true);
    const fillSeconds = (performance.now() - start) / 1000;
    await before.destroy();
    await admin.raw('CREATE DATABASE parts_after TEMPLATE parts_before');
    before = open('parts_before');
    after = open('parts_after');
    start = performance.now();
    await runMigrations(after, notificationMigrations);
    const migrationSeconds = (performance.now() - start) / 1000;

    // Interleaved rounds of claims; the best median of the rounds on each side.
    const round = { before: [] as number[], after: [] as number[] };
    for (let r = 0; r < 5; r++) {
      round.before.push(await claims(before, 50, `b${r}`));
      round.after.push(await claims(after, 50, `a${r}`));
    }
    const retentionBefore = await retentionPass(before, (now, erase, del) =>
      purgeUnpartitioned(before!, del, erase, now),
    );
    const retentionAfter = await retentionPass(after, (now, eraseBefore, deleteBefore) =>
      purgeExpired(after!, { now, eraseBefore, deleteBefore, batchSize: BATCH }),
    );
    return {
      rows,
      fillSeconds,
      migrationSeconds,
      claimMs: { before: Math.min(...round.before), after: Math.min(...round.after) },
      retention: { before: retentionBefore, after: retentionAfter },
    };
  } finally {
    await before?.destroy();
    await after?.destroy();
    await admin.destroy();
    cluster.stop();
  }
}

/** Prints the result as the table deploy/capacity.md quotes. */
export function printPartitions(r: PartitionsResult): void {
  const f = (n: number, d = 2) => n.toFixed(d);
  console.log(`partitions: ${r.rows} deliveries (+1 event each), filled in ${f(r.fillSeconds, 0)} s`);
  console.log(`migration 20261129100000 on them: ${f(r.migrationSeconds, 1)} s`);
  console.table([
    {
      measure: 'claim of 10 (ms, best median of 5x50)',
      before: f(r.claimMs.before, 3),
      after: f(r.claimMs.after, 3),
      'after/before': f(r.claimMs.after / r.claimMs.before),
    },
    {
      measure: 'retention pass (s)',
      before: f(r.retention.before.seconds),
      after: f(r.retention.after.seconds),
      'after/before': f(r.retention.after.seconds / r.retention.before.seconds, 3),
    },
    {
      measure: 'retention rows deleted',
      before: String(r.retention.before.deleted),
      after: String(r.retention.after.deleted),
      'after/before': f(r.retention.after.deleted / r.retention.before.deleted, 3),
    },
    {
      measure: 'retention WAL (MB)',
      before: f(r.retention.before.walBytes / 1e6, 1),
      after: f(r.retention.after.walBytes / 1e6, 1),
      'after/before': f(r.retention.after.walBytes / r.retention.before.walBytes, 3),
    },
  ]);
}

if (require.main === module) {
  runPartitions(process.argv[2] ? Number(process.argv[2]) : undefined).then(printPartitions, (err) => {
    console.error(err);
    process.exit(1);
  });
}
