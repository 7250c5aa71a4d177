/**
 * Retention of the delivery table on PostgreSQL/PGlite: dropping whole week partitions of records
 * past their retention (migration 20261129100000, delivery/README.md "Partitions"), deleting the few
 * rows no partition drop can take, with their events and the event horizon, and erasing content
 * earlier. The periodic job around it is retention.ts; DatabaseDeliveryStore calls this.
 */
import type { Knex } from 'knex';
import type { PurgeRequest, PurgeResult } from './store';
import { rows } from '../../../shared/storage/database';
import { PARTITION_DAYS, PARTITION_WEEKS_AHEAD } from '../migrations/20261129100000_partitions';

const DAY_MS = 24 * 60 * 60 * 1000;

/**
 * A final row of a week partition is deleted row by row only once it was created this many days
 * before the retention bound: until then the partition drop is expected to take it whole (a week's
 * records end within their retry window, well under two days). Rows of the DEFAULT partition go row
 * by row at once.
 */
export const STRAGGLER_DAYS = PARTITION_DAYS + 2;

/** How long a partition drop waits for the table lock before it gives up until the next pass. */
const LOCK_TIMEOUT = '2s';

/** A partition of `table` (named `<table>_pYYYYMMDD`, its first UTC day) and the week it holds. */
interface TimePartition {
  name: string;
  from: Date;
  to: Date;
}

/** The week partitions of `table`, oldest first. */
export async function timePartitions(knex: Knex | Knex.Transaction, table: string): Promise<TimePartition[]> {
  const found = rows<{ name: string }>(
    await knex.raw(
      `SELECT c.relname AS name FROM pg_inherits i
       JOIN pg_class c ON c.oid = i.inhrelid
       WHERE i.inhparent = to_regclass(?) ORDER BY c.relname`,
      [table],
    ),
  );
  const pattern = new RegExp(`^${table}_p(\\d{4})(\\d{2})(\\d{2})$`);
  const parts: TimePartition[] = [];
  for (const { name } of found) {
    const m = pattern.exec(name);
    if (!m) continue;
    const from = new Date(Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3])));
    parts.push({ name, from, to: new Date(from.getTime() + PARTITION_DAYS * DAY_MS) });
  }
  return parts;
}

/**
 * Makes the partitions of `now`'s week and PARTITION_WEEKS_AHEAD weeks after; returns how many it
 * made. Creating a partition takes an ACCESS EXCLUSIVE lock on its parent: queued behind a long
 * transaction on the table, it would hold every later statement on the table behind it (PostgreSQL
 * queues lock requests), so it gives up after LOCK_TIMEOUT (SQLSTATE 55P03, the pass fails and the
 * next one tries again; the weeks ahead leave time for many passes).
 */
export async function ensurePartitions(knex: Knex, now: Date): Promise<number> {
  return knex.transaction(async (trx) => {
    await trx.raw(`SET LOCAL lock_timeout = '${LOCK_TIMEOUT}'`);
    const [row] = rows<{ made: number }>(
      await trx.raw('SELECT notification_partitions_ensure(?::date, ?) AS made', [
        now.toISOString().slice(0, 10),
        PARTITION_WEEKS_AHEAD + 1,
      ]),
    );
    return Number(row?.made ?? 0);
  });
}

/**
 * Drops the deliveries partitions whose every row is final and ended before `deleteBefore`
 * (their idempotency keys with them), then the delivery_events partitions past retention (the events
 * of records still kept moved to DEFAULT), each scope's horizon moved in the same transaction.
 * Returns how many records went.
 */
async function dropPartitions(knex: Knex, deleteBefore: Date): Promise<number> {
  let deleted = 0;
  for (const part of await timePartitions(knex, 'deliveries')) {
    if (part.to > deleteBefore) break;
    const gone = await knex.transaction(async (trx) => {
      await trx.raw(`SET LOCAL lock_timeout = '${LOCK_TIMEOUT}'`);
      // DROP takes this lock anyway; taking it first makes the check and the drop one moment.
      await trx.raw('LOCK TABLE deliveries IN ACCESS EXCLUSIVE MODE');
      const [state] = rows<{
        open: boolean;
        unfinished: boolean;
        last: Date | string | null;
        n: number | string;
      }>(
        await trx.raw(
          `SELECT EXISTS (SELECT 1 FROM ${part.name} WHERE status IN ('pending', 'retrying')) AS open,
             EXISTS (SELECT 1 FROM ${part.name} WHERE finished_at IS NULL) AS unfinished,
             (SELECT max(finished_at) FROM ${part.name}) AS last,
             (SELECT count(*) FROM ${part.name}) AS n`,
        ),
      );
      if (!state || state.open || state.unfinished) return null;
      if (state.last !== null && new Date(state.last) >= deleteBefore) return null;
      await trx.raw('DELETE FROM delivery_keys WHERE created_at >= ? AND created_at < ?', [
        part.from.toISOString(),
        part.to.toISOString(),
      ]);
      await trx.raw(`DROP TABLE ${part.name}`);
      return Number(state.n);
    });
    // A partition kept (a queued or recent record) keeps only itself: the event partitions below
    // wait for the oldest record left, whichever partition it is in.
    if (gone !== null) deleted += gone;
  }

  // An event partition whose week is past retention goes whole; the events in it of records still
  // kept (created before its end, in a partition a queued or recent record keeps) move to the
  // DEFAULT partition in the same transaction (the week has no partition then), so they stay with
  // their records and go with them row by row.
  for (const part of await timePartitions(knex, 'delivery_events')) {
    if (part.to > deleteBefore) break;
    const dropped = await knex.transaction(async (trx) => {
      await trx.raw(`SET LOCAL lock_timeout = '${LOCK_TIMEOUT}'`);
      await trx.raw('LOCK TABLE delivery_events IN ACCESS EXCLUSIVE MODE');
      // An event not numbered yet waits for the sequencer (its watchers must see it numbered).
      const [waiting] = rows<{ any: boolean }>(
        await trx.raw(`SELECT EXISTS (SELECT 1 FROM ${part.name} WHERE seq IS NULL) AS any`),
      );
      if (waiting?.any) return false;
      await trx.raw(
        `CREATE TEMP TABLE kept_events ON COMMIT DROP AS
         SELECT e.* FROM ${part.name} e
         WHERE e.delivery_id IN (SELECT d.id FROM deliveries d WHERE d.created_at < ?)`,
        [part.to.toISOString()],
      );
      // A cursor below the highest seq dropped gets a RESET, never a silent gap.
      await trx.raw(
        `INSERT INTO delivery_event_horizon (scope, purged_through)
         SELECT scope, max(seq) FROM ${part.name}
         WHERE seq IS NOT NULL AND id NOT IN (SELECT id FROM kept_events)
         GROUP BY scope
         ON CONFLICT (scope) DO UPDATE
           SET purged_through = GREATEST(delivery_event_horizon.purged_through, EXCLUDED.purged_through)`,
      );
      await trx.raw(`DROP TABLE ${part.name}`);
      await trx.raw('INSERT INTO delivery_events SELECT * FROM kept_events');
      return true;
    });
    if (!dropped) break;
  }
  return deleted;
}

/**
 * One retention pass of at most `batchSize` rows each: makes the partitions of the days ahead, drops
 * the partitions past retention, deletes the rows left past retention (with their events, keys
 * and the horizon), then erases the content of those finished before `eraseBefore`.
 */
export async function purgeExpired(knex: Knex, request: PurgeRequest): Promise<PurgeResult> {
  await ensurePartitions(knex, request.now);
  const dropped = await dropPartitions(knex, request.deleteBefore);
  // Delete first: what is about to go need not be erased. Rows of the DEFAULT partition, and rows of
  // partitions a long-lived record keeps from being dropped (STRAGGLER_DAYS past retention).
  // The records' events go with them, and each scope's horizon moves up to the highest seq purged,
  // in the same statement: a cursor below the horizon gets a RESET, never a silent gap.
  const stragglersBefore = new Date(request.deleteBefore.getTime() - STRAGGLER_DAYS * DAY_MS);
  const deleted = rows<{ id: string }>(
    await knex.raw(
      `WITH pick AS (
         (SELECT id, created_at, finished_at FROM deliveries_default WHERE finished_at < ?
          ORDER BY finished_at LIMIT ?)
         UNION
         (SELECT id, created_at, finished_at FROM deliveries WHERE created_at < ? AND finished_at < ?
          ORDER BY finished_at LIMIT ?)),
       gone AS (DELETE FROM deliveries WHERE (id, created_at) IN (
         SELECT id, created_at FROM pick ORDER BY finished_at LIMIT ?)
       RETURNING id, scope, idempotency_key),
       keys AS (DELETE FROM delivery_keys k USING gone
         WHERE k.scope = gone.scope AND k.idempotency_key = gone.idempotency_key AND k.delivery_id = gone.id),
       ev AS (DELETE FROM delivery_events e USING gone WHERE e.delivery_id = gone.id
         RETURNING e.scope, e.seq),
       hz AS (INSERT INTO delivery_event_horizon (scope, purged_through)
         SELECT scope, max(seq) FROM ev WHERE seq IS NOT NULL GROUP BY scope
         ON CONFLICT (scope) DO UPDATE
           SET purged_through = GREATEST(delivery_event_horizon.purged_through, EXCLUDED.purged_through))
       SELECT id FROM gone`,
      [
        request.deleteBefore.toISOString(),
        request.batchSize,
        stragglersBefore.toISOString(),
        request.deleteBefore.toISOString(),
        request.batchSize,
        request.batchSize,
      ],
    ),
  ).length;
  const erased = rows<{ id: string }>(
    await knex.raw(
      `UPDATE deliveries SET payload = NULL, recipient = NULL, content_erased_at = ?
       WHERE (id, created_at) IN (
         SELECT id, created_at FROM deliveries WHERE finished_at < ? AND content_erased_at IS NULL
         ORDER BY finished_at LIMIT ?)
       RETURNING id`,
      [request.now.toISOString(), request.eraseBefore.toISOString(), request.batchSize],
    ),
  ).length;
  return { erased, deleted: dropped + deleted };
}
