/**
 * The escalation engine's port to the notification service (implemented by the monitor's client of
 * it, notification/notification-client.ts): read a user's phones (GetUser) and page them (Notify
 * with a required category and an idempotency key). No wire types here.
 */
import type { ErrorCodeName } from '../../../shared/http/errors';

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

/**
 * A failed call to the notification service. `code` is the Connect code name in snake_case, the
 * repository's one spelling of error codes (shared/http/errors.ts `ErrorCodeName`: `not_found`,
 * `unauthenticated`, `permission_denied`, `unavailable`...); it is what the escalation state and the
 * timeline record for a page that failed for good.
 */
export class PagerError extends Error {
  constructor(
    message: string,
    readonly code: ErrorCodeName,
    /** True when another attempt may help. */
    readonly retryable: boolean,
  ) {
    super(message);
    this.name = 'PagerError';
  }
}

/** The notification service, as the escalation engine sees it. */
export interface Pager {
  /** The user's phone numbers (E.164); PagerError `not_found` for an unknown user. */
  userPhones(userId: string): Promise<string[]>;
  page(request: PageRequest): Promise<PageResult>;
}
