/**
 * The `push_driver_a` (FCM) outcome tables, as data: HTTP v1 answers are classified by the provider's
 * own code in `error.details[].errorCode` (a 429 is QUOTA_EXCEEDED there) and then the status; legacy
 * answers by the per-token `results[].error`. First matching row wins.
 */
import type { SendOutcome } from '../../delivery/driver';
import { retryAfterMs } from '../email/http-api-outcomes';
import { type CodePattern, codeMatches, type OutcomeDecision, rowVerdict, safeText } from '../outcome-table';

/** A row matched on an HTTP v1 answer. */
export interface FcmV1Row extends OutcomeDecision {
  status: CodePattern;
  /** The FcmError `errorCode` of `error.details[]`. */
  errorCode?: string;
  /** Matched against `error.message` (an invalid token is INVALID_ARGUMENT naming the token). */
  message?: RegExp;
}

/** HTTP v1 answers, most specific first. */
export const FCM_V1_OUTCOMES: readonly FcmV1Row[] = [
  { status: 200, class: 'sent', meaning: 'accepted' },
  {
    status: '4xx',
    errorCode: 'UNREGISTERED',
    class: 'recipient_failure',
    meaning: 'device token unregistered',
    failure: 'recipient_unregistered',
    suppress: 'unregistered_token',
  },
  {
    status: 400,
    errorCode: 'INVALID_ARGUMENT',
    message: /registration token/i,
    class: 'recipient_failure',
    meaning: 'invalid device token',
  },
  { status: '4xx', errorCode: 'SENDER_ID_MISMATCH', class: 'permanent', meaning: 'token of another sender' },
  {
    status: '4xx',
    errorCode: 'THIRD_PARTY_AUTH_ERROR',
    class: 'permanent',
    meaning: 'APNs or web push credentials refused',
  },
  { status: '4xx', errorCode: 'QUOTA_EXCEEDED', class: 'rate_limited', meaning: 'sending quota exceeded' },
  { status: '5xx', errorCode: 'UNAVAILABLE', class: 'retryable', meaning: 'provider unavailable' },
  { status: '5xx', errorCode: 'INTERNAL', class: 'retryable', meaning: 'provider internal error' },
  { status: 400, class: 'permanent', meaning: 'request refused' },
  { status: 401, class: 'permanent', meaning: 'access token refused' },
  { status: 403, class: 'permanent', meaning: 'sender not allowed' },
  { status: 404, class: 'recipient_failure', meaning: 'device token unregistered' },
  { status: 429, class: 'rate_limited', meaning: 'rate limited' },
  { status: '4xx', class: 'permanent', meaning: 'request refused' },
  { status: '5xx', class: 'retryable', meaning: 'provider error' },
];

/** Legacy per-token `error` values (https://firebase.google.com/docs/cloud-messaging/http-server-ref). */
export const FCM_LEGACY_RESULT_OUTCOMES: Readonly<Record<string, OutcomeDecision>> = {
  NotRegistered: {
    class: 'recipient_failure',
    meaning: 'device token unregistered',
    failure: 'recipient_unregistered',
    suppress: 'unregistered_token',
  },
  InvalidRegistration: { class: 'recipient_failure', meaning: 'invalid device token' },
  MissingRegistration: { class: 'recipient_failure', meaning: 'device token missing' },
  MismatchSenderId: { class: 'permanent', meaning: 'token of another sender' },
  MessageTooBig: { class: 'permanent', meaning: 'payload too large' },
  InvalidDataKey: { class: 'permanent', meaning: 'reserved data key' },
  InvalidTtl: { class: 'permanent', meaning: 'invalid ttl' },
  DeviceMessageRateExceeded: { class: 'rate_limited', meaning: 'too many messages to this device' },
  TopicsMessageRateExceeded: { class: 'rate_limited', meaning: 'too many messages to this topic' },
  Unavailable: { class: 'retryable', meaning: 'provider unavailable' },
  InternalServerError: { class: 'retryable', meaning: 'provider internal error' },
};

/** Legacy answers of the whole call (the per-token results only come with a 200). */
export const FCM_LEGACY_STATUS_OUTCOMES: readonly {
  status: CodePattern;
  class: OutcomeDecision['class'];
  meaning: string;
}[] = [
  { status: 200, class: 'sent', meaning: 'accepted' },
  { status: 400, class: 'permanent', meaning: 'request refused' },
  { status: 401, class: 'permanent', meaning: 'server key refused' },
  { status: 429, class: 'rate_limited', meaning: 'rate limited' },
  { status: '4xx', class: 'permanent', meaning: 'request refused' },
  { status: '5xx', class: 'retryable', meaning: 'provider error' },
];

/** Failures without an answer, and refusals before sending. */
export const FCM_ERROR_OUTCOMES = {
  timeout: { class: 'retryable', meaning: 'no answer in time' },
  connection: { class: 'retryable', meaning: 'connection failed' },
  aborted: { class: 'retryable', meaning: 'attempt aborted (timeout or shutdown)' },
  token_endpoint: { class: 'retryable', meaning: 'OAuth token endpoint unavailable' },
  token_refused: { class: 'permanent', meaning: 'OAuth token endpoint refused the service account' },
  payload_too_large: { class: 'permanent', meaning: 'payload over the 4 KB FCM limit' },
} as const satisfies Record<string, OutcomeDecision>;

interface V1Error {
  status?: string;
  message?: string;
  errorCode?: string;
}

/** `error` of an HTTP v1 error body: its status, message and the FcmError `errorCode`. */
export function parseV1Error(body: string): V1Error {
  try {
    const parsed = JSON.parse(body) as {
      error?: { status?: unknown; message?: unknown; details?: unknown };
    };
    const e = parsed.error ?? {};
    const details = Array.isArray(e.details) ? (e.details as Record<string, unknown>[]) : [];
    const code = details.map((d) => d?.errorCode).find((c): c is string => typeof c === 'string');
    return {
      status: typeof e.status === 'string' ? e.status : undefined,
      message: typeof e.message === 'string' ? e.message : undefined,
      errorCode: code,
    };
  } catch {
    return {};
  }
}

/** The row deciding an HTTP v1 answer. */
export function fcmV1Row(status: number, error: V1Error): FcmV1Row | undefined {
  const code = error.errorCode ?? error.status;
  return FCM_V1_OUTCOMES.find(
    (row) =>
      codeMatches(row.status, status) &&
      (row.errorCode === undefined || row.errorCode === code) &&
      (row.message === undefined || row.message.test(error.message ?? '')),
  );
}

/** Classifies an HTTP v1 answer; `secrets` are scrubbed from provider text. */
export function classifyFcmV1Answer(
  status: number,
  body: string,
  secrets: readonly string[] = [],
  headers: Record<string, string | string[] | undefined> = {},
): SendOutcome {
  if (status === 200) {
    let name: unknown;
    try {
      name = (JSON.parse(body) as { name?: unknown }).name;
    } catch {
      name = undefined;
    }
    return {
      class: 'sent',
      providerCode: '200',
      ...(typeof name === 'string' ? { providerReference: safeText(name) } : {}),
    };
  }
  const error = parseV1Error(body);
  const row = fcmV1Row(status, error) ?? { class: 'retryable', meaning: 'unexpected status' };
  const code = error.errorCode ?? error.status;
  const outcome: SendOutcome = {
    class: row.class,
    ...rowVerdict(row),
    providerCode: code ?? String(status),
    reason: `${row.meaning} (HTTP ${status}${code ? ` ${safeText(code)}` : ''})${
      error.message ? `: ${safeText(error.message, secrets)}` : ''
    }`,
  };
  // FCM asks for a delay with Retry-After on 429 QUOTA_EXCEEDED and 5xx: honoured as for the REST APIs.
  if (row.class === 'rate_limited' || row.class === 'retryable') {
    const delay = retryAfterMs(headers, Date.now());
    if (delay !== undefined) outcome.retryAfterMs = delay;
  }
  return outcome;
}

/** Classifies one token's legacy result. */
export function classifyFcmLegacyResult(result: { message_id?: unknown; error?: unknown }): SendOutcome {
  if (typeof result.message_id === 'string' || typeof result.message_id === 'number') {
    return { class: 'sent', providerReference: safeText(String(result.message_id)) };
  }
  const error = typeof result.error === 'string' ? result.error : 'unknown';
  const row = FCM_LEGACY_RESULT_OUTCOMES[error] ?? { class: 'permanent', meaning: 'refused' };
  return {
    class: row.class,
    ...rowVerdict(row),
    providerCode: safeText(error),
    reason: `${row.meaning} (${safeText(error)})`,
  };
}

/** Classifies a legacy call that failed as a whole. */
export function classifyFcmLegacyStatus(status: number): SendOutcome {
  const row = FCM_LEGACY_STATUS_OUTCOMES.find((r) => codeMatches(r.status, status)) ?? {
    class: 'retryable' as const,
    meaning: 'unexpected status',
  };
  return { class: row.class, providerCode: String(status), reason: `${row.meaning} (HTTP ${status})` };
}
