/**
 * One message's timeline (the console's activity section): what happened to a delivery, oldest
 * first, built from what the record keeps (its attempts, its receipts, its times) and from the
 * notification it was sent for, if any (held for quiet hours, digested, throttled, cancelled,
 * scheduled). Pure: the section reads the records and this only arranges them. Every text is what
 * the records already hold (sanitised reasons, masked recipients), never content or a full address.
 */
import type { DeliveryView } from '../../../delivery';
import type { NotificationView } from '../../../notify/notifier';

/** One entry: when, what, and the kind's own fields (snake_case, as the JSON answer shows them). */
export interface TimelineEntry {
  at: string;
  kind: string;
  [field: string]: unknown;
}

const iso = (d: Date | null | undefined): string | null => (d ? d.toISOString() : null);

/** The delivery's own entries (without the notification's), in the order they happened. */
export function deliveryEntries(d: DeliveryView): TimelineEntry[] {
  const out: TimelineEntry[] = [];
  const firstBackend = d.attempts[0]?.backend ?? d.backend;
  out.push({ at: d.createdAt.toISOString(), kind: 'submitted', channel: d.channel, backend: firstBackend });
  if (d.failure === 'recipient_suppressed' && d.attempts.length === 0) {
    out.push({ at: d.createdAt.toISOString(), kind: 'suppressed', reason: d.lastError, recipients: [] });
  } else if (d.suppressedRecipients.length > 0) {
    out.push({
      at: d.createdAt.toISOString(),
      kind: 'suppressed',
      reason: 'left out: on the suppression list',
      recipients: [...d.suppressedRecipients],
    });
  }
  let previous: string | undefined;
  for (const a of d.attempts) {
    const backend = a.backend ?? d.backend;
    const at = a.startedAt.toISOString();
    if (previous !== undefined && backend !== previous) {
      out.push({ at, kind: 'failover', from: previous, to: backend });
    }
    previous = backend;
    out.push({
      at,
      kind: 'attempt',
      number: a.number,
      backend,
      duration_ms: a.durationMs,
      outcome: a.outcome,
      reason: a.error ?? null,
      provider_code: a.providerCode ?? null,
      ...(a.refusedRecipients?.length ? { refused_recipients: [...a.refusedRecipients] } : {}),
    });
  }
  if (d.sentAt) out.push({ at: d.sentAt.toISOString(), kind: 'sent', backend: d.backend });
  for (const r of d.receipts) {
    out.push({
      at: (r.occurredAt ?? r.receivedAt).toISOString(),
      kind: 'receipt',
      event: r.event,
      status: r.status,
      failure: r.failure,
      provider_code: r.providerCode ?? null,
      effect: r.effect,
      received_at: r.receivedAt.toISOString(),
    });
  }
  if (d.status === 'delivered' && d.deliveredAt) {
    out.push({ at: d.deliveredAt.toISOString(), kind: 'delivered' });
  } else if (d.status === 'undelivered') {
    out.push({ at: iso(d.finishedAt) ?? d.updatedAt.toISOString(), kind: 'undelivered', failure: d.failure });
  } else if (d.status === 'failed' && d.failure !== 'recipient_suppressed') {
    out.push({
      at: iso(d.finishedAt) ?? d.updatedAt.toISOString(),
      kind: 'failed',
      failure: d.failure,
      reason: d.lastError,
    });
  }
  return out;
}

/**
 * The notification's entries: scheduled, and per line (only `channel`'s when given) held for quiet
 * hours, digested, throttled, suppressed, skipped; cancelled. A line keeps no time of its own, so
 * its entries stand at the notification's creation (held ones say until when).
 */
export function notificationEntries(n: NotificationView, channel?: string): TimelineEntry[] {
  const created = n.createdAt.toISOString();
  const out: TimelineEntry[] = [{ at: created, kind: 'notified', category: n.category }];
  if (n.sendAt) out.push({ at: created, kind: 'scheduled', send_at: n.sendAt.toISOString() });
  for (const line of n.channels) {
    if (channel !== undefined && line.channel !== channel) continue;
    const base = { channel: line.channel, contact: line.contact };
    if (line.heldUntil || line.holdReason) {
      out.push({
        at: created,
        kind: line.holdReason === 'cap_deferred' ? 'held' : 'held_quiet_hours',
        ...base,
        reason: line.holdReason ?? null,
        until: iso(line.heldUntil ?? null),
      });
    }
    if (line.digestId) out.push({ at: created, kind: 'digested', ...base, digest_id: line.digestId });
    if (line.skipped === 'throttled') {
      out.push({ at: created, kind: 'throttled', ...base, by: line.throttledBy ?? null });
    } else if (line.skipped === 'suppressed') {
      out.push({ at: created, kind: 'suppressed', ...base, reason: line.error ?? 'on the suppression list' });
    } else if (line.skipped !== null && line.skipped !== 'cancelled') {
      out.push({ at: created, kind: 'skipped', ...base, reason: line.skipped, error: line.error });
    }
  }
  if (n.status === 'cancelled') out.push({ at: n.updatedAt.toISOString(), kind: 'cancelled' });
  return out;
}

/** Oldest first; entries at the same instant keep the order they were built in (stable sort). */
export function byTime(entries: TimelineEntry[]): TimelineEntry[] {
  return entries
    .map((e, i) => ({ e, i, t: Date.parse(e.at) }))
    .sort((a, b) => a.t - b.t || a.i - b.i)
    .map(({ e }) => e);
}

/** A delivery's timeline, with its notification's entries for its channel woven in. */
export function deliveryTimeline(d: DeliveryView, notification: NotificationView | null): TimelineEntry[] {
  const own = deliveryEntries(d);
  if (!notification) return own;
  // The notification's entries come before the delivery's at the same instant (it caused them).
  return byTime([...notificationEntries(notification, d.channel), ...own]);
}

/** The summary of a notification a timeline shows beside it. */
export function notificationSummary(n: NotificationView): Record<string, unknown> {
  return {
    id: n.id,
    user_id: n.userId,
    topic: n.topic,
    parent_id: n.parentId,
    category: n.category,
    priority: n.priority,
    status: n.status,
    send_at: iso(n.sendAt),
    created_at: n.createdAt.toISOString(),
    updated_at: n.updatedAt.toISOString(),
    channels: n.channels.map((l) => ({
      channel: l.channel,
      contact: l.contact,
      message_id: l.messageId,
      skipped: l.skipped,
      error: l.error,
      delivery_status: l.deliveryStatus,
      held_until: iso(l.heldUntil ?? null),
      hold_reason: l.holdReason ?? null,
      throttled_by: l.throttledBy ?? null,
      digest_id: l.digestId ?? null,
    })),
  };
}
