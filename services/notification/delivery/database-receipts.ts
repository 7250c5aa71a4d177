/**
 * Provider receipts on PostgreSQL/PGlite: finding a delivery by its provider reference, and folding
 * a receipt into its record (DELIVERED, UNDELIVERED) by the rule of receipt.ts. DatabaseDeliveryStore
 * calls these.
 */
import type { Knex } from 'knex';
import { receiptReason } from './events';
import { foldReceipt, type IncomingReceipt } from './receipt';
import type { DeliveryRecord } from './types';
import { rows } from '../../../shared/storage/database';
import { rowToRecord, toStoredReceipt, type DeliveryRow } from './database-records';
import { eventInsert } from './database-event-log';

export async function findByProviderReference(
  knex: Knex,
  channel: DeliveryRecord['channel'],
  reference: string,
  backend?: string,
): Promise<DeliveryRecord | null> {
  const [row] = rows<DeliveryRow>(
    await knex.raw(
      `SELECT * FROM deliveries WHERE provider_reference = ? AND channel = ?
       ${backend === undefined ? '' : 'AND backend = ?'}
       ORDER BY created_at DESC, id DESC LIMIT 1`,
      backend === undefined ? [reference, channel] : [reference, channel, backend],
    ),
  );
  return row ? rowToRecord(row) : null;
}

/**
 * One transaction: the row is locked (FOR UPDATE), folded in TypeScript by the same rule as the
 * memory store, and written back, so concurrent receipts for one delivery apply one after the other.
 * A receipt that moved the record writes its event; the caller has the sequencer number it.
 */
export async function applyReceipt(knex: Knex, id: string, receipt: IncomingReceipt, now: Date) {
  const applied = await knex.transaction(async (trx) => {
    const [row] = rows<DeliveryRow>(await trx.raw('SELECT * FROM deliveries WHERE id = ? FOR UPDATE', [id]));
    if (!row) return null;
    const fold = foldReceipt(rowToRecord(row), receipt, now);
    const c = fold.changes;
    const iso = (d: Date | null) => (d === null ? null : d.toISOString());
    const [updated] = rows<DeliveryRow>(
      await trx.raw(
        `UPDATE deliveries SET status = ?, failure = ?, receipts = ?::jsonb, delivered_at = ?,
           finished_at = ?, next_attempt_at = ?, updated_at = ?
         WHERE id = ? RETURNING *`,
        [
          c.status,
          c.failure,
          JSON.stringify(c.receipts.map(toStoredReceipt)),
          iso(c.deliveredAt),
          iso(c.finishedAt),
          iso(c.nextAttemptAt),
          c.updatedAt.toISOString(),
          id,
        ],
      ),
    );
    // Only a receipt that moved the record (status or cause) is a change to watch.
    if (fold.effect === 'applied') {
      await trx.raw(`${eventInsert('deliveries', '?::text')} WHERE id = ?`, [receiptReason(receipt), id]);
    }
    return { record: rowToRecord(updated!), fold };
  });
  return applied;
}
