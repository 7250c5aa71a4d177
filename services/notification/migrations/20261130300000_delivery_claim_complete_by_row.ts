/**
 * `delivery_claim` and `delivery_complete` update each row by its primary key, so no cached plan can
 * scan a partition (issue 30; delivery/README.md, "Sequencer plan").
 *
 * Both keep one generic plan per connection (plan_cache_mode = force_generic_plan), made from the
 * sizes the partitions had at the connection's first call. A connection that first claimed or
 * completed while the week partitions were ANALYZEd empty (a fresh deployment, a new week's partition
 * before autovacuum's ANALYZE) kept a join with a partition on the outer side of the nested loop: a
 * full scan of its primary key per call (claim-complete-plan-contract.ts: 2,004 tuples for a claim of
 * one, 2,000 for a completion of one, PostgreSQL and PGlite). Planning each call (EXECUTE) fixed it
 * but cost 4-5x PostgreSQL CPU per message. Here the plans stay cached and have no join:
 *
 * - Claim: the due rows are picked first into two arrays, ids and created_at (the same single-table
 *   SELECT: due index, ORDER BY next_attempt_at LIMIT p_limit FOR UPDATE SKIP LOCKED); then each gets
 *   `UPDATE ... WHERE id = $1 AND created_at = $2`: pruned at run time to its one partition, a probe
 *   of that partition's primary key. The rows stay locked from the pick to their UPDATE (same
 *   transaction), so the UPDATE needs no re-check; lease and attempts_started as before. Nothing
 *   picked: no UPDATE.
 * - Completion: each outcome gets its own UPDATE (and its event INSERT, same statement) by id and its
 *   created_at, a millisecond either side. An outcome without created_at (a replica on older code)
 *   has it looked up by id alone first (every partition's primary key probed, as before; only for
 *   ids in p_ids); none found: nothing to update.
 *
 * Why not one UPDATE for the batch (`id = ANY(ids) AND created_at BETWEEN lo AND hi`, no join): on
 * PostgreSQL 15 a plan cached on partitions analyzed empty scanned another index holding created_at
 * (scope, created_at, id) over the whole range instead of probing the primary key (whose `= ANY`
 * it costs as ten descents): 1,039 tuples for a claim of 8 over four weeks, 1,513 for their
 * completion (34 and 10 row by row). `(id, created_at)` pairs by `= ANY` descend n x n times there.
 *
 * Same signatures and results (a rolling deploy keeps working both ways). PostgreSQL 15+ and PGlite.
 */
import type { Knex } from 'knex';
import { CLAIM as PREVIOUS_CLAIM } from './20261129100000_partitions';
import { up as previousComplete } from './20261129140000_delivery_complete_pruned';

export const CLAIM = `
  CREATE OR REPLACE FUNCTION delivery_claim(p_channel text, p_backend text, p_owner text,
    p_now timestamptz, p_lease interval, p_limit integer)
  RETURNS SETOF deliveries
  LANGUAGE plpgsql VOLATILE
  SET plan_cache_mode = force_generic_plan
  SET enable_seqscan = off
  SET enable_hashjoin = off
  SET enable_mergejoin = off
  AS $fn$
  DECLARE
    picked_ids uuid[];
    picked_at timestamptz[];
    row_id uuid;
    row_created timestamptz;
  BEGIN
    -- Single-table (the due index); the rows stay locked until the caller's transaction ends.
    SELECT array_agg(q.id), array_agg(q.created_at)
    FROM (SELECT p.id, p.created_at FROM deliveries p
      WHERE p.backend = p_backend AND p.channel = p_channel AND p.status IN ('pending', 'retrying')
        AND p.next_attempt_at <= COALESCE(p_now, now())
        AND (p.lease_expires_at IS NULL OR p.lease_expires_at <= COALESCE(p_now, now()))
      ORDER BY p.next_attempt_at LIMIT p_limit FOR UPDATE SKIP LOCKED) q
    INTO picked_ids, picked_at;
    IF picked_ids IS NULL THEN
      RETURN;
    END IF;
    -- Each row by its whole primary key: one partition (pruned at run time), one index probe.
    FOR i IN 1 .. cardinality(picked_ids) LOOP
      row_id := picked_ids[i];
      row_created := picked_at[i];
      RETURN QUERY
      UPDATE deliveries AS d SET lease_owner = p_owner,
        lease_expires_at = COALESCE(p_now, now()) + p_lease,
        updated_at = COALESCE(p_now, now()),
        attempts_started = d.attempts_started
          + CASE WHEN d.lease_owner IS NOT DISTINCT FROM p_owner THEN 0 ELSE 1 END
      WHERE d.id = row_id AND d.created_at = row_created
      RETURNING d.*;
    END LOOP;
  END
  $fn$`;

export const COMPLETE = `
  CREATE OR REPLACE FUNCTION delivery_complete(p_outcomes jsonb, p_ids uuid[])
  RETURNS SETOF deliveries
  LANGUAGE plpgsql VOLATILE
  SET plan_cache_mode = force_generic_plan
  SET enable_bitmapscan = off
  SET enable_seqscan = off
  SET enable_hashjoin = off
  SET enable_mergejoin = off
  AS $fn$
  DECLARE
    open_statuses CONSTANT text[] := ARRAY['pending', 'retrying'];
    o record;
    row_created timestamptz;
  BEGIN
    FOR o IN SELECT * FROM jsonb_to_recordset(p_outcomes) AS r(id uuid, owner text, status text,
        attempt text, next_attempt_at timestamptz, next_delay_ms double precision, backend text,
        failure text, last_error text, provider_reference text, at timestamptz, sent_at timestamptz,
        finished_at timestamptz, created_at timestamptz) LOOP
      row_created := o.created_at;
      -- A replica on older code sends no created_at: looked up by id alone (every partition probed).
      IF row_created IS NULL AND o.id = ANY(p_ids) THEN
        SELECT x.created_at INTO row_created FROM deliveries x WHERE x.id = o.id;
      END IF;
      CONTINUE WHEN row_created IS NULL;
      -- One row: an index probe in the partition of its created_at (a millisecond either side).
      RETURN QUERY
      WITH upd AS (
        UPDATE deliveries AS d SET
          status = o.status,
          attempts = d.attempts || o.attempt::jsonb,
          next_attempt_at = COALESCE(o.next_attempt_at,
            COALESCE(o.at, now()) + o.next_delay_ms * interval '1 millisecond'),
          backend = COALESCE(o.backend, d.backend),
          failure = o.failure,
          last_error = o.last_error,
          provider_reference = COALESCE(o.provider_reference, d.provider_reference),
          lease_owner = NULL,
          lease_expires_at = NULL,
          updated_at = COALESCE(o.at, now()),
          sent_at = COALESCE(o.sent_at, CASE WHEN o.status = 'sent' THEN COALESCE(o.at, now()) END),
          finished_at = COALESCE(o.finished_at,
            CASE WHEN o.status IN ('sent', 'failed') THEN COALESCE(o.at, now()) END)
        WHERE d.id = o.id AND d.lease_owner = o.owner
          AND d.created_at > row_created - interval '1 millisecond'
          AND d.created_at < row_created + interval '1 millisecond'
          AND d.status = ANY(open_statuses)
        RETURNING d.*),
      ev AS (
        INSERT INTO delivery_events (delivery_id, scope, channel, backend, status, failure, reason,
          provider_reference, occurred_at)
        SELECT u.id, u.scope, u.channel, u.backend, u.status, u.failure, u.last_error,
          u.provider_reference, u.updated_at
        FROM upd u)
      SELECT * FROM upd;
    END LOOP;
  END
  $fn$`;

/** Makes `delivery_claim` and `delivery_complete` update row by row, by primary key. */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(CLAIM);
  await knex.raw(COMPLETE);
}

/** The previous definitions (20261129100000_partitions's claim, 20261129140000's completion). */
export async function down(knex: Knex): Promise<void> {
  await knex.raw(PREVIOUS_CLAIM);
  await previousComplete(knex);
}
