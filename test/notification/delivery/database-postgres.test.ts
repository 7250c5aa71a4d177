/**
 * What only real PostgreSQL can show: several workers (each with its own pool, as replicas have)
 * claiming from one table with SKIP LOCKED, and a submit being visible to other connections the
 * moment it resolves.
 */
import type { Knex } from 'knex';
import { Client } from 'pg';
import { DatabaseDeliveryStore } from '../../../services/notification/delivery/database-store';
import { DeliveryPipeline } from '../../../services/notification/delivery/pipeline';
import { notificationMigrations } from '../../../services/notification/migrations';
import { runMigrations } from '../../../shared/storage/migrations';
import { pooledTestDatabase, type PooledTestDatabase } from '../../support/database';
import { ScriptedDriver, lookupOf, newBackend, testConfig, waitFor } from './support';

let db: PooledTestDatabase;
const pool = (): Promise<Knex> => db.pool();

beforeAll(async () => {
  db = await pooledTestDatabase('deliverypg');
  const knex = await pool();
  await runMigrations(knex, notificationMigrations);
});

afterAll(async () => {
  await db?.close();
});

/** A driver that yields before answering, so attempts of both workers interleave. */
class SlowishDriver extends ScriptedDriver {
  override async send(...args: Parameters<ScriptedDriver['send']>) {
    await new Promise((resolve) => setImmediate(resolve));
    return super.send(...args);
  }
}

describe('delivery pipeline on PostgreSQL', () => {
  it('when submit resolves, another connection already sees the pending record', async () => {
    const driver = new ScriptedDriver(newBackend(), 'sms');
    const pipeline = new DeliveryPipeline({
      store: new DatabaseDeliveryStore(await pool()),
      lookup: lookupOf(driver),
      config: testConfig(),
    });
    const { delivery } = await pipeline.submit({
      channel: 'sms',
      backend: driver.name,
      recipient: '+15551234567',
      payload: { text: 'hi' },
      scope: 's',
    });
    const other = new Client({ connectionString: db.url });
    await other.connect();
    try {
      const { rows } = await other.query<{ status: string; masked_recipient: string }>(
        'SELECT status, masked_recipient FROM deliveries WHERE id = $1',
        [delivery.id],
      );
      expect(rows).toEqual([{ status: 'pending', masked_recipient: '+1555****567' }]);
    } finally {
      await other.end();
    }
  });

  it('when many submits arrive at once, they are group-committed in batches bounded by count and bytes', async () => {
    const knex = await pool();
    const statements: string[] = [];
    const listener = (q: { sql: string }) => statements.push(q.sql);
    knex.on('query', listener);
    const driver = new ScriptedDriver(newBackend(), 'sms');
    const pipeline = new DeliveryPipeline({
      store: new DatabaseDeliveryStore(knex, {
        maxBatchSize: 4,
        maxBatchBytes: 1000,
        maxConcurrentBatches: 1,
      }),
      lookup: lookupOf(driver),
      config: testConfig(),
    });
    const submit = (i: number, key?: string, text = `m${i}`) =>
      pipeline.submit({
        channel: 'sms',
        backend: driver.name,
        recipient: `+1555000${String(i).padStart(4, '0')}`,
        payload: { text },
        scope: 's',
        idempotencyKey: key,
      });
    const results = await Promise.all([
      ...Array.from({ length: 10 }, (_, i) => submit(i)),
      // Bigger than maxBatchBytes: it goes in a statement of its own, and is still recorded.
      submit(10, undefined, 'x'.repeat(2000)),
      // The same key twice in one batch: one record, both callers get it.
      submit(11, 'dup'),
      submit(11, 'dup'),
    ]);
    knex.removeListener('query', listener);
    const inserts = statements.filter((sql) => sql.includes('INSERT INTO deliveries'));
    expect(inserts.length).toBeGreaterThanOrEqual(4);
    expect(inserts.length).toBeLessThan(13);
    expect(results.filter((r) => r.created)).toHaveLength(12);
    expect(results[11]!.delivery.id).toBe(results[12]!.delivery.id);
    const listed = await pipeline.list({ backend: driver.name }, '', 100);
    expect(new Set(listed.deliveries.map((d) => d.id))).toEqual(new Set(results.map((r) => r.delivery.id)));
  });

  it('when two workers on separate pools share 500 deliveries, each is sent exactly once', async () => {
    const name = newBackend('shared');
    const drivers = [new SlowishDriver(name, 'sms'), new SlowishDriver(name, 'sms')];
    const config = testConfig({ poll_interval_ms: 20, concurrency: 8 });
    const pipelines = await Promise.all(
      drivers.map(
        async (driver, i) =>
          new DeliveryPipeline({
            store: new DatabaseDeliveryStore(await pool()),
            lookup: lookupOf(driver),
            config,
            owner: `replica-${i}`,
          }),
      ),
    );
    const ids: string[] = [];
    for (let i = 0; i < 500; i++) {
      const { delivery } = await pipelines[i % 2]!.submit({
        channel: 'sms',
        backend: name,
        recipient: `+1555000${String(i).padStart(4, '0')}`,
        payload: { text: `message ${i}` },
        scope: 's',
      });
      ids.push(delivery.id);
    }
    for (const p of pipelines) p.start();
    try {
      await waitFor(() => drivers[0]!.calls.length + drivers[1]!.calls.length >= 500, '500 sends', 60000);
      await Promise.all(pipelines.map((p) => p.worker.idle()));
    } finally {
      await Promise.all(pipelines.map((p) => p.stop(new Date(Date.now() + 5000))));
    }
    const counts = new Map<string, number>();
    for (const d of drivers) for (const [id, n] of d.sendsById()) counts.set(id, (counts.get(id) ?? 0) + n);
    expect(counts.size).toBe(500);
    expect([...counts.values()].every((n) => n === 1)).toBe(true);
    expect(new Set(counts.keys())).toEqual(new Set(ids));
    const sent = await pipelines[0]!.list({ backend: name, status: 'sent' }, '', 500);
    expect(sent.deliveries).toHaveLength(500);
    // Per-process concurrency held on both replicas.
    expect(Math.max(...drivers.map((d) => d.maxActive))).toBeLessThanOrEqual(8);
    console.info(`deliveries sent per replica: ${drivers.map((d) => d.calls.length).join(' / ')}`);
  });
});

interface PlanNode {
  'Node Type': string;
  'Index Name'?: string;
  Plans?: PlanNode[];
}

function indexesIn(plan: PlanNode): string[] {
  return [...(plan['Index Name'] ? [plan['Index Name']] : []), ...(plan.Plans ?? []).flatMap(indexesIn)];
}

/**
 * A statement that runs inside a PL/pgSQL function (a plan EXPLAIN of the call cannot show): its text
 * as the database holds it, the function's parameters as $1..$n in their declared order (the order
 * the store binds them in), and the settings the function runs under (its SET clauses).
 */
async function functionStatement(
  client: Client,
  name: string,
  params: readonly string[],
): Promise<{ sql: string; settings: string[] }> {
  const { rows } = await client.query<{ prosrc: string; proconfig: string[] | null }>(
    'SELECT prosrc, proconfig FROM pg_proc WHERE proname = $1',
    [name],
  );
  const body = rows[0]!.prosrc;
  const statement = body.slice(body.indexOf('RETURN QUERY') + 'RETURN QUERY'.length, body.lastIndexOf(';'));
  return {
    sql: params.reduce((sql, param, i) => sql.replaceAll(param, `$${i + 1}`), statement),
    settings: rows[0]!.proconfig ?? [],
  };
}

/**
 * The index names in the plan PostgreSQL runs `sql` with under the function's own settings: a
 * prepared statement, so `plan_cache_mode = force_generic_plan` gives the generic plan (EXPLAIN of the
 * statement itself would plan with the bound values).
 */
async function indexesOfPlan(
  client: Client,
  statement: { sql: string; settings: string[] },
  bindings: unknown[],
): Promise<string[]> {
  await client.query('BEGIN');
  try {
    for (const setting of statement.settings) {
      const eq = setting.indexOf('=');
      await client.query(`SET LOCAL ${setting.slice(0, eq)} = '${setting.slice(eq + 1)}'`);
    }
    await client.query(`PREPARE plan_probe AS ${statement.sql}`);
    // EXECUTE takes no bind parameters: the store's bindings as literals.
    const literal = (v: unknown) =>
      v === null
        ? 'NULL'
        : client.escapeLiteral(
            Array.isArray(v) ? `{${v.join(',')}}` : v instanceof Date ? v.toISOString() : String(v),
          );
    const args = bindings.map(literal).join(', ');
    const { rows } = await client.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(
      `EXPLAIN (FORMAT JSON) EXECUTE plan_probe${args ? `(${args})` : ''}`,
    );
    // deliveries is partitioned (migration 20261129100000): each partition's index is named after
    // the partition; the name the assertions use is the partitioned table's index it belongs to.
    const names = indexesIn(rows[0]!['QUERY PLAN'][0].Plan);
    const roots = await client.query<{ name: string }>(
      `SELECT COALESCE(pg_partition_root(to_regclass(n))::text, n) AS name FROM unnest($1::text[]) AS n`,
      [names],
    );
    return [...new Set(roots.rows.map((r) => r.name))];
  } finally {
    await client.query('ROLLBACK');
    await client.query('DEALLOCATE ALL');
  }
}

const CLAIM_PARAMS = ['p_channel', 'p_backend', 'p_owner', 'p_now', 'p_lease', 'p_limit'];

describe('query plans on PostgreSQL', () => {
  it('when 20,000 deliveries are final, claiming and the queue gauges read only the queued-rows index', async () => {
    const knex = await pool();
    await knex.raw(`
      INSERT INTO deliveries (id, channel, backend, masked_recipient, scope, content_hash, status,
        next_attempt_at, created_at, updated_at, finished_at)
      SELECT gen_random_uuid(), 'email', 'plan-' || (g % 4), '***', 's', 'h',
        CASE WHEN g % 500 = 0 THEN 'pending' ELSE 'sent' END,
        CASE WHEN g % 500 = 0 THEN now() ELSE NULL END, now(), now(),
        CASE WHEN g % 500 = 0 THEN NULL ELSE now() END
      FROM generate_series(1, 20000) AS g`);
    await knex.raw('ANALYZE deliveries');
    const captured: { sql: string; bindings: unknown[] }[] = [];
    const listener = (q: { sql: string; bindings?: unknown[] }) =>
      captured.push({ sql: q.sql, bindings: q.bindings ?? [] });
    knex.on('query', listener);
    const store = new DatabaseDeliveryStore(knex);
    await store.claim({
      channel: 'email',
      backend: 'plan-1',
      owner: 'x',
      now: new Date(0),
      leaseMs: 1000,
      limit: 8,
    });
    await store.queueStats(new Date());
    knex.removeListener('query', listener);
    const client = new Client({ connectionString: db.url });
    await client.connect();
    try {
      for (const query of captured) {
        const statement = query.sql.includes('delivery_claim(')
          ? await functionStatement(client, 'delivery_claim', CLAIM_PARAMS)
          : { sql: query.sql, settings: [] };
        // The function runs its generic plan (force_generic_plan); the plain statement a custom one.
        expect(await indexesOfPlan(client, statement, query.bindings)).toContain('deliveries_due_idx');
      }
    } finally {
      await client.end();
    }
    expect(captured).toHaveLength(2);
  });

  it('recording outcomes looks up exactly their rows by primary key, not the queue, in the generic plan', async () => {
    const knex = await pool();
    // 20,000 rows, 1,000 of them queued: a plan that read the queue would show it.
    await knex.raw(`
      INSERT INTO deliveries (id, channel, backend, masked_recipient, scope, content_hash, status,
        next_attempt_at, created_at, updated_at, finished_at)
      SELECT gen_random_uuid(), 'email', 'complete-plan', '***', 's', 'h',
        CASE WHEN g % 20 = 0 THEN 'pending' ELSE 'sent' END,
        CASE WHEN g % 20 = 0 THEN now() ELSE NULL END, now(), now(),
        CASE WHEN g % 20 = 0 THEN NULL ELSE now() END
      FROM generate_series(1, 20000) AS g`);
    await knex.raw('ANALYZE deliveries');
    const store = new DatabaseDeliveryStore(knex);
    const [claimed] = await store.claim({
      channel: 'email',
      backend: 'complete-plan',
      owner: 'y',
      now: new Date(),
      leaseMs: 60_000,
      limit: 1,
    });
    expect(claimed).toBeDefined();
    const captured: { sql: string; bindings: unknown[] }[] = [];
    const listener = (q: { sql: string; bindings?: unknown[] }) =>
      captured.push({ sql: q.sql, bindings: q.bindings ?? [] });
    knex.on('query', listener);
    const done = await store.completeAttempt(claimed!.id, 'y', {
      attempt: { number: 1, startedAt: new Date(), durationMs: 1, outcome: 'sent' },
      status: 'sent',
      nextAttemptAt: null,
      now: new Date(),
    });
    knex.removeListener('query', listener);
    expect(done?.status).toBe('sent');
    expect(captured).toHaveLength(1);
    expect(captured[0]!.sql).toContain('delivery_complete(');
    const client = new Client({ connectionString: db.url });
    await client.connect();
    try {
      // `open_statuses` is the function's variable: a parameter of the plan as well.
      const statement = await functionStatement(client, 'delivery_complete', [
        'p_outcomes',
        'p_ids',
        'open_statuses',
      ]);
      expect(statement.settings).toContain('plan_cache_mode=force_generic_plan');
      const indexes = await indexesOfPlan(client, statement, [
        ...captured[0]!.bindings,
        ['pending', 'retrying'],
      ]);
      expect(indexes).toContain('deliveries_pkey');
      expect(indexes).not.toContain('deliveries_due_idx');
    } finally {
      await client.end();
    }
  });
});

/** The statements `run` sends through `knex`, with their bindings. */
async function statementsOf(
  knex: Knex,
  run: () => Promise<unknown>,
): Promise<{ sql: string; bindings: unknown[] }[]> {
  const captured: { sql: string; bindings: unknown[] }[] = [];
  const listener = (q: { sql: string; bindings?: unknown[] }) =>
    captured.push({ sql: q.sql, bindings: q.bindings ?? [] });
  knex.on('query', listener);
  try {
    await run();
  } finally {
    knex.removeListener('query', listener);
  }
  return captured;
}

describe('scans on 200,000 deliveries (issue 23, "Scans and bounds")', () => {
  // 50 caller scopes, three channels, four backends; 1% failed, 0.1% queued; the oldest 190,000
  // final rows already erased by the content retention, the newest 10,000 not yet.
  const T0 = Date.parse('2026-06-01T00:00:00Z');
  let knex: Knex;
  let client: Client;

  beforeAll(async () => {
    knex = await pool();
    await knex.raw(
      `INSERT INTO deliveries (id, channel, backend, masked_recipient, recipient, scope, content_hash,
         status, failure, payload, next_attempt_at, created_at, updated_at, finished_at, content_erased_at)
       SELECT gen_random_uuid(), (ARRAY['email', 'sms', 'push'])[1 + g % 3], 'scan-' || (g % 4), '***',
         CASE WHEN g <= 190000 THEN NULL ELSE 'r' || g END, 'scope-' || (g % 50), 'h',
         CASE WHEN g % 1000 = 1 THEN 'pending' WHEN g % 100 = 0 THEN 'failed' ELSE 'sent' END,
         CASE WHEN g % 100 = 0 THEN 'provider_rejected' END,
         CASE WHEN g <= 190000 THEN NULL ELSE '{"text":"hello"}'::jsonb END,
         CASE WHEN g % 1000 = 1 THEN t ELSE NULL END, t, t,
         CASE WHEN g % 1000 = 1 THEN NULL ELSE t END,
         CASE WHEN g <= 190000 AND g % 1000 <> 1 THEN t + interval '1 day' END
       FROM generate_series(1, 200000) AS g,
         LATERAL (SELECT to_timestamp(? / 1000.0) + g * interval '1 second' AS t) AS at`,
      [T0],
    );
    await knex.raw('ANALYZE deliveries');
    client = new Client({ connectionString: db.url });
    await client.connect();
  });

  afterAll(async () => {
    await client?.end();
  });

  it('the retention erase reads only rows not yet erased (a partial index), not the 190,000 erased ones', async () => {
    const store = new DatabaseDeliveryStore(knex);
    const at = (g: number) => new Date(T0 + g * 1000);
    const statements = await statementsOf(knex, () =>
      store.purgeExpired({
        now: at(400_000),
        eraseBefore: at(195_000),
        deleteBefore: at(0),
        batchSize: 500,
      }),
    );
    const erase = statements.find((s) => s.sql.includes('content_erased_at'))!;
    expect(erase).toBeDefined();
    const indexes = await indexesOfPlan(client, { sql: erase.sql, settings: [] }, erase.bindings);
    expect(indexes).toContain('deliveries_unerased_idx');
    expect(indexes).not.toContain('deliveries_finished_idx');
  });

  it.each([
    ['no filter', {}],
    ['status', { status: 'failed' as const }],
    ['channel', { channel: 'sms' as const }],
    ['backend', { backend: 'scan-2' }],
    ['failure', { failure: 'provider_rejected' as const }],
  ])(
    'ListDeliveries of one caller with %s reads an index that leads with the scope, and no content',
    async (_label, filter) => {
      const store = new DatabaseDeliveryStore(knex);
      for (const after of [
        undefined,
        { createdAt: new Date(T0 + 150_000_000).toISOString(), id: 'ffffffff-ffff-4fff-bfff-ffffffffffff' },
      ]) {
        let page: Awaited<ReturnType<DatabaseDeliveryStore['list']>> | undefined;
        const [statement] = await statementsOf(knex, async () => {
          page = await store.list({ filter: { scope: 'scope-0', ...filter }, limit: 51, after });
        });
        expect(page!.records.length).toBeGreaterThan(0);
        expect(page!.records.every((r) => r.scope === 'scope-0')).toBe(true);
        // Only what the view shows: no payload, recipient or receipts fetched to be dropped.
        expect(statement!.sql).not.toMatch(/\bpayload\b|\brecipient\b|\breceipts\b|\*/);
        for (const r of page!.records) {
          expect(r).not.toHaveProperty('payload');
          expect(r).not.toHaveProperty('recipient');
        }
        const indexes = await indexesOfPlan(
          client,
          { sql: statement!.sql, settings: [] },
          statement!.bindings,
        );
        expect(indexes.some((name) => name.startsWith('deliveries_scope_'))).toBe(true);
        expect(indexes).not.toContain('deliveries_created_idx');
      }
    },
  );
});
