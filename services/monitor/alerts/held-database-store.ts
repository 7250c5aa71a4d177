/**
 * The library's HeldAlertStore on the monitor's database (PostgreSQL or PGlite, knex;
 * ../migrations/20261129200000_held_alerts.ts): P1 alerts held outside business hours and P2 alerts
 * waiting for the digest survive a crash, and the replicas on one database share them.
 *
 * - `hold` inserts the row and trims the tier to its bound in one transaction that first locks the
 *   tier's row, so two replicas holding at once never both drop (or both miss) the oldest.
 * - `holdClaimed` inserts the row already leased to its sender (an alert sent at once, the outbox).
 * - `claim` leases the oldest unleased rows (and those whose lease ran out) to one owner with
 *   `FOR UPDATE SKIP LOCKED`, under the same tier lock, and takes the tier's dropped count: two
 *   replicas releasing at once get disjoint batches (the second usually none).
 * - `renew` extends the lease of the claimed rows still the owner's while the batch is on its way.
 * - `complete` deletes the claimed rows still leased to the owner; a row whose lease ran out and that
 *   another replica claimed stays (that replica sends it: at least once, never lost).
 * - `takeFlushTurn` moves the tier's `last_flushed_at` only when the interval has passed, in one
 *   conditional UPDATE: one digest per interval between replicas.
 *
 * Every time here is the database's (`now()`), so replicas whose clocks differ agree on leases and
 * turns. The dropped count taken by a claim whose owner died before sending is lost (the alerts it
 * counts were already gone; only the count is).
 */
import type { Knex } from 'knex';
import type { AlertRecord } from '../../../shared/monitoring/alerts/channels';
import type { HeldAlertStore, HeldClaim, HeldTier } from '../../../shared/monitoring/alerts/held-store';
import { jsonColumn, rows, toNumber } from '../../../shared/storage/database';

/** See the file comment. */
export class DatabaseHeldAlertStore implements HeldAlertStore {
  readonly durable = true;

  constructor(private readonly knex: Knex) {}

  async hold(tier: HeldTier, record: AlertRecord, bound: number): Promise<void> {
    await this.knex.transaction(async (trx) => {
      await trx.raw('SELECT tier FROM monitor_held_alert_tiers WHERE tier = ? FOR UPDATE', [tier]);
      await trx.raw('INSERT INTO monitor_held_alerts (tier, record) VALUES (?, ?::jsonb)', [
        tier,
        JSON.stringify(record),
      ]);
      // Rows under a live lease are being sent: the bound counts the others.
      const dropped = rows<{ seq: string }>(
        await trx.raw(
          `DELETE FROM monitor_held_alerts WHERE seq IN (
             SELECT seq FROM monitor_held_alerts
              WHERE tier = ? AND (lease_until IS NULL OR lease_until <= now())
              ORDER BY seq DESC OFFSET ?)
           RETURNING seq`,
          [tier, bound],
        ),
      );
      if (dropped.length > 0)
        await trx.raw('UPDATE monitor_held_alert_tiers SET dropped = dropped + ? WHERE tier = ?', [
          dropped.length,
          tier,
        ]);
    });
  }

  async holdClaimed(tier: HeldTier, record: AlertRecord, owner: string, leaseMs: number): Promise<HeldClaim> {
    const [row] = rows<{ seq: string | number }>(
      await this.knex.raw(
        `INSERT INTO monitor_held_alerts (tier, record, owner, lease_until)
         VALUES (?, ?::jsonb, ?, now() + (? * interval '1 millisecond'))
         RETURNING seq`,
        [tier, JSON.stringify(record), owner, leaseMs],
      ),
    );
    return { tier, owner, ids: [String(row!.seq)], alerts: [record], dropped: 0 };
  }

  async claim(tier: HeldTier, owner: string, leaseMs: number, limit: number): Promise<HeldClaim> {
    return this.knex.transaction(async (trx) => {
      const [counts] = rows<{ dropped: number | string }>(
        await trx.raw('SELECT dropped FROM monitor_held_alert_tiers WHERE tier = ? FOR UPDATE', [tier]),
      );
      const dropped = toNumber(counts?.dropped ?? 0);
      if (dropped > 0)
        await trx.raw('UPDATE monitor_held_alert_tiers SET dropped = 0 WHERE tier = ?', [tier]);
      const claimed = rows<{ seq: string | number; record: AlertRecord | string }>(
        await trx.raw(
          `UPDATE monitor_held_alerts
              SET owner = ?, lease_until = now() + (? * interval '1 millisecond')
            WHERE seq IN (
              SELECT seq FROM monitor_held_alerts
               WHERE tier = ? AND (lease_until IS NULL OR lease_until <= now())
               ORDER BY seq LIMIT ? FOR UPDATE SKIP LOCKED)
        RETURNING seq, record`,
          [owner, leaseMs, tier, limit],
        ),
      ).sort((x, y) => toNumber(x.seq) - toNumber(y.seq));
      return {
        tier,
        owner,
        ids: claimed.map((r) => String(r.seq)),
        alerts: claimed.map((r) => jsonColumn<AlertRecord>(r.record)),
        dropped,
      };
    });
  }

  async renew(claim: HeldClaim, leaseMs: number): Promise<void> {
    if (claim.ids.length === 0) return;
    await this.knex.raw(
      `UPDATE monitor_held_alerts SET lease_until = now() + (? * interval '1 millisecond')
        WHERE owner = ? AND seq IN (${claim.ids.map(() => '?').join(', ')})`,
      [leaseMs, claim.owner, ...claim.ids],
    );
  }

  async complete(claim: HeldClaim): Promise<void> {
    if (claim.ids.length === 0) return;
    await this.knex.raw(
      `DELETE FROM monitor_held_alerts WHERE owner = ? AND seq IN (${claim.ids.map(() => '?').join(', ')})`,
      [claim.owner, ...claim.ids],
    );
  }

  async count(tier: HeldTier): Promise<number> {
    const [r] = rows<{ n: number | string }>(
      await this.knex.raw('SELECT count(*) AS n FROM monitor_held_alerts WHERE tier = ?', [tier]),
    );
    return toNumber(r?.n ?? 0);
  }

  async takeFlushTurn(tier: HeldTier, intervalMs: number): Promise<boolean> {
    const turned = rows<{ tier: string }>(
      await this.knex.raw(
        `UPDATE monitor_held_alert_tiers SET last_flushed_at = now()
          WHERE tier = ?
            AND (last_flushed_at IS NULL OR last_flushed_at <= now() - (? * interval '1 millisecond'))
      RETURNING tier`,
        [tier, intervalMs],
      ),
    );
    return turned.length > 0;
  }
}
