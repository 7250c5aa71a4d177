/**
 * The delivery record and the shapes the pipeline, its stores and the RPC layer share. No wire
 * types here: `rpc/` translates these to protobuf messages.
 */
import { CHANNELS, type Channel, type DeliveryStatus, type FailureKind, type OutcomeClass } from './driver';
import type { DeliveryReceipt } from './receipt';

export type { Channel, DeliveryStatus, FailureKind, OutcomeClass };

/** Every channel, for validation (defined once, in driver.ts). */
export { CHANNELS };

/** Every status, in the order a delivery moves through them. */
export const DELIVERY_STATUSES: readonly DeliveryStatus[] = [
  'pending',
  'retrying',
  'sent',
  'delivered',
  'undelivered',
  'failed',
];

/** `last_error` of a delivery the suppression list stopped (no provider was contacted). */
export const SUPPRESSED_ERROR = 'recipient is on the suppression list; no provider was contacted';

/** Statuses a worker still has to act on. */
export const QUEUED_STATUSES: readonly DeliveryStatus[] = ['pending', 'retrying'];

/** Statuses after which the pipeline never sends again. */
export const FINAL_STATUSES: readonly DeliveryStatus[] = ['sent', 'delivered', 'undelivered', 'failed'];

const NEXT: Record<DeliveryStatus, readonly DeliveryStatus[]> = {
  pending: ['retrying', 'sent', 'failed'],
  retrying: ['retrying', 'sent', 'failed'],
  sent: ['delivered', 'undelivered'],
  delivered: [],
  undelivered: [],
  failed: [],
};

/** True when a delivery may move from `from` to `to`: a status only moves forward. */
export function canTransition(from: DeliveryStatus, to: DeliveryStatus): boolean {
  return NEXT[from].includes(to);
}

/** One attempt as the record keeps it. */
export interface DeliveryAttempt {
  /** 1 for the first. */
  number: number;
  startedAt: Date;
  durationMs: number;
  outcome: OutcomeClass;
  /**
   * The backend this attempt went through (failover can move a delivery between backends). Absent in
   * attempts recorded before routing existed: those went through the record's backend.
   */
  backend?: string;
  /**
   * Sanitised, bounded reason; absent when sent, unless the provider refused some recipients while it
   * took the message for the others (`accepted for 2 recipients, refused for 1`).
   */
  error?: string;
  /** Those refused recipients, masked (`maskRecipient`); absent when none. */
  refusedRecipients?: string[];
  providerReference?: string;
  providerCode?: string;
}

/** A delivery record as stored. */
export interface DeliveryRecord {
  /** UUID. */
  id: string;
  channel: Channel;
  /**
   * The backend's configured name: the one the last attempt went through, or the one the next
   * attempt is queued for (failover moves it; the attempts keep each attempt's own backend).
   */
  backend: string;
  /**
   * True when the caller named the backend: such a delivery only ever uses that backend (no
   * failover, no round robin).
   */
  backendPinned: boolean;
  /**
   * Why it FAILED or was UNDELIVERED (a receipt's cause); on a DELIVERED record, a complaint the
   * recipient made afterwards (spam, unsubscribe); null otherwise.
   */
  failure: FailureKind | null;
  /** The full recipient, for sending; null once the content retention erased it. */
  recipient: string | null;
  /** The recipient as responses and logs show it (`j***@example.com`). */
  maskedRecipient: string;
  /** The caller the idempotency key belongs to. */
  scope: string;
  idempotencyKey: string | null;
  /** sha256 (hex) of the canonical JSON of channel, backend, recipient and payload. */
  contentHash: string;
  /** What to send (the channel's payload); null once erased. */
  payload: unknown;
  status: DeliveryStatus;
  attempts: DeliveryAttempt[];
  /** When a worker may next try; null when final. */
  nextAttemptAt: Date | null;
  lastError: string | null;
  providerReference: string | null;
  leaseOwner: string | null;
  leaseExpiresAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
  sentAt: Date | null;
  deliveredAt: Date | null;
  /** When it reached a final status. */
  finishedAt: Date | null;
  /** When the content retention erased payload and recipient. */
  contentErasedAt: Date | null;
  /** What providers reported after accepting it, oldest first (bounded; duplicates marked). */
  receipts: DeliveryReceipt[];
  /** W3C traceparent of the call that submitted it; attempt spans are its children. Null: none. */
  traceParent: string | null;
  /**
   * Recipients left out because they are on the suppression list (masked), when a send to several
   * (an email's to, cc, bcc) went to the others; empty otherwise. A send stopped as a whole is
   * FAILED with failure `recipient_suppressed` instead.
   */
  suppressedRecipients: string[];
  /**
   * Attempts started: raised when a worker claims the record (not when the attempt ends), so an
   * attempt cut off by a crash still counts. Above `max_attempts` the record ends FAILED
   * (`worker_died`) instead of being sent again.
   */
  attemptsStarted: number;
  /** The user a Notify fan-out sent it to (DeleteUser erases it); absent or null: none. */
  userId?: string | null;
  /** The Notify category a fan-out sent it for; absent or null: a direct send. */
  category?: string | null;
}

/** A record without what was sent: what get/list hand to callers (responses, admin pages, logs). */
export type DeliveryView = Omit<
  DeliveryRecord,
  'recipient' | 'payload' | 'leaseOwner' | 'leaseExpiresAt' | 'traceParent' | 'attemptsStarted'
>;

/** Strips the content and lease bookkeeping from a record. */
export function toView(record: DeliveryRecord): DeliveryView {
  // eslint-disable-next-line @typescript-eslint/no-unused-vars
  const { recipient, payload, leaseOwner, leaseExpiresAt, traceParent, attemptsStarted, ...view } = record;
  return view;
}

/** Filters of a delivery listing; every field narrows it. */
export interface DeliveryFilter {
  channel?: Channel;
  status?: DeliveryStatus;
  backend?: string;
  failure?: FailureKind;
  /** Only this caller's deliveries (the RPC layer passes the caller scope when it wants that). */
  scope?: string;
  /** Only deliveries a Notify fan-out sent to this user (the console's activity feed). */
  userId?: string;
  /** Only deliveries a Notify fan-out sent for this category. */
  category?: string;
  /**
   * Only deliveries to this recipient, normalised with `normaliseRecipient` (an email matches any
   * address of a record's list); a record whose recipient the retention erased no longer matches.
   */
  recipientKey?: string;
  /** Only this delivery (whether one record passes the other filters: the console's live feed). */
  id?: string;
}

/** Position in the newest-first listing: the last row of the previous page. */
export interface DeliveryPageKey {
  /** ISO-8601 UTC, millisecond precision (the store keeps what the pipeline clock gave). */
  createdAt: string;
  id: string;
}
