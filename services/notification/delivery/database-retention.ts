/**
 * Retention of the delivery table on PostgreSQL/PGlite: deleting finished records past their
 * retention, with their events and the event horizon, and erasing content earlier. The periodic job
 * around it is retention.ts; DatabaseDeliveryStore calls this.
 */
import type { Knex } from 'knex';
import type { PurgeRequest, PurgeResult } from './store';
import { rows } from './database-records';

/**
 * One retention pass of at most `batchSize` rows each: deletes records finished before
 * `deleteBefore` (with their events, moving each scope's horizon), then erases the content of those
 * finished before `eraseBefore`.
 */
export async function purgeExpired(knex: Knex, request: PurgeRequest): Promise<PurgeResult> {
  // Delete first: what is about to go need not be erased.
  // The records' events go with them, and each scope's horizon moves up to the highest seq purged,
  // in the same statement: a cursor below the horizon gets a RESET, never a silent gap.
  const deleted = rows<{ id: string }>(
    await knex.raw(
      `WITH gone AS (DELETE FROM deliveries WHERE id IN (
         SELECT id FROM deliveries WHERE finished_at < ? ORDER BY finished_at LIMIT ?)
       RETURNING id),
       ev AS (DELETE FROM delivery_events e USING gone WHERE e.delivery_id = gone.id
         RETURNING e.scope, e.seq),
       hz AS (INSERT INTO delivery_event_horizon (scope, purged_through)
         SELECT scope, max(seq) FROM ev WHERE seq IS NOT NULL GROUP BY scope
         ON CONFLICT (scope) DO UPDATE
           SET purged_through = GREATEST(delivery_event_horizon.purged_through, EXCLUDED.purged_through))
       SELECT id FROM gone`,
      [request.deleteBefore.toISOString(), request.batchSize],
    ),
  ).length;
  const erased = rows<{ id: string }>(
    await knex.raw(
      `UPDATE deliveries SET payload = NULL, recipient = NULL, content_erased_at = ?
       WHERE id IN (
         SELECT id FROM deliveries WHERE finished_at < ? AND content_erased_at IS NULL
         ORDER BY finished_at LIMIT ?)
       RETURNING id`,
      [request.now.toISOString(), request.eraseBefore.toISOString(), request.batchSize],
    ),
  ).length;
  return { erased, deleted };
}
