/**
 * Leased rows leave the head of the due order (issue 30; deploy/capacity.md, "More attempts in
 * flight per backend"; delivery/README.md, "Due order: eligible at").
 *
 * `deliveries_due_idx` was (channel, backend, next_attempt_at) over the queued rows. A claimed row
 * keeps its next_attempt_at (in the past) and only gains a lease, so the attempts in flight sat at
 * the head of their backend's due order: every claim and every `dueBackends` probe stepped over them,
 * about one shared block per leased row (1,000 leased on each of 50 backends: 50,852 blocks and
 * 38 PostgreSQL CPU-ms a poll).
 *
 * The index is now on (channel, backend, GREATEST(next_attempt_at, lease_expires_at)): the time the
 * row can next be claimed, "eligible at" (GREATEST ignores NULL, so an unleased row's is its
 * next_attempt_at). A row is due when that is <= now and it has a next_attempt_at: the condition of
 * before, `next_attempt_at <= now AND (lease_expires_at IS NULL OR lease_expires_at <= now)`, exactly.
 * `next_attempt_at IS NOT NULL`, not a second `next_attempt_at <= now`: the planner ignores the
 * statistics of a partial index's expression (default selectivity for the index condition), and with
 * the second comparison's column statistics on top it expected about one due row per backend when
 * none was due, costed dueBackends' LIMIT 1 probes as whole scans and crossed jit_above_cost (20 ms
 * of JIT compilation a poll, measured on 1,000,000 rows).
 * A claim moves its rows to their lease expiry, past every due row; a lease that runs out (its worker
 * died) makes the row due again at that moment, and the claim's FOR UPDATE SKIP LOCKED and its
 * re-check of the condition on the newest row version keep handing it to one worker only. The memory
 * store already ordered its queue by this time (memory-queue.ts `claimableAt`).
 *
 * next_attempt_at keeps its meaning (the API, the admin page and the memory store read it as
 * before). The price: the claim writes a column the index reads, so its UPDATE is no longer HOT (a new
 * entry in every index of the row's partition); measured in deploy/capacity.md.
 *
 * Same index name (the plan tests and benches look for it) and same function signature: a replica on
 * the previous code keeps working (its `dueBackends` probe filters instead of seeking, as slow as before).
 * The index is built in the migration's transaction on the partitioned table (each partition's index
 * attached to it): queued rows only, so it is small, but inserts wait while it builds.
 * PostgreSQL 15+ and PGlite.
 */
import type { Knex } from 'knex';
import { CLAIM as PREVIOUS_CLAIM } from './20261129100000_partitions';

/** The time a queued row can next be claimed (the index expression; queries must spell it the same). */
const ELIGIBLE_AT = 'GREATEST(next_attempt_at, lease_expires_at)';

const DUE_INDEX = `CREATE INDEX deliveries_due_idx ON deliveries (channel, backend, (${ELIGIBLE_AT}))
  WHERE status IN ('pending', 'retrying')`;

const PREVIOUS_DUE_INDEX = `CREATE INDEX deliveries_due_idx ON deliveries (channel, backend, next_attempt_at)
  WHERE status IN ('pending', 'retrying')`;

// As in 20261129100000_partitions (nested loop into the partitions, hash and merge joins off), with
// the due condition and order on the eligible time, so the index seeks past the leased rows.
const CLAIM = `
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
        AND GREATEST(q.next_attempt_at, q.lease_expires_at) <= COALESCE(p_now, now())
        AND q.next_attempt_at IS NOT NULL
      ORDER BY GREATEST(q.next_attempt_at, q.lease_expires_at) LIMIT p_limit FOR UPDATE SKIP LOCKED)
    RETURNING *;
  END
  $fn$`;

/** The due index on the eligible time, and the claim that seeks it. */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('DROP INDEX deliveries_due_idx');
  await knex.raw(DUE_INDEX);
  await knex.raw(CLAIM);
}

/** The due index on next_attempt_at and the claim of 20261129100000_partitions. */
export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP INDEX deliveries_due_idx');
  await knex.raw(PREVIOUS_DUE_INDEX);
  await knex.raw(PREVIOUS_CLAIM);
}
