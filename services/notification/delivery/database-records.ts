/**
 * The delivery table's rows and their mapping to DeliveryRecord and DeliveryView (receipts and
 * attempts are stored as jsonb with ISO times). Used by DatabaseDeliveryStore.
 */
import { toView, type DeliveryAttempt, type DeliveryRecord, type DeliveryView } from './types';
import type { DeliveryReceipt } from './receipt';
import { toDate } from '../../../shared/storage/database';

export interface StoredReceipt extends Omit<DeliveryReceipt, 'receivedAt' | 'occurredAt'> {
  receivedAt: string;
  occurredAt?: string;
}

export function toStoredReceipt(r: DeliveryReceipt): StoredReceipt {
  const { receivedAt, occurredAt, ...rest } = r;
  const stored: StoredReceipt = { ...rest, receivedAt: receivedAt.toISOString() };
  if (occurredAt !== undefined) stored.occurredAt = occurredAt.toISOString();
  return stored;
}

export function fromStoredReceipt(r: StoredReceipt): DeliveryReceipt {
  const { receivedAt, occurredAt, ...rest } = r;
  const receipt: DeliveryReceipt = { ...rest, receivedAt: new Date(receivedAt) };
  if (occurredAt !== undefined) receipt.occurredAt = new Date(occurredAt);
  return receipt;
}

export interface StoredAttempt {
  number: number;
  startedAt: string;
  durationMs: number;
  outcome: DeliveryAttempt['outcome'];
  backend?: string;
  error?: string;
  providerReference?: string;
  providerCode?: string;
}

export interface DeliveryRow {
  id: string;
  channel: DeliveryRecord['channel'];
  backend: string;
  backend_pinned: boolean;
  failure: DeliveryRecord['failure'];
  recipient: string | null;
  masked_recipient: string;
  scope: string;
  idempotency_key: string | null;
  content_hash: string;
  payload: unknown;
  status: DeliveryRecord['status'];
  attempts: StoredAttempt[] | string;
  next_attempt_at: Date | string | null;
  last_error: string | null;
  provider_reference: string | null;
  lease_owner: string | null;
  lease_expires_at: Date | string | null;
  created_at: Date | string;
  updated_at: Date | string;
  sent_at: Date | string | null;
  delivered_at: Date | string | null;
  finished_at: Date | string | null;
  content_erased_at: Date | string | null;
  trace_parent: string | null;
  suppressed_recipients?: string[] | string | null;
  /** Absent only in rows read before the receipts migration ran. */
  receipts?: StoredReceipt[] | string;
  /** Absent only in rows read before migration 20261126120000 ran. */
  attempts_started?: number;
  /** Absent only in rows read before migration 20261127000300 ran. */
  user_id?: string | null;
  /** Absent only in rows read before migration 20261129000000 ran. */
  category?: string | null;
}

export function toDateOrNull(value: Date | string | null): Date | null {
  return value === null ? null : toDate(value);
}

export function rowToRecord(row: DeliveryRow): DeliveryRecord {
  const attempts =
    typeof row.attempts === 'string' ? (JSON.parse(row.attempts) as StoredAttempt[]) : row.attempts;
  return {
    id: row.id,
    channel: row.channel,
    backend: row.backend,
    backendPinned: row.backend_pinned,
    failure: row.failure,
    recipient: row.recipient,
    maskedRecipient: row.masked_recipient,
    scope: row.scope,
    idempotencyKey: row.idempotency_key,
    contentHash: row.content_hash,
    payload: row.payload,
    status: row.status,
    attempts: attempts.map((a) => ({ ...a, startedAt: new Date(a.startedAt) })),
    nextAttemptAt: toDateOrNull(row.next_attempt_at),
    lastError: row.last_error,
    providerReference: row.provider_reference,
    leaseOwner: row.lease_owner,
    leaseExpiresAt: toDateOrNull(row.lease_expires_at),
    createdAt: toDate(row.created_at),
    updatedAt: toDate(row.updated_at),
    sentAt: toDateOrNull(row.sent_at),
    deliveredAt: toDateOrNull(row.delivered_at),
    finishedAt: toDateOrNull(row.finished_at),
    contentErasedAt: toDateOrNull(row.content_erased_at),
    traceParent: row.trace_parent ?? null,
    suppressedRecipients:
      typeof row.suppressed_recipients === 'string'
        ? (JSON.parse(row.suppressed_recipients) as string[])
        : (row.suppressed_recipients ?? []),
    receipts: (typeof row.receipts === 'string'
      ? (JSON.parse(row.receipts) as StoredReceipt[])
      : (row.receipts ?? [])
    ).map(fromStoredReceipt),
    attemptsStarted: row.attempts_started ?? attempts.length,
    userId: row.user_id ?? null,
    category: row.category ?? null,
  };
}

/** The columns of a DeliveryView (ListDeliveries): no content, lease, trace or receipts. */
export const VIEW_COLUMNS = `id, channel, backend, backend_pinned, failure, masked_recipient, scope, idempotency_key,
  content_hash, status, attempts, next_attempt_at, last_error, provider_reference, created_at, updated_at,
  sent_at, delivered_at, finished_at, content_erased_at, suppressed_recipients, user_id, category`;

export type ViewRow = Omit<
  DeliveryRow,
  'recipient' | 'payload' | 'lease_owner' | 'lease_expires_at' | 'trace_parent' | 'receipts'
>;

export function rowToView(row: ViewRow): DeliveryView {
  return toView(
    rowToRecord({
      ...row,
      recipient: null,
      payload: null,
      lease_owner: null,
      lease_expires_at: null,
      trace_parent: null,
      receipts: [],
    }),
  );
}
