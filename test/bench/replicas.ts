/**
 * `npm run capacity -- replicas` (issue 30, "A capacity model, measured"): what many replicas on one
 * PostgreSQL cost, measured on a throwaway cluster with production durability and
 * pg_stat_statements. Three parts (`replicas:sim,due,sequencer` picks; all by default):
 *
 * - sim: N = 1, 2, 4, 8, 16 replicas claim a backlog of REPLICA_BACKLOG (default 20,000) due
 *   deliveries over 4 backends (claim-sim.ts: each replica its own pool, store and owner, the public
 *   store API, a stand-in send that completes at once). Per N: deliveries/s (and its ratio to N = 1
 *   in the same run), claims that came back empty or short, statements and PostgreSQL CPU-ms per
 *   delivery, lock waits (pg_stat_activity sampled every 10 ms), dead tuples, HOT updates and the
 *   growth of the claim index `deliveries_due_idx`; and it throws unless every delivery was claimed
 *   and completed exactly once. The replicas are stores in this one process, not processes: the
 *   machine has two cores, so N Node processes would only time-slice the same cores and add their
 *   start-up; PostgreSQL sees the same thing either way (N pools, N owners, N claim loops), and what
 *   is measured is PostgreSQL's side. This process's CPU per delivery is printed too.
 *   Rounds alternate the order of N (1..16, then 16..1); each N's figures are the median.
 * - due (on a cluster without fsync: it only reads): `dueBackends` on 1,000,000 queued rows over 50
 *   backends against the same on 20,000 rows (the baseline, same run, interleaved): time, shared
 *   buffers and PostgreSQL CPU per call, with every row due, with none due (a backlog of retries
 *   scheduled later), and with 20 due rows leased at the head of each backend (1,000 attempts in
 *   flight in all, stepped over by the poll). Each state and size is a database of its own, filled
 *   by generate_series with the indexes built after the rows (fillQueue).
 * - sequencer: N = 1, 2, 4, 8, 16 writers (each its own pool and store) create deliveries (16 in
 *   flight each); each store's sequencer numbers the events under the one advisory lock
 *   (`delivery_events_sequence`, migrations 20261125000000 and 20261130200000). Events numbered per
 *   second, sequencer passes and the shared buffers each touched, advisory-lock waits sampled; it
 *   throws unless the numbering is gap-free and complete. REPLICA_SEQUENCER_HISTORY=n puts n events
 *   in the log first, numbered by the sequencer (a log with history, not vacuumed).
 *
 * Prints tables and writes test-artifacts/capacity-replicas.json.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Knex } from 'knex';
import { Client } from 'pg';
import { DatabaseDeliveryStore } from '../../services/notification/delivery/database-store';
import { notificationMigrations } from '../../services/notification/migrations';
import { silentLogger } from '../../shared/logging/logger';
import { openDatabase } from '../../shared/storage/database';
import { runMigrations } from '../../shared/storage/migrations';
import { startCluster } from '../support/postgres-cluster';
import { sendAll } from '../support/send-all';
import { backlog, claimAllOnce, exactlyOnceProblems, seed } from './claim-sim';
import { cpuMark, processTreeSource, selfSource } from './cpu-accounting';
import { median } from './measure';

const REPLICAS = [1, 2, 4, 8, 16];
const BACKLOG = Number(process.env.REPLICA_BACKLOG ?? 20_000);
const ROUNDS = Number(process.env.REPLICA_ROUNDS ?? 2);
const CLAIM_LIMIT = Number(process.env.REPLICA_CLAIM_LIMIT ?? 64);
const SIM_BACKENDS = ['apns-0', 'apns-1', 'apns-2', 'apns-3'];
const POOL_MAX = 4;
const LARGE_BACKLOG = Number(process.env.REPLICA_LARGE_BACKLOG ?? 1_000_000);
const SMALL_BACKLOG = 20_000;
const DUE_BACKENDS = 50;
/**
 * Leased due rows per backend in the "attempts in flight" case (default 20: 16 replicas x 64 slots
 * ~ 1,000 in all over the 50 backends; REPLICA_LEASED_PER_BACKEND for more in flight per backend).
 */
const LEASED_PER_BACKEND = Number(process.env.REPLICA_LEASED_PER_BACKEND ?? 20);
const SEQUENCER_EVENTS = Number(process.env.REPLICA_SEQUENCER_EVENTS ?? 8_000);
/**
 * Events already numbered in the log before the writers start (default none): the sequencer's cost
 * on a log that has history (REPLICA_SEQUENCER_HISTORY=50000, say) against an empty one.
 */
const SEQUENCER_HISTORY = Number(process.env.REPLICA_SEQUENCER_HISTORY ?? 0);
const PARTS = ['sim', 'due', 'sequencer'] as const;
type Part = (typeof PARTS)[number];

/** One N of the simulation (medians over the rounds). */
export interface ReplicaSimRow {
  replicas: number;
  deliveries: number;
  deliveriesPerSecond: number;
  /** deliveriesPerSecond / that of N = 1 (same run). */
  ratioToOne: number;
  claims: number;
  emptyClaims: number;
  shortClaims: number;
  statementsPerDelivery: number;
  pgCpuMsPerDelivery: number;
  simulatorCpuMsPerDelivery: number;
  /**
   * Share of 10 ms samples with at least one of the run's backends waiting on a row or relation lock
   * (heavyweight, not advisory).
   */
  lockWaitSamples: number;
  /** Share of samples with a backend waiting on the event sequencer's advisory lock. */
  advisoryWaitSamples: number;
  /** Mean backends waiting on a lock (heavyweight or LWLock) per sample. */
  meanWaiting: number;
  deadTuplesAfter: number;
  hotUpdateShare: number;
  claimIndexBytesBefore: number;
  claimIndexBytesAfter: number;
  autovacuums: number;
}

export interface DueBackendsRow {
  case: string;
  rows: number;
  msPerCall: number;
  sharedBlocksPerCall: number;
  pgCpuMsPerCall: number;
  backendsFound: number;
}

export interface SequencerRow {
  writers: number;
  events: number;
  eventsPerSecond: number;
  ratioToOne: number;
  sequencerPasses: number;
  eventsPerPass: number;
  /** Shared buffers a sequencer pass touched (pg_stat_statements), on average. */
  blocksPerPass: number;
  advisoryWaitSamples: number;
  pgCpuMsPerEvent: number;
}

interface Server {
  url: string;
  pgPid: number;
  admin: Client;
  dbUrl(name: string): string;
  pool(name: string, max?: number): Promise<Knex>;
}

async function one<T = string>(client: Client, sql: string, params: unknown[] = []): Promise<T> {
  return Object.values((await client.query(sql, params)).rows[0] as object)[0] as T;
}

async function statementsIn(
  admin: Client,
  db: string,
  like?: string,
): Promise<{ calls: number; blocks: number }> {
  const { rows } = await admin.query<{ calls: string; blocks: string }>(
    `SELECT coalesce(sum(calls), 0) AS calls, coalesce(sum(shared_blks_hit + shared_blks_read), 0) AS blocks
       FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid
      WHERE d.datname = $1 AND ($2::text IS NULL OR s.query LIKE $2)`,
    [db, like ?? null],
  );
  return { calls: Number(rows[0]!.calls), blocks: Number(rows[0]!.blocks) };
}

/** Samples pg_stat_activity of `db` every 10 ms until stopped. */
function sampleWaits(
  admin: Client,
  db: string,
): { stop(): Promise<{ samples: number; lock: number; advisory: number; waiting: number }> } {
  let running = true;
  const tally = { samples: 0, lock: 0, advisory: 0, waiting: 0 };
  const loop = (async () => {
    while (running) {
      const { rows } = await admin.query<{ lock: number; advisory: number; waiting: number }>(
        `SELECT count(*) FILTER (WHERE wait_event_type = 'Lock' AND wait_event <> 'advisory')::int AS lock,
                count(*) FILTER (WHERE wait_event = 'advisory')::int AS advisory,
                count(*) FILTER (WHERE wait_event_type IN ('Lock', 'LWLock'))::int AS waiting
           FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()`,
        [db],
      );
      const r = rows[0]!;
      tally.samples++;
      if (r.lock > 0) tally.lock++;
      if (r.advisory > 0) tally.advisory++;
      tally.waiting += r.waiting;
      await sleep(10);
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return tally;
    },
  };
}

interface TableStats {
  dead: number;
  updates: number;
  hot: number;
  autovacuums: number;
  indexBytes: number;
}

async function tableStats(client: Client): Promise<TableStats> {
  // Statistics reach the shared view at most a second after the transactions: wait them in.
  await sleep(1200);
  await client.query('SELECT pg_stat_clear_snapshot()');
  const { rows } = await client.query<{ dead: string; upd: string; hot: string; av: string; idx: string }>(
    // Summed over the partitions: the partitioned parent has no storage and no counters of its own.
    `SELECT coalesce(sum(s.n_dead_tup), 0) AS dead, coalesce(sum(s.n_tup_upd), 0) AS upd,
            coalesce(sum(s.n_tup_hot_upd), 0) AS hot, coalesce(sum(s.autovacuum_count), 0) AS av,
            (SELECT coalesce(sum(pg_relation_size(t.relid)), 0) FROM pg_partition_tree('deliveries_due_idx') t) AS idx
       FROM pg_partition_tree('deliveries') p JOIN pg_stat_user_tables s ON s.relid = p.relid
      WHERE p.isleaf`,
  );
  const r = rows[0]!;
  return {
    dead: Number(r.dead),
    updates: Number(r.upd),
    hot: Number(r.hot),
    autovacuums: Number(r.av),
    indexBytes: Number(r.idx),
  };
}

async function openServer(durable = true): Promise<{ server: Server; stop(): Promise<void> }> {
  const cluster = await startCluster({
    durable,
    settings: { shared_preload_libraries: 'pg_stat_statements', 'pg_stat_statements.track': 'all' },
  });
  const admin = new Client({ connectionString: cluster.url });
  await admin.connect();
  await admin.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
  const dir = await one<string>(admin, "SELECT setting FROM pg_settings WHERE name = 'data_directory'");
  const pgPid = Number(readFileSync(join(dir, 'postmaster.pid'), 'utf8').split('\n')[0]);
  const pools: Knex[] = [];
  const dbUrl = (name: string) => {
    const u = new URL(cluster.url);
    u.pathname = `/${name}`;
    return u.toString();
  };
  const server: Server = {
    url: cluster.url,
    pgPid,
    admin,
    dbUrl,
    async pool(name, max = POOL_MAX) {
      const knex = await openDatabase({ url: dbUrl(name), data_dir: '', pool_max: max }, silentLogger());
      pools.push(knex);
      return knex;
    },
  };
  return {
    server,
    async stop() {
      for (const k of pools) await k.destroy().catch(() => undefined);
      await admin.end();
      cluster.stop();
    },
  };
}

/** Creates `name` migrated (and, with `fill`, filled) with no connection left open on it. */
async function templateDatabase(
  server: Server,
  name: string,
  fill?: (knex: Knex) => Promise<void>,
): Promise<void> {
  await server.admin.query(`CREATE DATABASE ${name}`);
  const knex = await openDatabase(
    { url: server.dbUrl(name), data_dir: '', pool_max: 2, statement_timeout_ms: 0 },
    silentLogger(),
  );
  try {
    await runMigrations(knex, notificationMigrations);
    if (fill) await fill(knex);
    await knex.raw('VACUUM ANALYZE deliveries');
  } finally {
    await knex.destroy();
  }
}

async function simRound(
  server: Server,
  n: number,
  round: number,
  ids: string[],
): Promise<Omit<ReplicaSimRow, 'ratioToOne'>> {
  const db = `sim_${n}_${round}`;
  await server.admin.query(`CREATE DATABASE ${db} TEMPLATE sim_seed`);
  const probe = new Client({ connectionString: server.dbUrl(db) });
  await probe.connect();
  const pools: Knex[] = [];
  try {
    for (let i = 0; i < n; i++) pools.push(await server.pool(db));
    const stores = pools.map((k) => new DatabaseDeliveryStore(k));
    // Open each pool's connections before the clock starts.
    await Promise.all(pools.map((k) => k.raw('SELECT 1')));
    const before = await tableStats(probe);
    const statements0 = await statementsIn(server.admin, db);
    const cpu = cpuMark([processTreeSource('postgres', server.pgPid), selfSource('simulator')]);
    const waits = sampleWaits(server.admin, db);
    const result = await claimAllOnce(stores, { claimLimit: CLAIM_LIMIT, expected: ids.length });
    const sampled = await waits.stop();
    const spent = cpu.spent();
    const statements = (await statementsIn(server.admin, db)).calls - statements0.calls;
    const problems = exactlyOnceProblems(result, ids);
    const notSent = Number(
      await one(
        probe,
        "SELECT count(*) FROM deliveries WHERE status <> 'sent' OR jsonb_array_length(attempts) <> 1",
      ),
    );
    if (problems.length > 0 || notSent > 0) {
      throw new Error(
        `replicas: N = ${n}: not exactly once: ${notSent} rows not sent once; ${problems.slice(0, 5).join('; ')} (${problems.length} problems)`,
      );
    }
    // A backend sends its table statistics when it exits: close the replicas' pools first.
    for (const k of pools.splice(0)) await k.destroy();
    const after = await tableStats(probe);
    const sum = (f: (t: (typeof result.replicas)[number]) => number) =>
      result.replicas.reduce((s, t) => s + f(t), 0);
    const d = ids.length;
    const updates = after.updates - before.updates;
    return {
      replicas: n,
      deliveries: d,
      deliveriesPerSecond: Math.round(d / result.seconds),
      claims: sum((t) => t.claims),
      emptyClaims: sum((t) => t.emptyClaims),
      shortClaims: sum((t) => t.shortClaims),
      statementsPerDelivery: round3(statements / d),
      pgCpuMsPerDelivery: round3((spent.postgres ?? 0) / d),
      simulatorCpuMsPerDelivery: round3((spent.simulator ?? 0) / d),
      lockWaitSamples: round3(sampled.lock / Math.max(1, sampled.samples)),
      advisoryWaitSamples: round3(sampled.advisory / Math.max(1, sampled.samples)),
      meanWaiting: round3(sampled.waiting / Math.max(1, sampled.samples)),
      deadTuplesAfter: after.dead,
      hotUpdateShare: round3(updates > 0 ? (after.hot - before.hot) / updates : 0),
      claimIndexBytesBefore: before.indexBytes,
      claimIndexBytesAfter: after.indexBytes,
      autovacuums: after.autovacuums - before.autovacuums,
    };
  } finally {
    await probe.end();
    for (const k of pools) await k.destroy();
    await server.admin.query(`DROP DATABASE IF EXISTS ${db} WITH (FORCE)`);
  }
}

function round3(x: number): number {
  return Math.round(x * 1000) / 1000;
}

/** The N-replica simulation; throws unless every delivery was claimed and completed exactly once. */
export async function runReplicaSim(server: Server): Promise<ReplicaSimRow[]> {
  const deliveries = backlog(BACKLOG, SIM_BACKENDS);
  await templateDatabase(server, 'sim_seed', (knex) =>
    seed(new DatabaseDeliveryStore(knex), deliveries, 1000),
  );
  const ids = deliveries.map((d) => d.id);
  const byN = new Map<number, Omit<ReplicaSimRow, 'ratioToOne'>[]>();
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? REPLICAS : [...REPLICAS].reverse();
    for (const n of order) {
      const row = await simRound(server, n, round, ids);
      process.stdout.write(`  sim round ${round} ${JSON.stringify(row)}\n`);
      byN.set(n, [...(byN.get(n) ?? []), row]);
    }
  }
  const med = (
    rows: Omit<ReplicaSimRow, 'ratioToOne'>[],
    f: (r: Omit<ReplicaSimRow, 'ratioToOne'>) => number,
  ) => median(rows.map(f));
  const table = REPLICAS.map((n) => {
    const rows = byN.get(n)!;
    const m = (f: (r: Omit<ReplicaSimRow, 'ratioToOne'>) => number) => round3(med(rows, f));
    return {
      replicas: n,
      deliveries: BACKLOG,
      deliveriesPerSecond: m((r) => r.deliveriesPerSecond),
      ratioToOne: 0,
      claims: m((r) => r.claims),
      emptyClaims: m((r) => r.emptyClaims),
      shortClaims: m((r) => r.shortClaims),
      statementsPerDelivery: m((r) => r.statementsPerDelivery),
      pgCpuMsPerDelivery: m((r) => r.pgCpuMsPerDelivery),
      simulatorCpuMsPerDelivery: m((r) => r.simulatorCpuMsPerDelivery),
      lockWaitSamples: m((r) => r.lockWaitSamples),
      advisoryWaitSamples: m((r) => r.advisoryWaitSamples),
      meanWaiting: m((r) => r.meanWaiting),
      deadTuplesAfter: m((r) => r.deadTuplesAfter),
      hotUpdateShare: m((r) => r.hotUpdateShare),
      claimIndexBytesBefore: m((r) => r.claimIndexBytesBefore),
      claimIndexBytesAfter: m((r) => r.claimIndexBytesAfter),
      autovacuums: m((r) => r.autovacuums),
    };
  });
  const base = table[0]!.deliveriesPerSecond;
  for (const r of table) r.ratioToOne = round3(r.deliveriesPerSecond / base);
  await server.admin.query('DROP DATABASE IF EXISTS sim_seed');
  return table;
}

/** The three states of the queue `dueBackends` is measured on. */
type DueState = 'all due' | 'none due' | 'leased heads';

/**
 * Drops the indexes of `table` that back no constraint and returns their definitions (on the
 * partitioned parent: dropping it drops every partition's), so that a fill can recreate them after
 * the rows are in: one sorted build instead of a million index insertions.
 */
export async function dropIndexes(knex: Knex, table: string): Promise<string[]> {
  const { rows } = await knex.raw<{ rows: { name: string; def: string }[] }>(
    `SELECT i.indexrelid::regclass::text AS name, pg_get_indexdef(i.indexrelid) AS def
       FROM pg_index i LEFT JOIN pg_constraint c ON c.conindid = i.indexrelid
      WHERE i.indrelid = ?::regclass AND c.oid IS NULL`,
    [table],
  );
  for (const r of rows) await knex.raw(`DROP INDEX ${r.name}`);
  // `ON ONLY` (a partitioned parent's definition) would build the parent's index alone, invalid.
  return rows.map((r) => r.def.replace(' ON ONLY ', ' ON '));
}

/**
 * Fills `deliveries` with `rows` queued push deliveries over `backends` backends, in the state
 * `state` (raw SQL, one INSERT ... SELECT from generate_series per chunk of 250,000; a million
 * createBatch calls would measure the seeding, not the poll), the indexes the migrations made built
 * after the rows are in. `next_attempt_at` rises with the row number, so within a backend the rows
 * leased in the 'leased heads' state are the first in the claim order:
 * - all due: every row pending and due;
 * - none due: every row pending, due an hour from now (a backlog of retries scheduled later);
 * - leased heads: the first `LEASED_PER_BACKEND` rows of each backend due but leased (attempts in
 *   flight, stepped over by the poll), the rest due an hour from now.
 */
async function fillQueue(knex: Knex, rows: number, backends: number, state: DueState): Promise<void> {
  const indexes = await dropIndexes(knex, 'deliveries');
  const leasedRows = state === 'leased heads' ? LEASED_PER_BACKEND * backends : 0;
  const chunk = 250_000;
  for (let done = 0; done < rows; done += chunk) {
    const n = Math.min(chunk, rows - done);
    await knex.raw(
      `INSERT INTO deliveries (id, channel, backend, recipient, masked_recipient, scope, content_hash,
         payload, status, attempts, next_attempt_at, lease_owner, lease_expires_at, created_at,
         updated_at, attempts_started)
       SELECT gen_random_uuid(), 'push', 'b' || lpad((g % ?::int)::text, 2, '0'), 'token-' || g, 'tok***',
         'bench', 'h' || g, '{"title":"hello","body":"hello there"}'::jsonb, 'pending', '[]'::jsonb,
         CASE WHEN ?::boolean OR g <= ?::int THEN t.base + g * interval '1 microsecond'
              ELSE now() + interval '1 hour' + g * interval '1 microsecond' END,
         CASE WHEN g <= ?::int THEN 'someone' END,
         CASE WHEN g <= ?::int THEN now() + interval '1 hour' END,
         t.base, t.base, 0
       FROM generate_series(?::int + 1, ?::int + ?::int) AS g
       CROSS JOIN (SELECT now() - interval '1 hour' AS base) AS t`,
      [backends, state === 'all due', leasedRows, leasedRows, leasedRows, done, done, n],
    );
  }
  for (const def of indexes) await knex.raw(def);
}

async function dueCase(server: Server, db: string, label: string, calls = 30): Promise<DueBackendsRow> {
  const knex = await server.pool(db, 2);
  const store = new DatabaseDeliveryStore(knex);
  await store.dueBackends(new Date());
  const probe = new Client({ connectionString: server.dbUrl(db) });
  await probe.connect();
  const rows = Number(
    await one(probe, "SELECT count(*) FROM deliveries WHERE status IN ('pending', 'retrying')"),
  );
  await probe.end();
  const like = 'WITH RECURSIVE pairs%';
  const s0 = await statementsIn(server.admin, db, like);
  const cpu = cpuMark([processTreeSource('postgres', server.pgPid)]);
  const times: number[] = [];
  let found = 0;
  for (let i = 0; i < calls; i++) {
    const t = performance.now();
    found = (await store.dueBackends(new Date())).length;
    times.push(performance.now() - t);
  }
  const spent = cpu.spent();
  const s1 = await statementsIn(server.admin, db, like);
  return {
    case: label,
    rows,
    msPerCall: round3(median(times)),
    sharedBlocksPerCall: round3((s1.blocks - s0.blocks) / Math.max(1, s1.calls - s0.calls)),
    pgCpuMsPerCall: round3((spent.postgres ?? 0) / calls),
    backendsFound: found,
  };
}

/**
 * dueBackends on a large backlog against a small one, in three states; each (state, size) a database
 * of its own filled in that state, and every round polls all six in turn (the order reversed every
 * other round).
 */
export async function runDueBackends(server: Server): Promise<DueBackendsRow[]> {
  const states: { state: DueState; label: string }[] = [
    { state: 'all due', label: 'all due' },
    { state: 'none due', label: 'none due (all retrying later)' },
    { state: 'leased heads', label: `${LEASED_PER_BACKEND} leased per backend, rest later` },
  ];
  const dbs = states.flatMap((st, i) =>
    [SMALL_BACKLOG, LARGE_BACKLOG].map((rows) => ({ ...st, rows, db: `due_${i}_${rows}` })),
  );
  for (const d of dbs) {
    const started = performance.now();
    await templateDatabase(server, d.db, (knex) => fillQueue(knex, d.rows, DUE_BACKENDS, d.state));
    process.stdout.write(
      `  due: ${d.db} (${d.state}, ${d.rows} rows) filled in ${((performance.now() - started) / 1000).toFixed(1)} s\n`,
    );
  }
  const results: DueBackendsRow[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    for (const d of round % 2 === 0 ? dbs : [...dbs].reverse()) {
      const row = await dueCase(server, d.db, d.label);
      process.stdout.write(`  due round ${round} ${JSON.stringify(row)}\n`);
      results.push(row);
    }
  }
  // Medians per (case, rows).
  const groups = new Map<string, DueBackendsRow[]>();
  for (const r of results)
    groups.set(`${r.case}|${r.rows}`, [...(groups.get(`${r.case}|${r.rows}`) ?? []), r]);
  return [...groups.values()].map((g) => ({
    case: g[0]!.case,
    rows: g[0]!.rows,
    msPerCall: round3(median(g.map((r) => r.msPerCall))),
    sharedBlocksPerCall: round3(median(g.map((r) => r.sharedBlocksPerCall))),
    pgCpuMsPerCall: round3(median(g.map((r) => r.pgCpuMsPerCall))),
    backendsFound: g[0]!.backendsFound,
  }));
}

async function sequencerRound(
  server: Server,
  n: number,
  round: number,
): Promise<Omit<SequencerRow, 'ratioToOne'>> {
  const db = `seq_${n}_${round}`;
  await server.admin.query(`CREATE DATABASE ${db} TEMPLATE seq_empty`);
  const pools: Knex[] = [];
  const probe = new Client({ connectionString: server.dbUrl(db) });
  await probe.connect();
  try {
    for (let i = 0; i < n; i++) pools.push(await server.pool(db));
    await Promise.all(pools.map((k) => k.raw('SELECT 1')));
    const stores = pools.map((k) => new DatabaseDeliveryStore(k));
    const perWriter = Math.ceil(SEQUENCER_EVENTS / n);
    const total = perWriter * n;
    const passes0 = await statementsIn(server.admin, db, '%delivery_events_sequence%');
    const cpu = cpuMark([processTreeSource('postgres', server.pgPid)]);
    const waits = sampleWaits(server.admin, db);
    const started = performance.now();
    await Promise.all(
      stores.map((store, w) => sendAll(backlog(perWriter, [`w${w}`]), 16, (d) => store.create(d))),
    );
    const deadline = Date.now() + 300_000;
    const last = SEQUENCER_HISTORY + total;
    while (Number(await one(probe, 'SELECT last_seq FROM delivery_event_counter WHERE id = 1')) < last) {
      if (Date.now() > deadline) throw new Error(`sequencer: N = ${n}: events not all numbered in 5 minutes`);
      await sleep(5);
    }
    const seconds = (performance.now() - started) / 1000;
    const sampled = await waits.stop();
    const spent = cpu.spent();
    const passes1 = await statementsIn(server.admin, db, '%delivery_events_sequence%');
    const passes = passes1.calls - passes0.calls;
    const { rows } = await probe.query<{
      n: string;
      distinct_seq: string;
      max_seq: string;
      unnumbered: string;
    }>(
      `SELECT count(*) AS n, count(DISTINCT seq) AS distinct_seq, coalesce(max(seq), 0) AS max_seq,
              count(*) FILTER (WHERE seq IS NULL) AS unnumbered FROM delivery_events`,
    );
    const r = rows[0]!;
    if (
      Number(r.n) !== last ||
      Number(r.distinct_seq) !== last ||
      Number(r.max_seq) !== last ||
      Number(r.unnumbered) !== 0
    ) {
      throw new Error(
        `sequencer: N = ${n}: numbering not gap-free and complete: ${JSON.stringify(r)} for ${total} events after ${SEQUENCER_HISTORY}`,
      );
    }
    return {
      writers: n,
      events: total,
      eventsPerSecond: Math.round(total / seconds),
      sequencerPasses: passes,
      eventsPerPass: round3(total / Math.max(1, passes)),
      blocksPerPass: round3((passes1.blocks - passes0.blocks) / Math.max(1, passes)),
      advisoryWaitSamples: round3(sampled.advisory / Math.max(1, sampled.samples)),
      pgCpuMsPerEvent: round3((spent.postgres ?? 0) / total),
    };
  } finally {
    await probe.end();
    for (const k of pools) await k.destroy();
    await server.admin.query(`DROP DATABASE IF EXISTS ${db} WITH (FORCE)`);
  }
}

/** The event sequencer under N concurrent writers. */
export async function runSequencer(server: Server): Promise<SequencerRow[]> {
  await templateDatabase(server, 'seq_empty', async (knex) => {
    if (SEQUENCER_HISTORY === 0) return;
    // Written unnumbered and numbered by the sequencer itself, as a live log's events are, with no
    // VACUUM after (autovacuum may visit the template before it is copied).
    await knex.raw(
      `INSERT INTO delivery_events (delivery_id, scope, channel, backend, status, occurred_at)
       SELECT gen_random_uuid(), 'bench', 'push', 'old', 'sent', now() - interval '1 hour'
         FROM generate_series(1, ?::int) AS g`,
      [SEQUENCER_HISTORY],
    );
    for (;;) {
      const { rows } = await knex.raw<{ rows: { sequenced: string | null }[] }>(
        `SELECT sequenced FROM delivery_events_sequence(1000, 'bench_history')`,
      );
      if (Number(rows[0]?.sequenced ?? 0) === 0) break;
    }
  });
  const byN = new Map<number, Omit<SequencerRow, 'ratioToOne'>[]>();
  for (let round = 0; round < ROUNDS; round++) {
    for (const n of round % 2 === 0 ? REPLICAS : [...REPLICAS].reverse()) {
      const row = await sequencerRound(server, n, round);
      process.stdout.write(`  sequencer round ${round} ${JSON.stringify(row)}\n`);
      byN.set(n, [...(byN.get(n) ?? []), row]);
    }
  }
  const table = REPLICAS.map((n) => {
    const rows = byN.get(n)!;
    const m = (f: (r: Omit<SequencerRow, 'ratioToOne'>) => number) => round3(median(rows.map(f)));
    return {
      writers: n,
      events: rows[0]!.events,
      eventsPerSecond: m((r) => r.eventsPerSecond),
      ratioToOne: 0,
      sequencerPasses: m((r) => r.sequencerPasses),
      eventsPerPass: m((r) => r.eventsPerPass),
      blocksPerPass: m((r) => r.blocksPerPass),
      advisoryWaitSamples: m((r) => r.advisoryWaitSamples),
      pgCpuMsPerEvent: m((r) => r.pgCpuMsPerEvent),
    };
  });
  for (const r of table) r.ratioToOne = round3(r.eventsPerSecond / table[0]!.eventsPerSecond);
  return table;
}

/** `npm run capacity -- replicas[:parts]`: runs the parts, prints the tables, writes the JSON. */
export async function runReplicasCommand(arg: string): Promise<void> {
  const parts = (arg.includes(':') ? arg.split(':')[1]!.split(',') : [...PARTS]) as Part[];
  const unknown = parts.filter((p) => !PARTS.includes(p));
  if (unknown.length > 0)
    throw new Error(`capacity replicas: unknown parts ${unknown.join(', ')} (parts: ${PARTS.join(', ')})`);
  const { server, stop } = await openServer();
  const out: Record<string, unknown> = {};
  try {
    if (parts.includes('sim')) {
      const rows = await runReplicaSim(server);
      console.table(rows);
      out.sim = rows;
    }
    if (parts.includes('due')) {
      // A server of its own without fsync and full-page writes: the poll only reads, and seeding a
      // million rows with production durability took longer than a bench run should on this machine.
      const fast = await openServer(false);
      try {
        const rows = await runDueBackends(fast.server);
        console.table(rows);
        out.dueBackends = rows;
      } finally {
        await fast.stop();
      }
    }
    if (parts.includes('sequencer')) {
      const rows = await runSequencer(server);
      console.table(rows);
      out.sequencer = rows;
    }
  } finally {
    await stop();
  }
  const dir = join(__dirname, '../../../test-artifacts');
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'capacity-replicas.json'), `${JSON.stringify(out, null, 2)}\n`);
}
