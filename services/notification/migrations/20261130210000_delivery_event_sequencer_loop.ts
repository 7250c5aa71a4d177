/**
 * `delivery_events_sequence` numbers each pending event with its own one-row UPDATE (issue 30;
 * delivery/README.md, "Sequencer plan").
 *
 * 20261130200000 matched the pending rows by (id, occurred_at) in one UPDATE ... FROM pending, a
 * join. A join's plan can still go wrong: the function's plan is generic and cached per connection,
 * made from the sizes the tables had when the connection first called it. A connection that first
 * sequenced while a week's partition was empty (a fresh deployment, or the first minutes of every
 * week) kept a plan that joined by scanning that partition's whole primary-key index for every
 * pending row (the estimate was one row each side), until autovacuum's ANALYZE of the partition
 * replaced it: measured with `npm run capacity` (CAPACITY_AUTO_EXPLAIN_MS), passes of 640 events
 * reading 1.6 million buffers, 2 to 10 seconds each, a core of PostgreSQL for about a minute.
 *
 * Now there is no join, and no cached plan to go stale: the pending rows are read in id order by a
 * query planned on each pass (EXECUTE: the sizes of now, so the partial unnumbered index; a plan
 * cached on empty partitions read the primary key past every numbered row instead), and each gets `UPDATE ... WHERE id = $1 AND occurred_at = $2`, which has no plan but a probe of the
 * primary key of the one partition the row is in, whatever the statistics say or said. The counter
 * moves once per pass, under the same advisory lock: gap-free, in id order, as before.
 *
 * Same signature and lock key (a rolling deploy keeps working). PostgreSQL 15+ and PGlite.
 */
import type { Knex } from 'knex';
import { SEQUENCE as PREVIOUS_SEQUENCE } from './20261130200000_delivery_event_sequencer_pruned';

export const SEQUENCE = `
  CREATE OR REPLACE FUNCTION delivery_events_sequence(p_batch integer, p_channel text,
    OUT sequenced bigint, OUT latest_seq bigint)
  LANGUAGE plpgsql VOLATILE
  SET plan_cache_mode = force_generic_plan
  SET enable_bitmapscan = off
  SET enable_seqscan = off
  AS $fn$
  DECLARE
    base bigint;
    r record;
  BEGIN
    PERFORM pg_advisory_xact_lock(hashtext('delivery_events'), 1);
    sequenced := 0;
    SELECT k.last_seq INTO base FROM delivery_event_counter k WHERE k.id = 1;
    -- Planned on each pass (EXECUTE): a plan cached while the partitions were empty read the
    -- primary key in id order past every numbered row instead of the unnumbered index.
    FOR r IN EXECUTE
      'SELECT e.id, e.occurred_at FROM delivery_events e
       WHERE e.seq IS NULL ORDER BY e.id LIMIT $1' USING p_batch
    LOOP
      sequenced := sequenced + 1;
      UPDATE delivery_events SET seq = base + sequenced
      WHERE id = r.id AND occurred_at = r.occurred_at;
    END LOOP;
    IF sequenced > 0 THEN
      latest_seq := base + sequenced;
      UPDATE delivery_event_counter SET last_seq = latest_seq WHERE id = 1;
      -- Delivered at commit, so no replica reads before the numbers are visible.
      PERFORM pg_notify(p_channel, latest_seq::text);
    END IF;
  END
  $fn$`;

/** Makes `delivery_events_sequence` number row by row, without a join. */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(SEQUENCE);
}

/** The previous definition (one UPDATE joined to the pending rows). */
export async function down(knex: Knex): Promise<void> {
  await knex.raw(PREVIOUS_SEQUENCE);
}
