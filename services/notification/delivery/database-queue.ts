/**
 * The delivery queue's claims and leases on PostgreSQL/PGlite: which backends have due work, claiming
 * due rows under a lease (`SELECT ... FOR UPDATE SKIP LOCKED`), giving a lease back (defer, release),
 * narrowing a leased record (leaveOut), and the queue's depth. Outcomes are database-outcomes.ts.
 * DatabaseDeliveryStore composes it.
 */
import type { Knex } from 'knex';
import { rows, toNumber } from '../../../shared/storage/database';
import type { ClaimRequest, DeferRequest, DueBackend, LeaveOutRequest, QueueStats } from './store';
import type { DeliveryRecord } from './types';
import { rowToRecord, toDateOrNull, type DeliveryRow } from './database-records';

/** Claims and leases; see the module comment. */
export class DatabaseLeaseQueue {
  /**
   * @param at the time to bind for a caller's `now` (null: the database's `now()`).
   */
  constructor(
    private readonly knex: Knex,
    private readonly at: (now: Date) => string | null,
  ) {}

  /**
   * A loose index scan of `deliveries_due_idx`: the distinct (channel, backend) pairs of the queue,
   * one index probe each, then one due, unleased row per pair. The index orders a backend's rows by
   * the time they can next be claimed, GREATEST(next_attempt_at, lease_expires_at) (migration
   * 20261201000000): the attempts in flight sit at their lease expiry, past the due rows, so the probe
   * seeks straight to a due row instead of stepping over them. A few pages per backend, whatever the
   * backlog and however many attempts are in flight; `SELECT DISTINCT`
   * over the due rows read all of them on every poll. The per-pair probe is a LATERAL ... LIMIT 1, not
   * EXISTS: on the partitioned table (migration 20261129100000) the planner hashed EXISTS over every
   * queued row of every partition.
   */
  async dueBackends(now: Date): Promise<DueBackend[]> {
    const at = this.at(now);
    return rows<DueBackend>(
      await this.knex.raw(
        `WITH RECURSIVE pairs(channel, backend) AS (
           (SELECT channel, backend FROM deliveries WHERE status IN ('pending', 'retrying')
            ORDER BY channel, backend LIMIT 1)
           UNION ALL
           SELECT n.channel, n.backend FROM pairs p CROSS JOIN LATERAL (
             SELECT d.channel, d.backend FROM deliveries d
             WHERE d.status IN ('pending', 'retrying') AND (d.channel, d.backend) > (p.channel, p.backend)
             ORDER BY d.channel, d.backend LIMIT 1) n
         )
         SELECT p.channel, p.backend FROM pairs p
         CROSS JOIN LATERAL (SELECT 1 FROM deliveries q
           WHERE q.channel = p.channel AND q.backend = p.backend AND q.status IN ('pending', 'retrying')
             AND GREATEST(q.next_attempt_at, q.lease_expires_at) <= COALESCE(?::timestamptz, now())
             AND q.next_attempt_at IS NOT NULL
           LIMIT 1) due`,
        [at],
      ),
    );
  }

  async claim(request: ClaimRequest): Promise<DeliveryRecord[]> {
    const at = this.at(request.now);
    // Under READ COMMITTED, FOR UPDATE re-checks DUE against the newest row version, so a row another
    // worker leased and committed a moment ago is not taken again; SKIP LOCKED skips rows being leased.
    // `delivery_claim` (migration 20261125000100) is the UPDATE ... WHERE id IN (SELECT ... FOR UPDATE
    // SKIP LOCKED) this method used to send, with its plan kept per connection; since 20261201000000
    // it takes rows in the order of the time they can next be claimed (a lease moves a row past the due ones).
    const claimed = rows<DeliveryRow>(
      await this.knex.raw(
        'SELECT * FROM delivery_claim(?::text, ?::text, ?::text, ?::timestamptz, ?::interval, ?::integer)',
        [
          request.channel,
          request.backend,
          request.owner,
          at,
          `${request.leaseMs} milliseconds`,
          request.limit,
        ],
      ),
    ).map(rowToRecord);
    return claimed.sort((a, b) => a.nextAttemptAt!.getTime() - b.nextAttemptAt!.getTime());
  }

  async defer(id: string, owner: string, request: DeferRequest): Promise<boolean> {
    // With the claimed created_at the planner prunes to the row's partition (README, "Completions by
    // partition"; within a millisecond: the column holds microseconds).
    const created = request.createdAt?.toISOString() ?? null;
    const found = rows<{ id: string }>(
      await this.knex.raw(
        `UPDATE deliveries SET next_attempt_at = COALESCE(?::timestamptz, now()) + ? * interval '1 millisecond',
           lease_owner = NULL, lease_expires_at = NULL, updated_at = COALESCE(?::timestamptz, now()),
           attempts_started = GREATEST(attempts_started - 1, 0)
         WHERE id = ? AND lease_owner = ? AND status IN ('pending', 'retrying')${
           created === null
             ? ''
             : ` AND created_at > ?::timestamptz - interval '1 millisecond'
           AND created_at < ?::timestamptz + interval '1 millisecond'`
         }
         RETURNING id`,
        [
          this.at(request.now),
          Math.max(0, request.nextAttemptAt.getTime() - request.now.getTime()),
          this.at(request.now),
          id,
          owner,
          ...(created === null ? [] : [created, created]),
        ],
      ),
    );
    return found.length > 0;
  }

  async release(ids: readonly string[], owner: string, now: Date): Promise<number> {
    if (ids.length === 0) return 0;
    return rows<{ id: string }>(
      await this.knex.raw(
        `UPDATE deliveries SET lease_owner = NULL, lease_expires_at = NULL,
           updated_at = COALESCE(?::timestamptz, now()), attempts_started = GREATEST(attempts_started - 1, 0)
         WHERE id IN (SELECT jsonb_array_elements_text(?::jsonb)::uuid) AND lease_owner = ?
         RETURNING id`,
        [this.at(now), JSON.stringify(ids), owner],
      ),
    ).length;
  }

  async leaveOut(id: string, owner: string, request: LeaveOutRequest): Promise<boolean> {
    const found = rows<{ id: string }>(
      await this.knex.raw(
        `UPDATE deliveries SET recipient = ?, masked_recipient = ?, payload = ?::jsonb,
           suppressed_recipients = ?::jsonb, updated_at = ?
         WHERE id = ? AND lease_owner = ? AND status IN ('pending', 'retrying')
         RETURNING id`,
        [
          request.recipient,
          request.maskedRecipient,
          JSON.stringify(request.payload),
          JSON.stringify(request.suppressedRecipients),
          request.now.toISOString(),
          id,
          owner,
        ],
      ),
    );
    return found.length > 0;
  }

  async queueStats(now: Date): Promise<QueueStats> {
    const at = this.at(now);
    const found = rows<{ status: 'pending' | 'retrying'; n: number | string; oldest: Date | string | null }>(
      await this.knex.raw(
        `SELECT status, count(*) AS n,
           min(CASE WHEN next_attempt_at <= COALESCE(?::timestamptz, now())
               AND (lease_expires_at IS NULL OR lease_expires_at <= COALESCE(?::timestamptz, now()))
               THEN next_attempt_at END) AS oldest
         FROM deliveries WHERE status IN ('pending', 'retrying') GROUP BY status`,
        [at, at],
      ),
    );
    const queued = { pending: 0, retrying: 0 };
    let oldestDueAt: Date | null = null;
    for (const r of found) {
      queued[r.status] = toNumber(r.n);
      const oldest = toDateOrNull(r.oldest);
      if (oldest && (oldestDueAt === null || oldest < oldestDueAt)) oldestDueAt = oldest;
    }
    return { queued, oldestDueAt };
  }
}
