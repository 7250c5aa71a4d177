/**
 * How many rows the scans of a partitioned table have read so far, for the plan contracts
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
