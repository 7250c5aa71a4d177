/**
 * What the plan contracts (sequencer-plan-contract.ts, claim-complete-plan-contract.ts) need of the
 * database: week partitions whose statistics only the test changes, and the rows read.
 *
 * `rowsRead`: how many rows the scans of a partitioned table have read so far, for the plan contracts
 * (sequencer-plan-contract.ts, claim-complete-plan-contract.ts): a cached plan that scans a partition
 * per call reads every live row of it, a plan that probes by key reads a handful.
 *
 * Counted as LIVE rows fetched (index scans' `idx_tup_fetch`, plus `seq_tup_read`), not index entries
 * read (`idx_tup_read`): an index keeps the entries of rows updated or deleted until a scan marks
 * them dead, and a scan may only mark them once every transaction in the cluster has moved past
 * them. With other databases busy (the suite's other files), the entries of the previous passes'
 * updates were read again by the next pass (3,002 index entries, once in a combined run) although
 * the plan probed by key. Live rows fetched do not depend on that; a scan of a partition's primary
 * key fetches every row of it to test the join.
 */
import type { Knex } from 'knex';

export async function rowsRead(knex: Knex, table: string): Promise<number> {
  // The previous statement's counters are flushed when the next transaction ends (same backend),
  // then read fresh.
  await knex.raw('SELECT pg_stat_force_next_flush()');
  await knex.raw('SELECT pg_stat_clear_snapshot()');
  const result = (await knex.raw(
    `SELECT coalesce(sum(coalesce(idx_tup_fetch, 0) + coalesce(seq_tup_read, 0)), 0) AS n
     FROM pg_stat_user_tables WHERE relname = ? OR relname LIKE ?`,
    [table, `${table}\\_%`],
  )) as { rows: { n: string | number }[] };
  return Number(result.rows[0]!.n);
}

/**
 * Makes the week partitions of the three partitioned tables for `weeks` weeks back (and two ahead),
 * and turns autovacuum off on `table`'s partitions: no ANALYZE behind the test's back, so the
 * statistics stay what the test made them.
 */
export async function partitionsWithFrozenStats(knex: Knex, table: string, weeks: number): Promise<void> {
  await knex.raw(
    `SELECT notification_partitions_ensure((now() - interval '${7 * weeks} days')::date, ${weeks + 2})`,
  );
  const parts = (await knex.raw(
    `SELECT inhrelid::regclass::text AS part FROM pg_inherits WHERE inhparent = ?::regclass`,
    [table],
  )) as { rows: { part: string }[] };
  for (const { part } of parts.rows) await knex.raw(`ALTER TABLE ${part} SET (autovacuum_enabled = false)`);
}
