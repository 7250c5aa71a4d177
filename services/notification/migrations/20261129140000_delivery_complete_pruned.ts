/**
 * `delivery_complete` finds each row by (id, created_at) (issue 30; delivery/README.md, "Completions
 * by partition"). Since 20261129100000_partitions, `deliveries` is partitioned by week on
 * `created_at`: a lookup by id alone probes every partition's primary-key index. The worker holds
 * the claimed record, so each outcome now carries its `created_at` and the UPDATE's nested loop
 * prunes each probe, at run time, to the one partition the row is in.
 *
 * The match is within a millisecond either side: a JavaScript Date holds milliseconds, `created_at`
 * microseconds (rows written with now(), rows copied from before). The id decides the row; the
 * window only has to hold it, and spans two partitions only for a row made in the millisecond of a
 * week's start.
 *
 * Same signature, so both sides of a rolling deploy keep working: an outcome without `created_at`
 * (a replica still on the previous code) has it looked up by id alone first (every partition probed,
 * as before), then goes the same way; a replica on this code against the previous function sends a
 * key `jsonb_to_recordset` there ignores. `p_ids` is read only by that fallback lookup: an
 * `id = ANY(p_ids)` condition on the UPDATE would let the planner scan every partition by it.
 * Hash and merge joins are off for this function (as for the claim): the plan is a nested loop
 * from the outcomes into the partitions, whatever the statistics say.
 */
import type { Knex } from 'knex';
import { COMPLETE as PREVIOUS_COMPLETE } from './20261129100000_partitions';

const COMPLETE = `
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
  BEGIN
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

/** Makes `delivery_complete` match on (id, created_at). */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(COMPLETE);
}

/** The previous definition (by id alone). */
export async function down(knex: Knex): Promise<void> {
  await knex.raw(PREVIOUS_COMPLETE);
}
