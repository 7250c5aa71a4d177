/**
 * On call (issue 28): the contract between the parts built in parallel. Domain types and ports only.
 *
 * - `schedules.ts` (helper O1): weekly rotations with hand-off time and time zone, overrides for a date
 *   range; implements `OnCallLookup`. Config `monitor.oncall.schedules`. RPC `WhoIsOnCall`.
 * - `escalation.ts` (helper O2): escalation policies (`monitor.oncall.escalation_policies`), the
 *   engine that pages step by step through the notification service's `Notify` (a required
 *   category) until the alert is acknowledged, once per step across replicas (the alerts area's
 *   notification log and the monitor's job leases); signed expiring acknowledgment links; short
 *   acknowledgment codes per page; implements `PageAcknowledger`.
 * - `inbound-sms.ts` (helper O3): the monitor's consumer of the notification service's inbound SMS
 *   stream; a reply `ACK <code>` calls `PageAcknowledger.acknowledgeByCode`.
 */

/** Who is on call on a schedule at an instant. */
export interface OnCallShift {
  schedule: string;
  /** A user id of the notification service's directory (the person paged). */
  userId: string;
  /** When this person's shift started and ends (the next hand-off or override boundary). */
  start: Date;
  end: Date;
  /** True when an override put this person on call. */
  override: boolean;
}

/** Reads the on-call schedules. */
export interface OnCallLookup {
  /** Who is on call on `schedule` at `at`; null when nobody is (an empty rotation). Unknown schedule: NotFoundError. */
  current(schedule: string, at: Date): OnCallShift | null;
  /** The shift after the one at `at` (who is next, and from when); null when none. */
  next(schedule: string, at: Date): OnCallShift | null;
  /** The configured schedule names. */
  names(): string[];
}

/** What an SMS acknowledgment answers. */
export type AckOutcome = 'acknowledged' | 'already_acknowledged' | 'refused';

/** Acknowledges the alert a page was about, from where the page arrived. */
export interface PageAcknowledger {
  /**
   * An SMS reply `ACK <code>` from `from` (E.164): acknowledges the alert of the page with that code
   * only when the page went to that very number and the code has not expired; anything else is
   * `refused` (a code of another alert, a number that was not paged, an unknown or expired code).
   * Recorded on the alert's timeline with who and how (`sms from +3460...`).
   */
  acknowledgeByCode(code: string, from: string): Promise<AckOutcome>;
}
