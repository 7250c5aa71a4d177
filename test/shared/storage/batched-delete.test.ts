/**
 * deleteInBatches: a purge's backlog goes in statements of at most `batchSize` rows, until none is
 * left or the per-call cap is reached; what it does not match stays. On PGlite and PostgreSQL.
 */
import { deleteInBatches } from '../../../shared/storage/batched-delete';
import { type TestEngine, testEngines } from '../../support/database';

const engines = testEngines('batched_delete');

describe.each(engines)('deleteInBatches on %s', (_name, open) => {
  let engine: TestEngine;
  /** The row counts of the DELETE statements run (from the database's answers). */
  let deletes: number;

  beforeAll(async () => {
    engine = await open();
    engine.knex.on('query', (q: { sql: string }) => {
      if (/^DELETE/i.test(q.sql)) deletes++;
    });
  });
  afterAll(() => engine?.close());

  /** `old` rows the purge matches (at < 100), `kept` it does not (at >= 100), text in several scripts. */
  async function fill(old: number, kept: number): Promise<void> {
    await engine.knex.raw('DROP TABLE IF EXISTS purged_here');
    await engine.knex.raw('CREATE TABLE purged_here (at bigint NOT NULL, note text NOT NULL)');
    await engine.knex.raw(
      `INSERT INTO purged_here (at, note)
       SELECT n, 'ログ 🚨 سجل ' || n FROM generate_series(0, ? - 1) AS n
       UNION ALL SELECT 100 + n, 'kept ' || n FROM generate_series(0, ? - 1) AS n`,
      [old, kept],
    );
    deletes = 0;
  }

  async function left(): Promise<{ old: number; kept: number }> {
    const result = (await engine.knex.raw(
      'SELECT count(*) FILTER (WHERE at < 100)::int AS old, count(*) FILTER (WHERE at >= 100)::int AS kept FROM purged_here',
    )) as { rows: { old: number; kept: number }[] };
    return result.rows[0]!;
  }

  it('purges a backlog of several batches fully, one statement per batch, and keeps the rest', async () => {
    await fill(14, 3);
    expect(await deleteInBatches(engine.knex, 'purged_here', 'at < ?', [100], { batchSize: 4 })).toBe(14);
    // 4 + 4 + 4 + 2: the short batch says nothing is left.
    expect(deletes).toBe(4);
    expect(await left()).toEqual({ old: 0, kept: 3 });
  });

  it('a backlog of exactly whole batches takes one more statement that finds nothing', async () => {
    await fill(12, 3);
    expect(await deleteInBatches(engine.knex, 'purged_here', 'at < ?', [100], { batchSize: 4 })).toBe(12);
    expect(deletes).toBe(4);
    expect(await left()).toEqual({ old: 0, kept: 3 });
  });

  it('stops at the per-call cap; the next call goes on where it stopped', async () => {
    await fill(14, 3);
    const batches = { batchSize: 4, maxBatches: 3 };
    // At the cap: 3 full batches, no fourth statement.
    expect(await deleteInBatches(engine.knex, 'purged_here', 'at < ?', [100], batches)).toBe(12);
    expect(deletes).toBe(3);
    expect(await left()).toEqual({ old: 2, kept: 3 });
    expect(await deleteInBatches(engine.knex, 'purged_here', 'at < ?', [100], batches)).toBe(2);
    expect(await left()).toEqual({ old: 0, kept: 3 });
  });

  it('takes a table alias its condition refers to (a correlated subquery)', async () => {
    await fill(9, 3);
    const deleted = await deleteInBatches(
      engine.knex,
      'purged_here p',
      'NOT EXISTS (SELECT 1 FROM jsonb_array_elements_text(?::jsonb) AS k(v) WHERE p.at >= k.v::bigint)',
      [JSON.stringify([100])],
      { batchSize: 2 },
    );
    expect(deleted).toBe(9);
    expect(deletes).toBe(5);
    expect(await left()).toEqual({ old: 0, kept: 3 });
  });

  it('with nothing to purge runs one statement and answers 0', async () => {
    await fill(0, 3);
    expect(await deleteInBatches(engine.knex, 'purged_here', 'at < ?', [100])).toBe(0);
    expect(deletes).toBe(1);
    expect(await left()).toEqual({ old: 0, kept: 3 });
  });
});
