/**
 * `delivery_claim` and `delivery_complete` find their rows by the batch's ids and a created_at range,
 * so no cached plan can scan a partition (issue 30; delivery/README.md, "Sequencer plan").
 *
 * Both keep one generic plan per connection (plan_cache_mode = force_generic_plan), made from the
 * sizes the partitions had at the connection's first call. A connection that first claimed or
 * completed while the week partitions were ANALYZEd empty (a fresh deployment, a new week's partition
 * before autovacuum's ANALYZE) kept a join with a partition on the outer side of the nested loop: a
 * full scan of its primary key per call (claim-complete-plan-contract.ts: 2,004 tuples for a claim of
 * one, 2,000 for a completion of one, PostgreSQL and PGlite). Planning each call (EXECUTE) fixed it
 * but cost 4-5x PostgreSQL CPU per message; here the plans stay cached and cannot go that way:
 *
 * - Claim: the due rows are picked first into arrays (the same SELECT: due index, ORDER BY
 *   next_attempt_at LIMIT p_limit FOR UPDATE SKIP LOCKED; a single-table statement), with the
 *   oldest and newest created_at; then one single-table UPDATE ... WHERE id = ANY(ids) AND created_at
 *   BETWEEN lo AND hi: no join, each partition in the range (pruned at run time) probed by the ids on
 *   its primary key. The pair is checked exactly (created_at = ats[array_position(ids, id)], a
 *   filter on the probed rows): ids are unique only with created_at. Nothing picked: no UPDATE.
 *   The rows stay locked from the pick to the UPDATE (same transaction), so the UPDATE needs no
 *   re-check; lease and attempts_started as before.
 * - Completion: the range of the outcomes' created_at (the same millisecond either side; an outcome
 *   without it, from a replica on older code, has it looked up by id as before) goes into two
 *   variables first; the UPDATE keeps its join with the outcomes but also has `d.id = ANY(p_ids)`
 *   and the range, so even a plan with the partition on the outer side is a probe by the batch's ids
 *   in the partitions the batch spans. No outcome with a created_at: nothing to update, no UPDATE.
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
    created_from timestamptz;
    created_to timestamptz;
  BEGIN
    -- Single-table (the due index); the rows stay locked until the caller's transaction ends.
    SELECT array_agg(q.id), array_agg(q.created_at), min(q.created_at), max(q.created_at)
    FROM (SELECT p.id, p.created_at FROM deliveries p
      WHERE p.backend = p_backend AND p.channel = p_channel AND p.status IN ('pending', 'retrying')
        AND p.next_attempt_at <= COALESCE(p_now, now())
        AND (p.lease_expires_at IS NULL OR p.lease_expires_at <= COALESCE(p_now, now()))
      ORDER BY p.next_attempt_at LIMIT p_limit FOR UPDATE SKIP LOCKED) q
    INTO picked_ids, picked_at, created_from, created_to;
    IF picked_ids IS NULL THEN
      RETURN;
    END IF;
    -- No join: primary-key probes by the ids, in the partitions of the range (pruned at run time).
    RETURN QUERY
    UPDATE deliveries AS d SET lease_owner = p_owner,
      lease_expires_at = COALESCE(p_now, now()) + p_lease,
      updated_at = COALESCE(p_now, now()),
      attempts_started = d.attempts_started
        + CASE WHEN d.lease_owner IS NOT DISTINCT FROM p_owner THEN 0 ELSE 1 END
    WHERE d.id = ANY(picked_ids) AND d.created_at >= created_from AND d.created_at <= created_to
      AND d.created_at = picked_at[array_position(picked_ids, d.id)]
    RETURNING d.*;
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
    created_from timestamptz;
    created_to timestamptz;
  BEGIN
    -- The partitions the batch can be in: its created_at range, a millisecond either side.
    SELECT min(k.created_at) - interval '1 millisecond', max(k.created_at) + interval '1 millisecond'
    FROM (SELECT COALESCE(o.created_at, (SELECT x.created_at FROM deliveries x
        WHERE x.id = o.id AND x.id = ANY(p_ids))) AS created_at
      FROM jsonb_to_recordset(p_outcomes) AS o(id uuid, created_at timestamptz)) k
    INTO created_from, created_to;
    IF created_from IS NULL THEN
      RETURN;
    END IF;
    RETURN QUERY
    WITH c AS (
      SELECT o.id, o.owner, o.status, o.attempt, o.next_attempt_at, o.next_delay_ms, o.backend,
        o.failure, o.last_error, o.provider_reference, o.at, o.sent_at, o.finished_at,
        COALESCE(o.created_at, (SELECT x.created_at FROM deliveries x
          WHERE x.id = o.id AND x.id = ANY(p_ids))) AS created_at
      FROM jsonb_to_recordset(p_outcomes) AS o(id uuid, owner text, status text, attempt text,
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
        AND d.id = ANY(p_ids) AND d.created_at > created_from AND d.created_at < created_to
        AND d.created_at > c.created_at - interval '1 millisecond'
        AND d.created_at < c.created_at + interval '1 millisecond'
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
  $fn$`;

/** Makes `delivery_claim` and `delivery_complete` find their rows by the batch's ids and created_at range. */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(CLAIM);
  await knex.raw(COMPLETE);
}

/** The previous definitions (20261129100000_partitions's claim, 20261129140000's completion). */
export async function down(knex: Knex): Promise<void> {
  await knex.raw(PREVIOUS_CLAIM);
  await previousComplete(knex);
}
