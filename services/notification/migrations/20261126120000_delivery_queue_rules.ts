/**
 * The queue's rules of issue 23 (delivery/README.md, "Queue rules"):
 *
 * - **Attempts count when claimed.** `attempts_started` is raised by every claim that takes a record
 *   from someone else (or from nobody), so an attempt cut off by a crash still counts; the worker
 *   fails a record whose started attempts exceed `max_attempts` with the failure kind
 *   `worker_died`. A claim by the lease's own owner (its lease ran out under a running attempt) only
 *   renews the lease; a release (shutdown) and a defer (open circuit) give the claim back.
 * - **The database's clock.** `delivery_claim` and `delivery_complete` read "now" from the database
 *   (`now()`, per statement) when the store passes no time: leases are `now() + lease`, retries are
 *   due `now() + delay`. A replica's own clock decides nothing another replica relies on.
 *   `delivery_claim` changes signature (the lease is an interval), so the old one is dropped: a
 *   replica of the previous version cannot claim after this migration (its polls fail and are
 *   logged; nothing is lost or sent twice) until it is replaced.
 *
 * - **Bounded polls.** `deliveries_due_idx` leads with the channel: `(channel, backend,
 *   next_attempt_at)` over the queued rows. A claim is an equality on both and an order on the third
 *   (as before); `dueBackends` walks the distinct (channel, backend) pairs of the queue through the
 *   index (a loose index scan) and asks each pair for one due row, so a poll costs a few index pages
 *   per backend whatever the backlog (after an outage, 100,000 queued rows), not a scan of every due
 *   row. Rebuilding the index reads the queued rows once.
 *
 * Both functions keep the settings and shape of migration 20261125000100 (generic plans pinned to
 * their indexes); test/notification/delivery/database-postgres.test.ts checks their plans.
 */
import type { Knex } from 'knex';
import * as hotStatements from './20261125000100_delivery_hot_statements';

const FAILURE_KINDS = [
  'recipient_invalid',
  'recipient_unregistered',
  'recipient_unsubscribed',
  'payload_rejected',
  'provider_auth',
  'provider_rejected',
  'retries_exhausted',
  'recipient_suppressed',
  'recipient_bounced',
  'spam_complaint',
  'provider_undelivered',
];
const AFTER = [...FAILURE_KINDS, 'worker_died'];

function failureCheck(kinds: readonly string[]): string {
  return `CHECK (failure IN (${kinds.map((k) => `'${k}'`).join(', ')}))`;
}

const CLAIM = `
  CREATE OR REPLACE FUNCTION delivery_claim(p_channel text, p_backend text, p_owner text,
    p_now timestamptz, p_lease interval, p_limit integer)
  RETURNS SETOF deliveries
  LANGUAGE plpgsql VOLATILE
  SET plan_cache_mode = force_generic_plan
  SET enable_seqscan = off
  AS $fn$
  BEGIN
    RETURN QUERY
    UPDATE deliveries SET lease_owner = p_owner,
      lease_expires_at = COALESCE(p_now, now()) + p_lease,
      updated_at = COALESCE(p_now, now()),
      attempts_started = attempts_started + CASE WHEN lease_owner IS NOT DISTINCT FROM p_owner THEN 0 ELSE 1 END
    WHERE id IN (
      SELECT q.id FROM deliveries q
      WHERE q.backend = p_backend AND q.channel = p_channel AND q.status IN ('pending', 'retrying')
        AND q.next_attempt_at <= COALESCE(p_now, now())
        AND (q.lease_expires_at IS NULL OR q.lease_expires_at <= COALESCE(p_now, now()))
      ORDER BY q.next_attempt_at LIMIT p_limit FOR UPDATE SKIP LOCKED)
    RETURNING *;
  END
  $fn$`;

// An outcome's times: `at` (null: the database's now()) and `next_delay_ms` after it. The fields of
// the previous version (next_attempt_at, sent_at, finished_at) still win when a store sends them.
const COMPLETE = `
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
      FROM jsonb_to_recordset(p_outcomes) AS c(id uuid, owner text, status text, attempt text,
        next_attempt_at timestamptz, next_delay_ms double precision, backend text, failure text,
        last_error text, provider_reference text, at timestamptz, sent_at timestamptz,
        finished_at timestamptz)
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
  $fn$`;

/** Adds `attempts_started`, the failure kind `worker_died` and the claim/completion on the database clock. */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE deliveries ADD COLUMN attempts_started integer NOT NULL DEFAULT 0');
  // Queued records keep counting from the attempts they have (final ones never claim again).
  await knex.raw(
    `UPDATE deliveries SET attempts_started = jsonb_array_length(attempts)
     WHERE status IN ('pending', 'retrying') AND jsonb_array_length(attempts) > 0`,
  );
  await knex.raw('ALTER TABLE deliveries DROP CONSTRAINT IF EXISTS deliveries_failure_check');
  await knex.raw(`ALTER TABLE deliveries ADD CONSTRAINT deliveries_failure_check ${failureCheck(AFTER)}`);
  await knex.raw(
    'DROP FUNCTION IF EXISTS delivery_claim(text, text, text, timestamptz, timestamptz, integer)',
  );
  // SETOF deliveries: the functions' row type gains the new column, so they are made after it.
  await knex.raw('DROP FUNCTION IF EXISTS delivery_complete(jsonb, uuid[])');
  await knex.raw(CLAIM);
  await knex.raw(COMPLETE);
  await knex.raw('DROP INDEX IF EXISTS deliveries_due_idx');
  await knex.raw(
    `CREATE INDEX deliveries_due_idx ON deliveries (channel, backend, next_attempt_at)
     WHERE status IN ('pending', 'retrying')`,
  );
}

/** Back to migration 20261125000100's functions (the counts and the failure kind go). */
export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP FUNCTION IF EXISTS delivery_claim(text, text, text, timestamptz, interval, integer)');
  await knex.raw('DROP FUNCTION IF EXISTS delivery_complete(jsonb, uuid[])');
  await knex.raw(`UPDATE deliveries SET failure = 'retries_exhausted' WHERE failure = 'worker_died'`);
  await knex.raw('ALTER TABLE deliveries DROP CONSTRAINT IF EXISTS deliveries_failure_check');
  await knex.raw(
    `ALTER TABLE deliveries ADD CONSTRAINT deliveries_failure_check ${failureCheck(FAILURE_KINDS)}`,
  );
  await knex.raw('ALTER TABLE deliveries DROP COLUMN IF EXISTS attempts_started');
  await hotStatements.up(knex);
  await knex.raw('DROP INDEX IF EXISTS deliveries_due_idx');
  await knex.raw(
    `CREATE INDEX deliveries_due_idx ON deliveries (backend, next_attempt_at)
     WHERE status IN ('pending', 'retrying')`,
  );
}
