/**
 * The contract between the channel-neutral delivery pipeline (services/notification/delivery) and the
 * provider drivers (services/notification/channels/{email,sms,push}). A driver speaks one provider's
 * wire protocol and classifies what the provider answered; the pipeline owns records, retries,
 * idempotency and leases. Drivers never touch the delivery store; the pipeline never parses a
 * provider's answer.
 */

import type { SuppressionReason } from './suppression';

/**
 * The delivery channels: the one list. Everything else that names channels derives from it (the
 * type below, validation, the routing section, Notify's channels, caps and digests, the wire maps
 * in rpc/channel-wire.ts), so a new channel is one entry here, its folder under channels/, its config
 * section and its registry in app.ts (plus its value in the proto enums, a wire change by nature).
 */
export const CHANNELS = ['email', 'sms', 'push'] as const;

/** One delivery channel. */
export type Channel = (typeof CHANNELS)[number];

/**
 * Where a delivery stands. A status only moves forward:
 * pending -> retrying* -> sent -> delivered | undelivered, or pending/retrying -> failed.
 * `sent` means the provider accepted the message (SMTP 250, API 202); only a provider receipt makes
 * it `delivered` (or `undelivered`).
 */
export type DeliveryStatus = 'pending' | 'retrying' | 'sent' | 'delivered' | 'undelivered' | 'failed';

/**
 * How one attempt ended, as the driver classifies the provider's answer (from its outcome table):
 * - `sent`: accepted by the provider.
 * - `retryable`: a transient failure (4xx SMTP reply, dropped connection, timeout, HTTP 5xx).
 * - `rate_limited`: retryable, with the provider's requested delay in `retryAfterMs` when it gave one.
 * - `permanent`: will never succeed for this message (5xx SMTP reply, HTTP 400/401/403).
 * - `recipient_failure`: permanent, and caused by the recipient (invalid number, unsubscribed, bounced
 *   mailbox); a later issue feeds these to the suppression list.
 */
export type OutcomeClass = 'sent' | 'retryable' | 'rate_limited' | 'permanent' | 'recipient_failure';

/**
 * Why a delivery ended FAILED, so a caller can prune dead device tokens and bad numbers without
 * parsing text. A driver sets it on a `permanent` or `recipient_failure` outcome from its outcome
 * table; the pipeline fills a default per class when the driver gave none (`recipient_invalid` for
 * recipient failures, `provider_rejected` for permanent ones) and sets `retries_exhausted` when the
 * last allowed attempt failed retryably.
 * - `recipient_invalid`: the address, number or token is malformed or does not exist.
 * - `recipient_unregistered`: a device token the provider no longer knows (app uninstalled).
 * - `recipient_unsubscribed`: the recipient opted out (SMS STOP, unsubscribed list).
 * - `recipient_suppressed`: the recipient is on the service's suppression list; no provider was
 *   contacted (set by the pipeline, never by a driver).
 * - `payload_rejected`: the message itself was refused (too large, malformed, content policy).
 * - `provider_auth`: our credentials were refused (API key, token, sender not allowed).
 * - `provider_rejected`: the provider refused for another permanent reason.
 * - `retries_exhausted`: every allowed attempt failed retryably.
 *
 * Causes a provider receipt reports after the provider accepted the message (the record is then
 * UNDELIVERED, or DELIVERED for a complaint made after delivery):
 * - `recipient_bounced`: the recipient's mailbox or carrier refused it (a bounce).
 * - `spam_complaint`: the recipient marked it as spam.
 * - `provider_undelivered`: the provider could not deliver it and named no more specific cause
 *   (dropped, carrier rejection).
 */
export type FailureKind =
  | 'recipient_invalid'
  | 'recipient_unregistered'
  | 'recipient_unsubscribed'
  | 'recipient_suppressed'
  | 'payload_rejected'
  | 'provider_auth'
  | 'provider_rejected'
  | 'retries_exhausted'
  | 'recipient_bounced'
  | 'spam_complaint'
  | 'provider_undelivered'
  /** Started attempts passed `max_attempts` without an outcome: each one's process died during it. */
  | 'worker_died';

/** Every failure kind, for validation. */
export const FAILURE_KINDS: readonly FailureKind[] = [
  'recipient_invalid',
  'recipient_unregistered',
  'recipient_unsubscribed',
  'recipient_suppressed',
  'payload_rejected',
  'provider_auth',
  'provider_rejected',
  'retries_exhausted',
  'recipient_bounced',
  'spam_complaint',
  'provider_undelivered',
  'worker_died',
];

/** The result of one attempt. */
export interface SendOutcome {
  class: OutcomeClass;
  /**
   * Why it failed for good, for `permanent` and `recipient_failure` outcomes (ignored on others);
   * the pipeline's default for the class when absent.
   */
  failure?: FailureKind;
  /** The provider's id for the accepted message (SMTP queue id / Message-ID, X-Message-Id, sid). */
  providerReference?: string;
  /**
   * Why it failed, safe to store and show to the caller: a short classification and the provider's
   * own message, never credentials, request bodies or stack traces.
   */
  reason?: string;
  /** The provider's own error code (SMTP reply code, HTTP status, API error code), when it gave one. */
  providerCode?: string;
  /**
   * On a `sent` outcome: the recipients the provider refused while it took the message for the
   * others (SMTP RCPT refusals), as the payload names them; `reason` then says so. The worker stores
   * them masked.
   */
  refusedRecipients?: string[];
  /** The delay the provider asked for (Retry-After), in milliseconds. */
  retryAfterMs?: number;
  /**
   * On a `recipient_failure`: the provider said the recipient must not be contacted again (SMS
   * 21610, FCM UNREGISTERED, APNs 410 / BadDeviceToken): the worker adds a suppression entry with
   * this reason when it records the failure.
   */
  suppress?: SuppressionReason;
}

/** What the pipeline tells a driver about the attempt it is making. */
export interface DriverSendContext {
  /** The delivery record's id (sent to providers that carry custom arguments). */
  deliveryId: string;
  /** 1 for the first attempt. */
  attempt: number;
  /** Aborted at the attempt timeout or when the process is shutting down. */
  signal: AbortSignal;
}

/**
 * One named backend of one channel, as the pipeline sees it. `P` is the channel's payload (for email
 * the prepared message, Message-ID included), stored as JSON in the delivery record so a restarted
 * process can send it again.
 *
 * `send` never throws for a provider's answer: every answer, timeout or connection failure is a
 * `SendOutcome`. A throw means a bug and is treated as `retryable` with a generic reason.
 */
export interface DeliveryDriver<P = unknown> {
  /** The backend's configured name. */
  readonly name: string;
  readonly channel: Channel;
  /** The driver kind (`smtp`, `http_api`, `sms_gateway`, ...), for metrics and logs. */
  readonly driver: string;
  send(payload: P, ctx: DriverSendContext): Promise<SendOutcome>;
  /**
   * Optional: sends many payloads in one call (one outcome per payload, in order; never throws for a
   * provider's answer). The worker sends the records it claimed together for such a backend through
   * it; `ctx` is the batch's (the first record's id and attempt number, one signal for all).
   */
  sendBatch?(payloads: readonly P[], ctx: DriverSendContext): Promise<SendOutcome[]>;
  /** Releases connections (pools, HTTP agents). */
  close(): Promise<void>;
}
