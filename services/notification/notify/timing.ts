/**
 * When to notify (issue 26): the contract between the notify area's fan-out and the time rules
 * built beside it. Domain types and ports only; each part has its own home:
 *
 * - quiet hours: the users area keeps them on the user (`User.quietHours`) and `quietHoursEnd`
 *   (`../users/quiet-hours.ts`) says when a window covering an instant ends, in the user's zone;
 * - frequency caps: `CapLedger` (`./caps/`), per user and channel, atomic across replicas;
 * - digests: `DigestBook` (`./digest/`), the open digest per (caller, user, category, channel, key);
 * - scheduled sends, held and deferred lines and CancelNotification: the Notifier and its one
 *   runner of due work (`./schedule/`), which also releases held lines and flushes due digests.
 *
 * Every time here is a `Date`; stores that span replicas read "now" from the database.
 */
import type { Channel } from '../delivery/driver';

export type { QuietHours, QuietHoursEnd, QuietWindow } from '../users/types';
export { MAX_QUIET_WINDOWS, NO_QUIET_HOURS } from '../users/types';

/** A delivery channel a cap or digest applies to. */
export type TimedChannel = Channel;

/** The answer of a cap ledger. */
export type CapDecision =
  | { taken: true }
  | {
      taken: false;
      /** The cap that stopped it, as shown on the line: `sms 3/1h`. */
      cap: string;
      /** When a slot of every cap of the channel is free again (the deferral time). */
      nextFreeAt: Date;
    };

/**
 * Per-user frequency caps (`notify.caps`). `take` records one send of `channel` to `userId` at the
 * ledger's now against every cap of the channel, all or none, atomically across replicas (two
 * replicas taking the last slot at once: one gets it). Required categories and CRITICAL never ask.
 */
export interface CapLedger {
  take(userId: string, channel: TimedChannel): Promise<CapDecision>;
  /** DeleteUser: forgets the user's counts. */
  eraseUser(userId: string): Promise<void>;
}

/** One event for a digest. */
export interface DigestEvent {
  /** The caller (digests never mix callers). */
  scope: string;
  userId: string;
  category: string;
  channel: TimedChannel;
  /** The digest key: the category by default, or a data field's value (`notify.categories[].digest`). */
  key: string;
  /** The notification the event is (one event per notification and channel). */
  notificationId: string;
  /** The event's own time (its notification's creation): out-of-order events are bucketed by it. */
  occurredAt: Date;
  /** The event's data, as the digest template reads it (`events[i].data`). */
  data: Record<string, unknown>;
  /** The user's IANA time zone, for a `daily_at` window (absent or '': UTC). */
  timeZone?: string;
}

/** A digest taken for sending. */
export interface DueDigest {
  id: string;
  scope: string;
  userId: string;
  category: string;
  channel: TimedChannel;
  key: string;
  windowStart: Date;
  /** The events, oldest first by `occurredAt`. */
  events: { notificationId: string; occurredAt: Date; data: Record<string, unknown> }[];
}

/** Where a digest stands. */
export interface DigestState {
  id: string;
  /** open: taking events; sending: taken by the runner; sent; cancelled (every event taken out). */
  status: 'open' | 'sending' | 'sent' | 'cancelled';
  /** When it goes (the window's end, or at once when full; moved by `defer`). */
  flushAt: Date;
  count: number;
  /** The digest's delivery (or inbox message) once sent; null before, or when nothing went. */
  messageId: string | null;
  error: string | null;
}

/**
 * Open digests. `add` puts the event into the open digest of (scope, user, category, channel, key)
 * whose window holds `occurredAt` (creating it), exactly once per (notification, channel); a digest
 * at the category's `max_count` is due at once. Concurrent adds from any replica for one key make ONE
 * digest; an event added while its digest is being sent goes into the next one (never lost, never in
 * both).
 */
export interface DigestBook {
  add(event: DigestEvent): Promise<{ digestId: string; flushAt: Date }>;
  /** Takes up to `limit` due digests for `owner` (a lease of `leaseMs`): the one runner sends them. */
  claimDue(owner: string, leaseMs: number, limit: number): Promise<DueDigest[]>;
  /** Marks a taken digest sent (its delivery id, or null when nothing went), releasing the lease. */
  finish(digestId: string, owner: string, messageId: string | null, error: string | null): Promise<boolean>;
  /**
   * Puts a taken digest back, due at `until` (its send fell in the user's quiet hours, or a cap
   * deferred it); events arriving meanwhile still go into the next digest. False when the lease was lost.
   */
  defer(digestId: string, owner: string, until: Date): Promise<boolean>;
  /** One digest's state (GetNotification shows it on a digested line); null when unknown. */
  get(digestId: string): Promise<DigestState | null>;
  /** CancelNotification: takes the notification's events out of digests not yet taken; how many. */
  removeNotification(notificationId: string): Promise<number>;
  /** DeleteUser. */
  eraseUser(userId: string): Promise<void>;
}
