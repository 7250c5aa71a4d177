/**
 * Provider receipts: what a provider later says about a message it accepted (delivered, bounced,
 * undelivered, ...), and the one rule that folds a receipt into a delivery record. Both stores apply
 * receipts through `foldReceipt`, so the memory and the database store cannot disagree.
 *
 * The rules: a status only moves forward in the precedence pending < retrying < sent < delivered |
 * undelivered (`failed` is the pipeline's own final word and is never changed by a receipt); a receipt
 * whose provider event id is already in the history is a duplicate and changes nothing; every receipt
 * is kept in the history (bounded), duplicates marked, so support sees what the provider said.
 */
import type { DeliveryStatus, FailureKind } from './driver';
import type { DeliveryRecord } from './types';

/** Most receipts kept per delivery (one provider sends each event about three times). */
export const MAX_RECEIPTS_PER_DELIVERY = 32;

/** A receipt as a channel's webhook parsed it, already verified. */
export interface IncomingReceipt {
  /**
   * The provider's id of this event (SendGrid `sg_event_id`; for Twilio status callbacks, which have
   * none, `MessageSid:MessageStatus`): the same id twice is a duplicate.
   */
  eventId: string;
  /** The provider's own event name (`delivered`, `bounce`, `undelivered`, ...), bounded and safe. */
  event: string;
  /** Where the event puts the delivery; null when it says nothing about the status (`deferred`). */
  status: Extract<DeliveryStatus, 'sent' | 'delivered' | 'undelivered'> | null;
  /** The cause it reports (a bounce, a complaint); null for none. */
  failure: FailureKind | null;
  /** The provider's code (Twilio ErrorCode, SMTP status), when it gave one. */
  providerCode?: string;
  /** When the provider says the event happened, when it says so. */
  occurredAt?: Date;
}

/** What became of a receipt. */
export type ReceiptEffect =
  /** It moved the record (status or cause). */
  | 'applied'
  /** A receipt with the same event id was there already: nothing changed. */
  | 'duplicate'
  /** Verified and new, but behind the record's status (a late `sent` after `delivered`). */
  | 'ignored';

/** One entry of a record's receipt history. */
export interface DeliveryReceipt {
  eventId: string;
  event: string;
  status: IncomingReceipt['status'];
  failure: FailureKind | null;
  providerCode?: string;
  occurredAt?: Date;
  receivedAt: Date;
  effect: ReceiptEffect;
}

/** Order of the statuses a receipt compares; delivered and undelivered are both final. */
const RANK: Record<DeliveryStatus, number> = {
  pending: 0,
  retrying: 1,
  sent: 2,
  delivered: 3,
  undelivered: 3,
  failed: 3,
};

/** The fields a receipt may change. */
export type ReceiptChanges = Pick<
  DeliveryRecord,
  'status' | 'failure' | 'receipts' | 'deliveredAt' | 'finishedAt' | 'nextAttemptAt' | 'updatedAt'
>;

/** What folding a receipt into a record gives. */
export interface FoldResult {
  effect: ReceiptEffect;
  /** The record's new fields (its history always gains the receipt, unless full of duplicates). */
  changes: ReceiptChanges;
  /** The record's status before, for metrics (sent -> delivered latency). */
  previousStatus: DeliveryStatus;
}

/**
 * Folds `receipt`, received at `now`, into `record` (not mutated). A receipt that puts a queued
 * record (its acceptance not yet recorded) at delivered or undelivered also ends its queueing: the
 * provider has it, nothing must send it again.
 */
export function foldReceipt(
  record: Pick<DeliveryRecord, keyof ReceiptChanges | 'sentAt'>,
  receipt: IncomingReceipt,
  now: Date,
  limit = MAX_RECEIPTS_PER_DELIVERY,
): FoldResult {
  const changes: ReceiptChanges = {
    status: record.status,
    failure: record.failure,
    receipts: record.receipts,
    deliveredAt: record.deliveredAt,
    finishedAt: record.finishedAt,
    nextAttemptAt: record.nextAttemptAt,
    updatedAt: now,
  };
  let effect: ReceiptEffect;
  if (record.receipts.some((r) => r.eventId === receipt.eventId)) effect = 'duplicate';
  else if (
    // `sent` is the pipeline's own word (its attempt records the provider's id with it): a receipt
    // saying so moves nothing. Only a final receipt may overtake a queued record.
    receipt.status !== null &&
    receipt.status !== 'sent' &&
    RANK[receipt.status] > RANK[record.status]
  ) {
    effect = 'applied';
    changes.status = receipt.status;
    changes.nextAttemptAt = null;
    changes.finishedAt = record.finishedAt ?? now;
    changes.failure = receipt.failure;
    if (receipt.status === 'delivered') changes.deliveredAt = now;
  } else if (
    // A cause reported after the final status (a spam complaint on a delivered message) is kept once.
    receipt.failure !== null &&
    record.failure === null &&
    record.status === 'delivered' &&
    receipt.status === 'delivered'
  ) {
    effect = 'applied';
    changes.failure = receipt.failure;
  } else effect = 'ignored';

  const entry: DeliveryReceipt = {
    eventId: receipt.eventId,
    event: receipt.event,
    status: receipt.status,
    failure: receipt.failure,
    receivedAt: now,
    effect,
  };
  if (receipt.providerCode !== undefined) entry.providerCode = receipt.providerCode;
  if (receipt.occurredAt !== undefined) entry.occurredAt = receipt.occurredAt;
  changes.receipts = appendBounded(record.receipts, entry, limit);
  return { effect, changes, previousStatus: record.status };
}

/**
 * The history with `entry` added, at most `limit` long: a duplicate is kept only while there is room;
 * a new receipt makes room by dropping the oldest duplicate, else the oldest ignored receipt, else the
 * oldest one, so the receipts that moved the record stay longest.
 */
function appendBounded(
  history: readonly DeliveryReceipt[],
  entry: DeliveryReceipt,
  limit: number,
): DeliveryReceipt[] {
  if (history.length < limit) return [...history, entry];
  if (entry.effect === 'duplicate') return [...history];
  let drop = history.findIndex((r) => r.effect === 'duplicate');
  if (drop === -1) drop = history.findIndex((r) => r.effect === 'ignored');
  const kept = [...history];
  kept.splice(drop === -1 ? 0 : drop, 1);
  kept.push(entry);
  return kept;
}
