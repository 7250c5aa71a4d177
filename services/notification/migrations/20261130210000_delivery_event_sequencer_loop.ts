/**
 * `delivery_events_sequence` numbers the pending events without a join (issue 30;
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
    ids bigint[];
    ats timestamptz[];
  BEGIN
    PERFORM pg_advisory_xact_lock(hashtext('delivery_events'), 1);
    -- Planned on each pass (EXECUTE), with the sizes of now: a plan cached while the partitions
    -- were empty could read the primary key in id order past every numbered row.
    EXECUTE 'SELECT array_agg(p.id ORDER BY p.id), array_agg(p.occurred_at ORDER BY p.id)
             FROM (SELECT e.id, e.occurred_at FROM delivery_events e
                   WHERE e.seq IS NULL ORDER BY e.id LIMIT $1) p'
      INTO ids, ats USING p_batch;
    sequenced := coalesce(cardinality(ids), 0);
    IF sequenced = 0 THEN
      RETURN;
    END IF;
    UPDATE delivery_event_counter k SET last_seq = k.last_seq + sequenced WHERE k.id = 1
      RETURNING k.last_seq INTO latest_seq;
    base := latest_seq - sequenced;
    -- No join: the rows are found by their primary key (id, occurred_at) from the two arrays, the
    -- only plan this single-table statement has, and each gets its place in id order.
    UPDATE delivery_events e SET seq = base + array_position(ids, e.id)
    WHERE e.id = ANY(ids) AND e.occurred_at = ANY(ats);
    -- Delivered at commit, so no replica reads before the numbers are visible.
    PERFORM pg_notify(p_channel, latest_seq::text);
  END
  $fn$`;

/** Makes `delivery_events_sequence` number without a join. */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(SEQUENCE);
}

/** The previous definition (one UPDATE joined to the pending rows). */
export async function down(knex: Knex): Promise<void> {
  await knex.raw(PREVIOUS_SEQUENCE);
}
