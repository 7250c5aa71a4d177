/**
 * The delivery event log: one event per status change of a delivery record (accepted, retrying,
 * sent, failed, a receipt's delivered / undelivered, suppressed at submit), written by the stores in
 * the same commit as the change, read by DeliveryWatchHub (WatchDeliveries). An event carries no
 * recipient and no content (personal data): the caller maps it to its message by delivery id, which it
 * got from the send.
 */
import type { Channel, DeliveryStatus, FailureKind } from './driver';
import type { DeliveryReceipt } from './receipt';
import type { DeliveryRecord } from './types';

/** One stored event; `seq` is its place in the log (gap-free, in commit order), the watch cursor. */
export interface DeliveryEvent {
  seq: number;
  deliveryId: string;
  /** The caller the delivery belongs to (as for GetDelivery): a watch only sees its own scope. */
  scope: string;
  channel: Channel;
  backend: string;
  status: DeliveryStatus;
  failure: FailureKind | null;
  /** The record's sanitised `last_error`, or for a receipt the provider's event and code. */
  reason: string | null;
  providerReference: string | null;
  occurredAt: Date;
}

/** An event before the log gives it its seq. */
export type NewDeliveryEvent = Omit<DeliveryEvent, 'seq'>;

/** What a watch wants; an empty or absent list means any. */
export interface DeliveryEventFilter {
  channels?: readonly Channel[];
  backends?: readonly string[];
  statuses?: readonly DeliveryStatus[];
}

/** A read of the log: sequenced events after `after`, oldest first, at most `limit`. */
export interface DeliveryEventQuery {
  /**
   * Only these scopes (one for a watcher's catch-up, the watched ones for the hub's read); null:
   * every scope (an operator's watch, the console's activity feed).
   */
  scopes: readonly string[] | null;
  after: number;
  limit: number;
  filter?: DeliveryEventFilter;
}

/** The event of a record as it is right after a change. */
export function eventOf(record: DeliveryRecord, reason: string | null = record.lastError): NewDeliveryEvent {
  return {
    deliveryId: record.id,
    scope: record.scope,
    channel: record.channel,
    backend: record.backend,
    status: record.status,
    failure: record.failure,
    reason,
    providerReference: record.providerReference,
    occurredAt: record.updatedAt,
  };
}

/** The reason text of a receipt's event: the provider's event name and code (`bounce (550)`). */
export function receiptReason(receipt: Pick<DeliveryReceipt, 'event' | 'providerCode'>): string {
  return receipt.providerCode ? `${receipt.event} (${receipt.providerCode})` : receipt.event;
}

/** True when an event passes a filter. */
export function matchesEventFilter(
  event: NewDeliveryEvent,
  filter: DeliveryEventFilter | undefined,
): boolean {
  if (!filter) return true;
  const { channels, backends, statuses } = filter;
  return (
    (!channels?.length || channels.includes(event.channel)) &&
    (!backends?.length || backends.includes(event.backend)) &&
    (!statuses?.length || statuses.includes(event.status))
  );
}
