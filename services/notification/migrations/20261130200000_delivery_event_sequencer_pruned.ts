/**
 * `delivery_events_sequence` numbers each event by (id, occurred_at), in a nested loop (issue 30;
 * delivery/README.md, "Sequencer plan"). Since 20261129100000_partitions, `delivery_events` is
 * partitioned by week on `occurred_at`, and the function's numbering UPDATE found its rows by id
 * alone. Its plan is generic (`plan_cache_mode = force_generic_plan`), made from the statistics of
 * the last ANALYZE: when that ran during a burst (most rows not numbered yet) the planner expected
 * thousands of pending rows (a tenth of the table for `LIMIT p_batch`) and hashed the whole event
 * log to join them (full scans of every partition's primary-key index, sequential scans being off):
 * 31,000 index tuples and 29,000 buffers, about 120 ms, for a pass that numbered one event, growing
 * with the log until the next ANALYZE.
 *
 * Now:
 * - the pending rows carry their `occurred_at`, and the UPDATE matches (id, occurred_at): each probe is
 *   pruned at run time to the one partition the row is in (the row's own value, so always equal);
 * - hash and merge joins are off for this function (as for `delivery_claim` and `delivery_complete`):
 *   the UPDATE is a nested loop from the pending rows, whatever the statistics say, so a pass reads
 *   what it numbers and not the log;
 * - no `e.seq IS NULL` on the UPDATE (the rows are pending under the lock anyway): with it, and
 *   statistics that expect one pending row (after a VACUUM), the planner scanned the whole partial
 *   unnumbered index once per pending row with the join as a filter (300 pending: 89,700 rows
 *   filtered); without it each probe is the primary key (id, occurred_at).
 *
 * Same signature and lock key: replicas on the previous code keep calling it (a rolling deploy).
 * Runs on PostgreSQL 15+ and PGlite.
 */
import type { Knex } from 'knex';
import { SEQUENCE as PREVIOUS_SEQUENCE } from './20261125000000_delivery_event_sequencer';

export const SEQUENCE = `
  CREATE OR REPLACE FUNCTION delivery_events_sequence(p_batch integer, p_channel text,
    OUT sequenced bigint, OUT latest_seq bigint)
  LANGUAGE plpgsql VOLATILE
  SET plan_cache_mode = force_generic_plan
  SET enable_bitmapscan = off
  SET enable_seqscan = off
  SET enable_hashjoin = off
  SET enable_mergejoin = off
  AS $fn$
  BEGIN
    PERFORM pg_advisory_xact_lock(hashtext('delivery_events'), 1);
    WITH pending AS (
      SELECT e.id, e.occurred_at, row_number() OVER (ORDER BY e.id) AS n FROM delivery_events e
      WHERE e.seq IS NULL ORDER BY e.id LIMIT p_batch),
    total AS (SELECT count(*) AS c FROM pending),
    counter AS (
      UPDATE delivery_event_counter k SET last_seq = k.last_seq + (SELECT c FROM total)
      WHERE k.id = 1 AND (SELECT c FROM total) > 0
      RETURNING k.last_seq - (SELECT c FROM total) AS base),
    numbered AS (
      UPDATE delivery_events e SET seq = counter.base + pending.n
      FROM pending, counter
      WHERE e.id = pending.id AND e.occurred_at = pending.occurred_at
      RETURNING e.seq)
    SELECT count(*), max(numbered.seq) INTO sequenced, latest_seq FROM numbered;
    -- Delivered at commit, so no replica reads before the numbers are visible.
    IF sequenced > 0 THEN
      PERFORM pg_notify(p_channel, latest_seq::text);
    END IF;
  END
  $fn$`;

/** Makes `delivery_events_sequence` number by (id, occurred_at) in a nested loop. */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(SEQUENCE);
}

/** The previous definition (by id alone, any join). */
export async function down(knex: Knex): Promise<void> {
  await knex.raw(PREVIOUS_SEQUENCE);
}
