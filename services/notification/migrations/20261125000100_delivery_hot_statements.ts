/**
 * The two statements every delivery runs on the worker's side, claiming and recording an outcome, as
 * PL/pgSQL functions (delivery/README.md, "Throughput (issue 10): PostgreSQL statements"): PL/pgSQL
 * keeps their plans per connection, so PostgreSQL plans them once per pooled connection instead of on
 * every call. Measured with pg_stat_statements.track_planning on the email bench: planning the claim
 * (an UPDATE over a `FOR UPDATE SKIP LOCKED` sub-select on a table with six partial indexes to prove
 * predicates against) took 0.37 ms a call, more than running it (0.23 ms); planning the completion
 * took 0.34 ms a call, about as long as running it. The SQL is the store's, unchanged:
 *
 * - `delivery_claim(channel, backend, owner, now, until, limit)`: leases up to `limit` due rows of one
 *   backend, oldest first, skipping rows other workers are leasing. Under READ COMMITTED, FOR UPDATE
 *   re-checks the condition on the newest row version, so a row leased a moment ago is not taken again.
 * - `delivery_complete(outcomes, ids)`: applies a batch of outcomes (a jsonb array, one per id), each
 *   only while its owner holds the lease and the record is not final, and writes each changed row's
 *   event in the same statement. `ids` repeats the ids as an array: the planner cannot see into
 *   jsonb_to_recordset, and `id = ANY(ids)` keeps the plan a primary-key lookup.
 *
 * Plans: PL/pgSQL would keep re-planning both (its generic plan looks dearer than a custom one
 * to the planner, so it never switches), hence `plan_cache_mode = force_generic_plan`. A generic plan
 * is made once per connection and kept until the table's statistics change, so it must not depend on
 * what the table looked like then: `enable_seqscan = off` (these functions only; a plan made while
 * the table was nearly empty scanned it whole, and the completion's execution time doubled on the
 * bench). The completion's generic plan, not knowing how many ids come, also ANDed a bitmap of the
 * whole queued-rows index with the primary key's: its status test goes through a variable (the
 * planner cannot prove the partial index's predicate from it) and bitmap scans are off, which leaves
 * the primary-key lookup of exactly these ids, whatever the queue's length.
 * test/notification/delivery/database-postgres.test.ts checks both generic plans on 20,000 rows.
 *
 * Both return rows of `deliveries` (`SETOF deliveries`, so a later column comes back too). A later
 * change to either statement is a new migration with CREATE OR REPLACE.
 */
import type { Knex } from 'knex';

/** Creates `delivery_claim` and `delivery_complete`. */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE OR REPLACE FUNCTION delivery_claim(p_channel text, p_backend text, p_owner text,
      p_now timestamptz, p_until timestamptz, p_limit integer)
    RETURNS SETOF deliveries
    LANGUAGE plpgsql VOLATILE
    SET plan_cache_mode = force_generic_plan
    SET enable_seqscan = off
    AS $fn$
    BEGIN
      RETURN QUERY
      UPDATE deliveries SET lease_owner = p_owner, lease_expires_at = p_until, updated_at = p_now
      WHERE id IN (
        SELECT q.id FROM deliveries q
        WHERE q.backend = p_backend AND q.channel = p_channel AND q.status IN ('pending', 'retrying')
          AND q.next_attempt_at <= p_now AND (q.lease_expires_at IS NULL OR q.lease_expires_at <= p_now)
        ORDER BY q.next_attempt_at LIMIT p_limit FOR UPDATE SKIP LOCKED)
      RETURNING *;
    END
    $fn$`);
  await knex.raw(`
    CREATE OR REPLACE FUNCTION delivery_complete(p_outcomes jsonb, p_ids uuid[])
    RETURNS SETOF deliveries
    LANGUAGE plpgsql VOLATILE
    SET plan_cache_mode = force_generic_plan
    SET enable_bitmapscan = off
    SET enable_seqscan = off
    AS $fn$
    DECLARE
      -- A variable, not a constant: the plan cannot prove the queued-rows index's predicate from it,
      -- so it never reads that index (the whole queue) to find a handful of ids.
      open_statuses CONSTANT text[] := ARRAY['pending', 'retrying'];
    BEGIN
      RETURN QUERY
      WITH upd AS (
        UPDATE deliveries AS d SET
          status = c.status,
          attempts = d.attempts || c.attempt::jsonb,
          next_attempt_at = c.next_attempt_at,
          backend = COALESCE(c.backend, d.backend),
          failure = c.failure,
          last_error = c.last_error,
          provider_reference = COALESCE(c.provider_reference, d.provider_reference),
          lease_owner = NULL,
          lease_expires_at = NULL,
          updated_at = c.at,
          sent_at = c.sent_at,
          finished_at = c.finished_at
        FROM jsonb_to_recordset(p_outcomes) AS c(id uuid, owner text, status text, attempt text,
          next_attempt_at timestamptz, backend text, failure text, last_error text,
          provider_reference text, at timestamptz, sent_at timestamptz, finished_at timestamptz)
        WHERE d.id = c.id AND d.id = ANY(p_ids) AND d.lease_owner = c.owner
          AND d.status = ANY(open_statuses)
        RETURNING d.*),
      ev AS (
        INSERT INTO delivery_events (delivery_id, scope, channel, backend, status, failure, reason,
          provider_reference, occurred_at)
        SELECT u.id, u.scope, u.channel, u.backend, u.status, u.failure, u.last_error,
          u.provider_reference, u.updated_at
        FROM upd u)
      SELECT * FROM upd;
    END
    $fn$`);
}

/** Drops them (the store of older versions sends the statements itself). */
export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP FUNCTION IF EXISTS delivery_complete(jsonb, uuid[])');
  await knex.raw(
    'DROP FUNCTION IF EXISTS delivery_claim(text, text, text, timestamptz, timestamptz, integer)',
  );
}
