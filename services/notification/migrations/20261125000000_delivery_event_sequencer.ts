/**
 * The delivery event sequencer as one server-side function (delivery/README.md, "WatchDeliveries",
 * "Sequencer cost"): `delivery_events_sequence(batch, channel)` takes the sequencer's transaction
 * advisory lock, numbers up to `batch` committed unsequenced events from the counter row and NOTIFYs
 * `channel` with the latest seq, all in the caller's (implicit) transaction. One round trip instead of
 * four (BEGIN, lock, numbering, COMMIT), and its plans are cached by PL/pgSQL.
 *
 * Why this is still correct: a VOLATILE PL/pgSQL function takes a fresh snapshot for each statement
 * under READ COMMITTED, so the numbering statement, which runs after the lock was granted, sees every
 * row the previous lock holder committed (exactly as the second statement of the old transaction did).
 * The lock key is the one the client-side sequencer used, so a replica still running the old code
 * during a rolling deploy serialises with this one.
 *
 * `enable_bitmapscan`/`enable_seqscan` off, for this function only: numbering a row moves it out of the
 * partial index `delivery_events_unsequenced_idx`, but its old entry stays until VACUUM. A bitmap scan
 * (what the planner picks for the few rows it expects) visits the heap for every such entry on every
 * pass (7,000 dead entries: 117 heap pages, about 1 ms a pass, growing until autovacuum); a plain
 * index scan marks them dead once (kill_prior_tuple) and skips them after that (22 pages, 0.07 ms).
 */
import type { Knex } from 'knex';

/** The function this migration makes (20261130200000_delivery_event_sequencer_pruned replaces it). */
export const SEQUENCE = `
    CREATE OR REPLACE FUNCTION delivery_events_sequence(p_batch integer, p_channel text,
      OUT sequenced bigint, OUT latest_seq bigint)
    LANGUAGE plpgsql VOLATILE
    SET plan_cache_mode = force_generic_plan
    SET enable_bitmapscan = off
    SET enable_seqscan = off
    AS $fn$
    BEGIN
      PERFORM pg_advisory_xact_lock(hashtext('delivery_events'), 1);
      WITH pending AS (
        SELECT e.id, row_number() OVER (ORDER BY e.id) AS n FROM delivery_events e
        WHERE e.seq IS NULL ORDER BY e.id LIMIT p_batch),
      total AS (SELECT count(*) AS c FROM pending),
      counter AS (
        UPDATE delivery_event_counter k SET last_seq = k.last_seq + (SELECT c FROM total)
        WHERE k.id = 1 AND (SELECT c FROM total) > 0
        RETURNING k.last_seq - (SELECT c FROM total) AS base),
      numbered AS (
        UPDATE delivery_events e SET seq = counter.base + pending.n
        FROM pending, counter WHERE e.id = pending.id
        RETURNING e.seq)
      SELECT count(*), max(numbered.seq) INTO sequenced, latest_seq FROM numbered;
      -- Delivered at commit, so no replica reads before the numbers are visible.
      IF sequenced > 0 THEN
        PERFORM pg_notify(p_channel, latest_seq::text);
      END IF;
    END
    $fn$`;

/** Creates `delivery_events_sequence`. */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(SEQUENCE);
}

/** Drops it (the client-side sequencer of older versions needs nothing from the database). */
export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP FUNCTION IF EXISTS delivery_events_sequence(integer, text)');
}
