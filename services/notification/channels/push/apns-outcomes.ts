/**
 * The `push_driver_b` (APNs) outcome table: how an answer (HTTP status and the `reason` of its JSON
 * body) or a failure without an answer classifies an attempt. Data, so the README and the row-by-row
 * tests read the rules the driver applies. First matching row wins.
 */
import type { SendOutcome } from '../../delivery/driver';
import { type CodePattern, codeMatches, type OutcomeDecision, rowVerdict, safeText } from '../outcome-table';

/** A row matched on status and APNs `reason`. */
export interface ApnsRow extends OutcomeDecision {
  status: CodePattern;
  reason?: string;
}

/** Answers, most specific first. */
export const APNS_OUTCOMES: readonly ApnsRow[] = [
  { status: 200, class: 'sent', meaning: 'accepted' },
  {
    status: 410,
    class: 'recipient_failure',
    meaning: 'device token no longer active',
    failure: 'recipient_unregistered',
    suppress: 'unregistered_token',
  },
  {
    status: 400,
    reason: 'BadDeviceToken',
    class: 'recipient_failure',
    meaning: 'invalid device token',
    failure: 'recipient_invalid',
    suppress: 'invalid_recipient',
  },
  {
    status: 400,
    reason: 'DeviceTokenNotForTopic',
    class: 'recipient_failure',
    meaning: 'token of another app',
  },
  { status: 400, class: 'permanent', meaning: 'request refused' },
  { status: 403, reason: 'ExpiredProviderToken', class: 'retryable', meaning: 'provider token expired' },
  { status: 403, class: 'permanent', meaning: 'provider token or certificate refused' },
  { status: 413, class: 'permanent', meaning: 'payload too large' },
  { status: 429, class: 'rate_limited', meaning: 'too many requests for this device token' },
  { status: '4xx', class: 'permanent', meaning: 'request refused' },
  { status: '5xx', class: 'retryable', meaning: 'provider error' },
];

/** Failures without an answer. */
export const APNS_ERROR_OUTCOMES = {
  timeout: { class: 'retryable', meaning: 'no answer in time' },
  connection: { class: 'retryable', meaning: 'connection failed' },
  aborted: { class: 'retryable', meaning: 'attempt aborted (timeout or shutdown)' },
  payload_too_large: { class: 'permanent', meaning: 'payload over the 4 KB APNs limit' },
} as const satisfies Record<string, OutcomeDecision>;

/** The APNs `reason` of an error body; undefined when there is none. */
export function apnsReason(body: string): string | undefined {
  try {
    const parsed = JSON.parse(body) as { reason?: unknown };
    return typeof parsed.reason === 'string' ? parsed.reason : undefined;
  } catch {
    return undefined;
  }
}

/** The row deciding an answer. */
export function apnsRow(status: number, reason: string | undefined): ApnsRow | undefined {
  return APNS_OUTCOMES.find(
    (row) => codeMatches(row.status, status) && (row.reason === undefined || row.reason === reason),
  );
}

/** Classifies an answer; `apnsId` is the `apns-id` header. */
export function classifyApnsAnswer(status: number, body: string, apnsId: string | undefined): SendOutcome {
  const reason = status === 200 ? undefined : apnsReason(body);
  const row = apnsRow(status, reason) ?? { class: 'retryable', meaning: 'unexpected status' };
  const outcome: SendOutcome = {
    class: row.class,
    ...rowVerdict(row),
    providerCode: reason ?? String(status),
  };
  if (row.class === 'sent') {
    if (apnsId) outcome.providerReference = safeText(apnsId);
    return outcome;
  }
  outcome.reason = `${row.meaning} (HTTP ${status}${reason ? ` ${safeText(reason)}` : ''})`;
  return outcome;
}
