/**
 * The `http_api` driver's outcome table: how a SendGrid v3-compatible API's answer (HTTP status, and
 * the `errors[].field` it names) or a failure without an answer classifies an attempt. Kept as data so
 * the README and the row-by-row tests read the same rules the driver applies. First matching row wins.
 */
import type { SendOutcome } from '../../delivery/driver';
import type { HttpAnswer } from '../http-request';
import { type CodePattern, codeMatches, type OutcomeDecision, safeText } from '../outcome-table';

/** A row matched on the HTTP answer. */
export interface HttpApiStatusRow extends OutcomeDecision {
  status: CodePattern;
  /** Matches when one of the answer's `errors[].field` matches (the provider's own error code). */
  errorField?: RegExp;
}

/** Answers, most specific first. */
export const HTTP_API_STATUS_OUTCOMES: readonly HttpApiStatusRow[] = [
  { status: 202, class: 'sent', meaning: 'accepted for delivery' },
  { status: '2xx', class: 'sent', meaning: 'accepted' },
  // SendGrid names the personalization field of an address it refuses.
  {
    status: 400,
    errorField: /^personalizations\.\d+\.(?:to|cc|bcc)\b/,
    class: 'recipient_failure',
    meaning: 'recipient refused',
    failure: 'recipient_invalid',
  },
  { status: 400, class: 'permanent', meaning: 'request refused', failure: 'payload_rejected' },
  { status: 401, class: 'permanent', meaning: 'API key missing or invalid', failure: 'provider_auth' },
  { status: 403, class: 'permanent', meaning: 'API key not allowed to send', failure: 'provider_auth' },
  {
    status: 404,
    class: 'permanent',
    meaning: 'no such endpoint (check base_url)',
    failure: 'provider_rejected',
  },
  { status: 408, class: 'retryable', meaning: 'request timeout' },
  {
    status: 413,
    class: 'permanent',
    meaning: 'message too large for the API',
    failure: 'payload_rejected',
  },
  { status: 429, class: 'rate_limited', meaning: 'rate limited' },
  { status: '4xx', class: 'permanent', meaning: 'request refused', failure: 'provider_rejected' },
  { status: '5xx', class: 'retryable', meaning: 'provider error' },
  {
    status: '3xx',
    class: 'permanent',
    meaning: 'unexpected redirect (check base_url)',
    failure: 'provider_rejected',
  },
];

/** Failures without an answer. */
export const HTTP_API_ERROR_OUTCOMES = {
  timeout: { class: 'retryable', meaning: 'no answer within timeout_ms' },
  connection: { class: 'retryable', meaning: 'connection failed' },
  aborted: { class: 'retryable', meaning: 'attempt aborted (timeout or shutdown)' },
} as const satisfies Record<string, OutcomeDecision>;

/** The row deciding `status` with the answer's error fields. */
export function httpApiStatusRow(
  status: number,
  errorFields: readonly string[] = [],
): HttpApiStatusRow | undefined {
  return HTTP_API_STATUS_OUTCOMES.find(
    (row) =>
      codeMatches(row.status, status) &&
      (row.errorField === undefined || errorFields.some((f) => row.errorField!.test(f))),
  );
}

/**
 * Classifies an answer. `secrets` (the API key) are scrubbed from any text taken from the answer, in
 * case a provider echoes the request.
 */
export function classifyHttpApiAnswer(answer: HttpAnswer, secrets: readonly string[] = []): SendOutcome {
  const errors = parseErrors(answer.body);
  const row: OutcomeDecision =
    httpApiStatusRow(
      answer.status,
      errors.map((e) => e.field ?? ''),
    ) ?? ({ class: 'retryable', meaning: 'unexpected status' } satisfies OutcomeDecision);
  const outcome: SendOutcome = { class: row.class, providerCode: String(answer.status) };
  if (row.failure) outcome.failure = row.failure;
  if (row.class === 'sent') {
    const id = header(answer.headers, 'x-message-id');
    if (id) outcome.providerReference = safeText(id, secrets);
    return outcome;
  }
  const first = errors.map((e) => e.message).find((m): m is string => typeof m === 'string' && m !== '');
  outcome.reason = `${row.meaning} (HTTP ${answer.status})${first ? `: ${safeText(first, secrets)}` : ''}`;
  if (row.class === 'rate_limited' || row.class === 'retryable') {
    const delay = retryAfterMs(answer.headers, answer.receivedAt ?? Date.now());
    if (delay !== undefined) outcome.retryAfterMs = delay;
  }
  return outcome;
}

/**
 * The delay an answer asks for: `Retry-After` in seconds or as an HTTP date (RFC 9110); failing that,
 * SendGrid's `X-RateLimit-Reset` (epoch seconds). Undefined when neither is usable.
 */
export function retryAfterMs(headers: HttpAnswer['headers'], now: number): number | undefined {
  const value = header(headers, 'retry-after')?.trim();
  if (value) {
    if (/^\d+$/.test(value)) return Number(value) * 1000;
    // An HTTP date names its weekday and month; Date.parse alone would also read "-5" as a year.
    const at = /[A-Za-z]{3}/.test(value) ? Date.parse(value) : Number.NaN;
    if (!Number.isNaN(at)) return Math.max(0, at - now);
  }
  const reset = header(headers, 'x-ratelimit-reset')?.trim();
  if (reset && /^\d+$/.test(reset)) return Math.max(0, Number(reset) * 1000 - now);
  return undefined;
}

interface ApiError {
  message?: unknown;
  field?: string;
}

/** `errors` of a v3 error body; empty for anything else. */
function parseErrors(body: string): ApiError[] {
  if (!body.trimStart().startsWith('{')) return [];
  try {
    const parsed = JSON.parse(body) as { errors?: unknown };
    if (!Array.isArray(parsed.errors)) return [];
    return parsed.errors
      .filter((e): e is Record<string, unknown> => typeof e === 'object' && e !== null)
      .map((e) => ({ message: e.message, field: typeof e.field === 'string' ? e.field : undefined }));
  } catch {
    return []; // a cut or non-JSON body: the status alone decides
  }
}

function header(headers: HttpAnswer['headers'], name: string): string | undefined {
  const v = headers[name];
  return Array.isArray(v) ? v[0] : v;
}
