/**
 * `delivery_claim` and `delivery_complete` plan their statement on each call (issue 30;
 * delivery/README.md, "Sequencer plan").
 *
 * Both kept one generic plan per connection (plan_cache_mode = force_generic_plan), made from the
 * sizes the partitions had at the connection's first call. A connection that first claimed or
 * completed while the week partitions were ANALYZEd empty (a fresh deployment, a new week's
 * partition before autovacuum's ANALYZE) kept plans for one row a partition: the claim's semi-join
 * scanned every partition's whole primary key and matched the locked rows by a join filter, the
 * completion's join did the same per outcome. Measured (claim-complete-plan-contract.ts, 2,000
 * deliveries over four weeks after such a first call): a claim of one read 2,004 tuples, a
 * completion of one 2,000, on PostgreSQL and PGlite alike, growing with the table until the
 * connection closed or the plan was replaced.
 *
 * Now the same statement is run by EXECUTE: planned on each call (a one-shot custom plan) from the
 * partitions' current sizes (the planner scales the analyzed density by the pages a partition has
 * now), so an ANALYZE of empty partitions no longer outlives the first call. The statements, their
 * settings (hash and merge joins off, so a nested loop with per-row pruning; seqscan off) and the
 * functions' signatures are unchanged; the cost is a plan per call (claims and completions are
 * batched, so per batch, not per row).
 *
 * PostgreSQL 15+ and PGlite.
 */
import type { Knex } from 'knex';
import { up as previousComplete } from './20261129140000_delivery_complete_pruned';

const CLAIM = `
  CREATE OR REPLACE FUNCTION delivery_claim(p_channel text, p_backend text, p_owner text,
    p_now timestamptz, p_lease interval, p_limit integer)
  RETURNS SETOF deliveries
  LANGUAGE plpgsql VOLATILE
  SET enable_seqscan = off
  SET enable_hashjoin = off
  SET enable_mergejoin = off
  AS $fn$
  BEGIN
    -- Planned on each call (EXECUTE), with the sizes of now: a plan cached while the partitions were
    -- analyzed empty scanned every partition's primary key to find the locked rows.
    RETURN QUERY EXECUTE $q$
    UPDATE deliveries SET lease_owner = $3,
      lease_expires_at = COALESCE($4, now()) + $5,
      updated_at = COALESCE($4, now()),
      attempts_started = attempts_started + CASE WHEN lease_owner IS NOT DISTINCT FROM $3 THEN 0 ELSE 1 END
    WHERE (id, created_at) IN (
      SELECT q.id, q.created_at FROM deliveries q
      WHERE q.backend = $2 AND q.channel = $1 AND q.status IN ('pending', 'retrying')
        AND q.next_attempt_at <= COALESCE($4, now())
        AND (q.lease_expires_at IS NULL OR q.lease_expires_at <= COALESCE($4, now()))
      ORDER BY q.next_attempt_at LIMIT $6 FOR UPDATE SKIP LOCKED)
    RETURNING *$q$
    USING p_channel, p_backend, p_owner, p_now, p_lease, p_limit;
  END
  $fn$`;

/** The claim of 20261129100000_partitions (a generic plan cached per connection). */
const PREVIOUS_CLAIM = `
  CREATE OR REPLACE FUNCTION delivery_claim(p_channel text, p_backend text, p_owner text,
    p_now timestamptz, p_lease interval, p_limit integer)
  RETURNS SETOF deliveries
  LANGUAGE plpgsql VOLATILE
  SET plan_cache_mode = force_generic_plan
  SET enable_seqscan = off
  SET enable_hashjoin = off
  SET enable_mergejoin = off
  AS $fn$
  BEGIN
    RETURN QUERY
    UPDATE deliveries SET lease_owner = p_owner,
      lease_expires_at = COALESCE(p_now, now()) + p_lease,
      updated_at = COALESCE(p_now, now()),
      attempts_started = attempts_started + CASE WHEN lease_owner IS NOT DISTINCT FROM p_owner THEN 0 ELSE 1 END
    WHERE (id, created_at) IN (
      SELECT q.id, q.created_at FROM deliveries q
      WHERE q.backend = p_backend AND q.channel = p_channel AND q.status IN ('pending', 'retrying')
        AND q.next_attempt_at <= COALESCE(p_now, now())
        AND (q.lease_expires_at IS NULL OR q.lease_expires_at <= COALESCE(p_now, now()))
      ORDER BY q.next_attempt_at LIMIT p_limit FOR UPDATE SKIP LOCKED)
    RETURNING *;
  END
  $fn$`;

const COMPLETE = `
  CREATE OR REPLACE FUNCTION delivery_complete(p_outcomes jsonb, p_ids uuid[])
  RETURNS SETOF deliveries
  LANGUAGE plpgsql VOLATILE
  SET enable_bitmapscan = off
  SET enable_seqscan = off
  SET enable_hashjoin = off
  SET enable_mergejoin = off
  AS $fn$
  DECLARE
    open_statuses CONSTANT text[] := ARRAY['pending', 'retrying'];
  BEGIN
    -- Planned on each call (EXECUTE), with the sizes of now: a plan cached while the partitions were
    -- analyzed empty scanned a partition's whole primary key per outcome.
    RETURN QUERY EXECUTE $q$
    WITH c AS (
      SELECT o.id, o.owner, o.status, o.attempt, o.next_attempt_at, o.next_delay_ms, o.backend,
        o.failure, o.last_error, o.provider_reference, o.at, o.sent_at, o.finished_at,
        COALESCE(o.created_at, (SELECT x.created_at FROM deliveries x
          WHERE x.id = o.id AND x.id = ANY($2))) AS created_at
      FROM jsonb_to_recordset($1) AS o(id uuid, owner text, status text, attempt text,
        next_attempt_at timestamptz, next_delay_ms double precision, backend text, failure text,
        last_error text, provider_reference text, at timestamptz, sent_at timestamptz,
        finished_at timestamptz, created_at timestamptz)),
    upd AS (
      UPDATE deliveries AS d SET
        status = c.status,
        attempts = d.attempts || c.attempt::jsonb,
        next_attempt_at = COALESCE(c.next_attempt_at,
          COALESCE(c.at, now()) + c.next_delay_ms * interval '1 millisecond'),
        backend = COALESCE(c.backend, d.backend),
        failure = c.failure,
        last_error = c.last_error,
        provider_reference = COALESCE(c.provider_reference, d.provider_reference),
        lease_owner = NULL,
        lease_expires_at = NULL,
        updated_at = COALESCE(c.at, now()),
        sent_at = COALESCE(c.sent_at, CASE WHEN c.status = 'sent' THEN COALESCE(c.at, now()) END),
        finished_at = COALESCE(c.finished_at,
          CASE WHEN c.status IN ('sent', 'failed') THEN COALESCE(c.at, now()) END)
      FROM c
      WHERE d.id = c.id AND d.lease_owner = c.owner
        AND d.created_at > c.created_at - interval '1 millisecond'
        AND d.created_at < c.created_at + interval '1 millisecond'
        AND d.status = ANY($3)
      RETURNING d.*),
    ev AS (
      INSERT INTO delivery_events (delivery_id, scope, channel, backend, status, failure, reason,
        provider_reference, occurred_at)
      SELECT u.id, u.scope, u.channel, u.backend, u.status, u.failure, u.last_error,
        u.provider_reference, u.updated_at
      FROM upd u)
    SELECT * FROM upd$q$
    USING p_outcomes, p_ids, open_statuses;
  END
  $fn$`;

/** Makes `delivery_claim` and `delivery_complete` plan on each call. */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(CLAIM);
  await knex.raw(COMPLETE);
}

/** The previous definitions (generic plans cached per connection). */
export async function down(knex: Knex): Promise<void> {
  await knex.raw(PREVIOUS_CLAIM);
  await previousComplete(knex);
}
