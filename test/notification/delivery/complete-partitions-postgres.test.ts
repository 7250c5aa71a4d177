/**
 * `delivery_complete` by (id, created_at) (migration 20261129140000; README, "Completions by
 * partition"): with the claimed record's created_at each completion probes one weekly partition;
 * without it (a replica on the previous code) the row is found by id alone, as before.
 */
import type { Knex } from 'knex';
import { Client } from 'pg';
import { DatabaseDeliveryStore } from '../../../services/notification/delivery/database-store';
import type { DeliveryRecord } from '../../../services/notification/delivery/types';
import { notificationMigrations } from '../../../services/notification/migrations';
import { runMigrations } from '../../../shared/storage/migrations';
import { pooledTestDatabase, type PooledTestDatabase } from '../../support/database';

let db: PooledTestDatabase;
let knex: Knex;
let client: Client;
const WEEKS = 5;

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Actual Loops'?: number;
  'Actual Rows'?: number;
  'Shared Hit Blocks'?: number;
  'Shared Read Blocks'?: number;
  Plans?: PlanNode[];
}

function nodes(plan: PlanNode): PlanNode[] {
  return [plan, ...(plan.Plans ?? []).flatMap(nodes)];
}

beforeAll(async () => {
  db = await pooledTestDatabase('completeparts');
  knex = await db.pool();
  await runMigrations(knex, notificationMigrations);
  await knex.raw(
    `SELECT notification_partitions_ensure((now() - interval '${7 * (WEEKS - 1)} days')::date, ${WEEKS})`,
  );
  // 2,000 final rows a week over five weeks; 200 queued ones two weeks back (created_at with
  // microseconds, as now() writes them: a JavaScript Date holds milliseconds).
  await knex.raw(`
    INSERT INTO deliveries (id, channel, backend, masked_recipient, scope, content_hash, status,
      next_attempt_at, created_at, updated_at, finished_at)
    SELECT gen_random_uuid(), 'email', 'other', '***', 's', 'h', 'sent', NULL, t, t, t
    FROM generate_series(0, ${WEEKS * 2000 - 1}) AS g,
      LATERAL (SELECT now() - (g % ${WEEKS}) * interval '7 days' - g * interval '1.000123 second' AS t) AS at`);
  await knex.raw(`
    INSERT INTO deliveries (id, channel, backend, masked_recipient, scope, content_hash, status,
      next_attempt_at, created_at, updated_at)
    SELECT gen_random_uuid(), 'email', 'cp', '***', 's', 'h', 'pending', t, t, t
    FROM generate_series(1, 200) AS g,
      LATERAL (SELECT now() - interval '14 days' - g * interval '1.234567 second' AS t) AS at`);
  await knex.raw('ANALYZE deliveries');
  client = new Client({ connectionString: db.url });
  await client.connect();
});

afterAll(async () => {
  await client?.end();
  await db?.close();
});

async function claim(store: DatabaseDeliveryStore, owner: string, limit: number): Promise<DeliveryRecord[]> {
  const records = await store.claim({
    channel: 'email',
    backend: 'cp',
    owner,
    now: new Date(),
    leaseMs: 600_000,
    limit,
  });
  expect(records).toHaveLength(limit);
  return records;
}

/** An outcome as database-outcomes.ts sends it: SENT, `created_at` when `withCreatedAt`. */
function outcome(r: DeliveryRecord, owner: string, withCreatedAt: boolean): Record<string, unknown> {
  return {
    id: r.id,
    owner,
    status: 'sent',
    attempt: JSON.stringify([
      { number: 1, startedAt: new Date().toISOString(), durationMs: 1, outcome: 'sent' },
    ]),
    next_delay_ms: null,
    at: null,
    ...(withCreatedAt ? { created_at: r.createdAt.toISOString() } : {}),
  };
}

/**
 * The generic plan of `delivery_complete`'s statement run (EXPLAIN ANALYZE, rolled back) on
 * `outcomes`: the partitions whose primary key was probed, the rows updated, the buffers read.
 */
async function runPlan(
  outcomes: Record<string, unknown>[],
): Promise<{ probed: string[]; updated: number; buffers: number }> {
  const { rows } = await client.query<{ prosrc: string; proconfig: string[] }>(
    "SELECT prosrc, proconfig FROM pg_proc WHERE proname = 'delivery_complete'",
  );
  const body = rows[0]!.prosrc;
  const sql = body
    .slice(body.indexOf('RETURN QUERY') + 'RETURN QUERY'.length, body.lastIndexOf(';'))
    .replaceAll('p_outcomes', '$1')
    .replaceAll('p_ids', '$2')
    .replaceAll('open_statuses', '$3');
  await client.query('BEGIN');
  try {
    for (const setting of rows[0]!.proconfig) {
      const eq = setting.indexOf('=');
      await client.query(`SET LOCAL ${setting.slice(0, eq)} = '${setting.slice(eq + 1)}'`);
    }
    await client.query(`PREPARE complete_probe(jsonb, uuid[], text[]) AS ${sql}`);
    const ids = `{${outcomes.map((o) => o.id as string).join(',')}}`;
    const plan = await client.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(
      `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) EXECUTE complete_probe(${client.escapeLiteral(
        JSON.stringify(outcomes),
      )}, ${client.escapeLiteral(ids)}, '{pending,retrying}')`,
    );
    const root = plan.rows[0]!['QUERY PLAN'][0].Plan;
    const all = nodes(root);
    const probed = all
      .filter((n) => n['Index Name'] && (n['Actual Loops'] ?? 0) > 0 && n['Relation Name'])
      .map((n) => n['Relation Name']!);
    const named = await client.query<{ name: string; root: string }>(
      `SELECT n AS name, COALESCE(pg_partition_root(to_regclass(n))::text, n) AS root FROM unnest($1::text[]) AS n`,
      [probed],
    );
    return {
      probed: [...new Set(named.rows.filter((r) => r.root === 'deliveries').map((r) => r.name))].sort(),
      updated: root['Actual Rows'] ?? 0,
      buffers: (root['Shared Hit Blocks'] ?? 0) + (root['Shared Read Blocks'] ?? 0),
    };
  } finally {
    await client.query('ROLLBACK');
    await client.query('DEALLOCATE ALL');
  }
}

describe('delivery_complete on weekly partitions', () => {
  it('with created_at, a completion of 100 probes only their partition; without, every partition, same rows', async () => {
    const store = new DatabaseDeliveryStore(knex);
    const records = await claim(store, 'plan', 100);
    const { rows: parts } = await client.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_inherits WHERE inhparent = 'deliveries'::regclass`,
    );
    expect(parts[0]!.n).toBeGreaterThanOrEqual(WEEKS + 1);
    const { rows: home } = await client.query<{ part: string }>(
      'SELECT DISTINCT tableoid::regclass::text AS part FROM deliveries WHERE id = ANY($1::uuid[])',
      [records.map((r) => r.id)],
    );
    expect(home).toHaveLength(1);

    const pruned = await runPlan(records.map((r) => outcome(r, 'plan', true)));
    const byId = await runPlan(records.map((r) => outcome(r, 'plan', false)));
    expect(pruned.updated).toBe(100);
    expect(pruned.probed).toEqual([home[0]!.part]);
    expect(byId.updated).toBe(100);
    expect(byId.probed).toHaveLength(parts[0]!.n);
    expect(pruned.buffers).toBeLessThan(byId.buffers);
    // The figure for the README (buffers are counts, not timings).
    console.log(
      `completion of 100 on ${parts[0]!.n} partitions: ${pruned.buffers} buffers with created_at, ` +
        `${byId.buffers} by id alone (ratio ${(pruned.buffers / byId.buffers).toFixed(3)})`,
    );
  });

  it('the store sends the claimed created_at, and the row is found although the database holds microseconds', async () => {
    const store = new DatabaseDeliveryStore(knex);
    const [record] = await claim(store, 'store', 1);
    const { rows } = await client.query<{ us: string }>(
      "SELECT to_char(created_at, 'US') AS us FROM deliveries WHERE id = $1",
      [record!.id],
    );
    expect(Number(rows[0]!.us) % 1000).not.toBe(0);
    const sent: { sql: string; bindings: unknown[] }[] = [];
    const listener = (q: { sql: string; bindings?: unknown[] }) =>
      sent.push({ sql: q.sql, bindings: q.bindings ?? [] });
    knex.on('query', listener);
    const result = {
      attempt: { number: 1, startedAt: new Date(), durationMs: 1, outcome: 'sent' as const },
      status: 'sent' as const,
      nextAttemptAt: null,
      now: new Date(),
      createdAt: record!.createdAt,
    };
    const done = await store.completeAttempt(record!.id, 'store', result);
    knex.removeListener('query', listener);
    expect(done?.status).toBe('sent');
    expect(done?.createdAt).toEqual(record!.createdAt);
    const call = sent.find((s) => s.sql.includes('delivery_complete('))!;
    const input = JSON.parse(call.bindings[0] as string) as { created_at: string }[];
    expect(input[0]!.created_at).toBe(record!.createdAt.toISOString());
    // Final now: the same outcome again changes nothing.
    expect(await store.completeAttempt(record!.id, 'store', result)).toBeNull();
  });

  it('outcomes without created_at (a replica on the previous code) and mixed batches are still applied, lease rules kept', async () => {
    const store = new DatabaseDeliveryStore(knex);
    const [a, b, c] = await claim(store, 'old', 3);
    const done = await store.completeAttempt(a!.id, 'old', {
      attempt: { number: 1, startedAt: new Date(), durationMs: 1, outcome: 'sent' },
      status: 'sent',
      nextAttemptAt: null,
      now: new Date(),
    });
    expect(done?.status).toBe('sent');
    // One call as the previous code makes it: b without created_at, c with, plus a wrong owner.
    const batch = [outcome(b!, 'old', false), outcome(c!, 'old', true), { ...outcome(a!, 'thief', false) }];
    const { rows } = (await knex.raw('SELECT id, status FROM delivery_complete(?::jsonb, ?::uuid[])', [
      JSON.stringify(batch),
      [b!.id, c!.id, a!.id],
    ])) as { rows: { id: string; status: string }[] };
    expect(rows.map((r) => r.id).sort()).toEqual([b!.id, c!.id].sort());
    expect(rows.every((r) => r.status === 'sent')).toBe(true);
    // A lease held by someone else: by id alone or by (id, created_at), nothing changes.
    const [d] = await claim(store, 'owner', 1);
    for (const withCreatedAt of [false, true]) {
      const none = (await knex.raw('SELECT id FROM delivery_complete(?::jsonb, ?::uuid[])', [
        JSON.stringify([outcome(d!, 'intruder', withCreatedAt)]),
        [d!.id],
      ])) as { rows: unknown[] };
      expect(none.rows).toHaveLength(0);
    }
    const { rows: events } = await client.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM delivery_events WHERE delivery_id = ANY($1::uuid[]) AND status = $2',
      [[a!.id, b!.id, c!.id, d!.id], 'sent'],
    );
    expect(events[0]!.n).toBe(3);
  });
  it('defer with the claimed created_at updates the row, and its plan reads only that partition', async () => {
    const store = new DatabaseDeliveryStore(knex);
    const [r, other] = await claim(store, 'defer', 2);
    const now = new Date();
    const request = { nextAttemptAt: new Date(now.getTime() + 60_000), now, createdAt: r!.createdAt };
    const sent: { sql: string; bindings: unknown[] }[] = [];
    const listener = (q: { sql: string; bindings?: unknown[] }) =>
      sent.push({ sql: q.sql, bindings: q.bindings ?? [] });
    knex.on('query', listener);
    expect(await store.defer(r!.id, 'defer', request)).toBe(true);
    knex.removeListener('query', listener);
    // Lease gone: a second defer by the same owner finds nothing.
    expect(await store.defer(r!.id, 'defer', request)).toBe(false);
    // Without created_at (by id alone) it still works; another owner's defer does not.
    expect(await store.defer(other!.id, 'intruder', { ...request, createdAt: other!.createdAt })).toBe(false);
    expect(await store.defer(other!.id, 'defer', { nextAttemptAt: request.nextAttemptAt, now })).toBe(true);
    const { rows } = await client.query<{ lease_owner: string | null }>(
      'SELECT lease_owner FROM deliveries WHERE id = ANY($1::uuid[])',
      [[r!.id, other!.id]],
    );
    expect(rows.map((x) => x.lease_owner)).toEqual([null, null]);
    let n = 0;
    const sql = sent[0]!.sql.replace(/\?/g, () => `$${++n}`);
    const plan = await client.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(
      `EXPLAIN (FORMAT JSON) ${sql}`,
      sent[0]!.bindings,
    );
    const scanned = nodes(plan.rows[0]!['QUERY PLAN'][0].Plan)
      .map((x) => x['Relation Name'])
      .filter((x): x is string => x !== undefined && x.startsWith('deliveries_p'));
    expect(new Set(scanned).size).toBe(1);
  });
});
