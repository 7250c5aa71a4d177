/**
 * The escalation engine's port to the notification service (implemented by the monitor's client of
 * it, notification/notification-client.ts): read a user's phones (GetUser) and page them (Notify
 * with a required category and an idempotency key). No wire types here.
 */

/** One page: Notify(user, category, data) with an idempotency key. */
export interface PageRequest {
  userId: string;
  category: string;
  /** Template data (strings only): see README "Escalation" for the variables. */
  data: Record<string, string>;
  /** The same key again returns the notification already made (nothing is sent twice). */
  idempotencyKey: string;
}

/** What the notification service did with a page. */
export interface PageResult {
  notificationId: string;
  /** Channels that got (or will get) something: `inbox`, `email`, `sms`, `push`. */
  channels: string[];
  /** False when the idempotency key returned an earlier notification. */
  created: boolean;
}

/** A failed call to the notification service. */
export class PagerError extends Error {
  constructor(
    message: string,
    /** The gRPC code name (e.g. `NOT_FOUND`, `UNAVAILABLE`). */
    readonly code: string,
    /** True when another attempt may help. */
    readonly retryable: boolean,
  ) {
    super(message);
    this.name = 'PagerError';
  }
}

/** The notification service, as the escalation engine sees it. */
export interface Pager {
  /** The user's phone numbers (E.164); PagerError `NOT_FOUND` for an unknown user. */
  userPhones(userId: string): Promise<string[]>;
  page(request: PageRequest): Promise<PageResult>;
}
