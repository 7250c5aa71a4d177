/**
 * Provider receipts in the memory store: finding a delivery by its provider reference, and folding a
 * receipt into its record by the rule of receipt.ts. The in-process counterpart of
 * database-receipts.ts; InMemoryDeliveryStore calls these.
 */
import { receiptReason } from './events';
import { foldReceipt, type IncomingReceipt } from './receipt';
import type { AppliedReceipt } from './store';
import { QUEUED_STATUSES as QUEUED, type DeliveryRecord } from './types';
import { copy, newestFirst, type MemoryRecords } from './memory-records';
import type { MemoryOutcomeParts } from './memory-outcomes';

/** The newest record of a channel (and backend, when given) carrying the provider's reference. */
export function findByProviderReference(
  records: MemoryRecords,
  channel: DeliveryRecord['channel'],
  reference: string,
  backend?: string,
): DeliveryRecord | null {
  let found: DeliveryRecord | undefined;
  for (const r of records.byId.values()) {
    if (r.channel !== channel || r.providerReference !== reference) continue;
    if (backend !== undefined && r.backend !== backend) continue;
    if (found === undefined || newestFirst(r, found) < 0) found = r;
  }
  return found ? copy(found) : null;
}

/** Folds a receipt into record `id`; null when the record is gone. */
export function applyReceipt(
  { records, queue, events }: MemoryOutcomeParts,
  id: string,
  receipt: IncomingReceipt,
  now: Date,
): AppliedReceipt | null {
  const r = records.get(id);
  if (!r) return null;
  const fold = foldReceipt(r, receipt, now);
  Object.assign(r, fold.changes);
  // A receipt that ended a queued record takes it off the queue: the provider has the message.
  if (!QUEUED.includes(r.status)) queue.dequeue(id);
  if (fold.effect === 'applied') events.append(r, receiptReason(receipt));
  return { record: copy(r), fold };
}
