/**
 * Recording an attempt's outcome in the memory store: where a stored delivery becomes SENT, RETRYING
 * or FAILED (only under the caller's lease, only forward). The in-process counterpart of
 * database-outcomes.ts; InMemoryDeliveryStore calls it.
 */
import type { AttemptResult } from './store';
import { canTransition, type DeliveryRecord } from './types';
import { copy, type MemoryRecords } from './memory-records';
import type { MemoryLeaseQueue } from './memory-queue';
import type { MemoryDeliveryEventLog } from './memory-event-log';

/** The parts of the memory store an outcome touches. */
export interface MemoryOutcomeParts {
  records: MemoryRecords;
  queue: MemoryLeaseQueue;
  events: MemoryDeliveryEventLog;
}

/** Applies an attempt's result to the record `owner` holds the lease of; null when it no longer does. */
export function completeAttempt(
  { records, queue, events }: MemoryOutcomeParts,
  id: string,
  owner: string,
  result: AttemptResult,
): DeliveryRecord | null {
  const r = records.get(id);
  if (!r || r.leaseOwner !== owner || !canTransition(r.status, result.status)) return null;
  if (result.attempt) r.attempts.push({ ...result.attempt });
  r.status = result.status;
  r.nextAttemptAt = result.nextAttemptAt;
  r.backend = result.backend ?? r.backend;
  r.failure = result.status === 'failed' ? (result.failure ?? null) : null;
  r.lastError = (result.attempt ? result.attempt.error : result.lastError) ?? null;
  if (result.attempt?.providerReference !== undefined) r.providerReference = result.attempt.providerReference;
  r.leaseOwner = null;
  r.leaseExpiresAt = null;
  r.updatedAt = result.now;
  if (result.status === 'sent') r.sentAt = result.now;
  if (result.status === 'sent' || result.status === 'failed') {
    r.finishedAt = result.now;
    queue.dequeue(id);
  } else queue.schedule(r);
  events.append(r);
  return copy(r);
}
