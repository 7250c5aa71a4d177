/**
 * The `sms_gateway` driver's outcome table: how a Twilio-compatible Messages API's answer (HTTP
 * status, and the provider's numeric error `code`) or a failure without an answer classifies an
 * attempt. Kept as data so the README and the row-by-row tests read the same rules the driver
 * applies. First matching row wins.
 */
import type { SendOutcome } from '../../delivery/driver';
import { retryAfterMs } from '../email/http-api-outcomes';
import type { HttpAnswer } from '../http-request';
import { type CodePattern, codeMatches, type OutcomeDecision, rowVerdict, safeText } from '../outcome-table';

/** A row matched on the HTTP answer. */
export interface SmsGatewayStatusRow extends OutcomeDecision {
  status: CodePattern;
  /** Matches when the answer's numeric `code` is one of these (the provider's own error code). */
  codes?: readonly number[];
}

/** Answers, most specific first. */
export const SMS_GATEWAY_STATUS_OUTCOMES: readonly SmsGatewayStatusRow[] = [
  { status: 201, class: 'sent', meaning: 'accepted for delivery' },
  { status: '2xx', class: 'sent', meaning: 'accepted' },
  // The number itself is the problem: sending again to it can never succeed.
  { status: '4xx', codes: [21211], class: 'recipient_failure', meaning: 'invalid recipient number' },
  {
    status: '4xx',
    codes: [21610],
    class: 'recipient_failure',
    meaning: 'recipient unsubscribed (STOP)',
    failure: 'recipient_unsubscribed',
    suppress: 'unsubscribed',
  },
  { status: '4xx', codes: [21614], class: 'recipient_failure', meaning: 'recipient is not a mobile number' },
  { status: '4xx', codes: [21612], class: 'recipient_failure', meaning: 'recipient not reachable by SMS' },
  { status: 401, class: 'permanent', meaning: 'credentials refused (account_sid / auth_token)' },
  { status: 403, class: 'permanent', meaning: 'account not allowed to send' },
  { status: 404, class: 'permanent', meaning: 'no such endpoint or account (check base_url, account_sid)' },
  { status: 408, class: 'retryable', meaning: 'request timeout' },
  { status: 429, class: 'rate_limited', meaning: 'rate limited' },
  { status: '4xx', class: 'permanent', meaning: 'request refused' },
  { status: '5xx', class: 'retryable', meaning: 'provider error' },
  { status: '3xx', class: 'permanent', meaning: 'unexpected redirect (check base_url)' },
];

/** Failures without an answer. */
export const SMS_GATEWAY_ERROR_OUTCOMES = {
  timeout: { class: 'retryable', meaning: 'no answer within timeout_ms' },
  connection: { class: 'retryable', meaning: 'connection failed' },
  aborted: { class: 'retryable', meaning: 'attempt aborted (timeout or shutdown)' },
} as const satisfies Record<string, OutcomeDecision>;

/** The row deciding `status` with the answer's numeric error code. */
export function smsGatewayStatusRow(status: number, code?: number): SmsGatewayStatusRow | undefined {
  return SMS_GATEWAY_STATUS_OUTCOMES.find(
    (row) =>
      codeMatches(row.status, status) &&
      (row.codes === undefined || (code !== undefined && row.codes.includes(code))),
  );
}

/**
 * Classifies an answer. `secrets` (the auth token) are scrubbed from any text taken from the answer,
 * in case a provider echoes the request.
 */
export function classifySmsGatewayAnswer(answer: HttpAnswer, secrets: readonly string[] = []): SendOutcome {
  const parsed = parseBody(answer.body);
  const row =
    smsGatewayStatusRow(answer.status, parsed.code) ??
    ({ class: 'retryable', meaning: 'unexpected status' } satisfies OutcomeDecision);
  if (row.class === 'sent') {
    const outcome: SendOutcome = { class: 'sent', providerCode: String(answer.status) };
    if (parsed.sid) outcome.providerReference = safeText(parsed.sid, secrets);
    return outcome;
  }
  const outcome: SendOutcome = {
    class: row.class,
    ...rowVerdict(row),
    providerCode: parsed.code !== undefined ? String(parsed.code) : String(answer.status),
  };
  const code = parsed.code !== undefined ? ` code ${parsed.code}` : '';
  const message = parsed.message ? `: ${safeText(parsed.message, secrets)}` : '';
  outcome.reason = `${row.meaning} (HTTP ${answer.status}${code})${message}`;
  if (row.class === 'rate_limited' || row.class === 'retryable') {
    const delay = retryAfterMs(answer.headers, answer.receivedAt ?? Date.now());
    if (delay !== undefined) outcome.retryAfterMs = delay;
  }
  return outcome;
}

interface ParsedBody {
  sid?: string;
  code?: number;
  message?: string;
}

/** `sid` of a message resource, or `code` and `message` of an error body; empty for anything else. */
function parseBody(body: string): ParsedBody {
  if (!body.trimStart().startsWith('{')) return {};
  try {
    const parsed = JSON.parse(body) as Record<string, unknown>;
    if (typeof parsed !== 'object' || parsed === null) return {};
    const out: ParsedBody = {};
    if (typeof parsed.sid === 'string' && parsed.sid !== '') out.sid = parsed.sid;
    // Twilio sends the code as a number; a gateway that quotes it is read the same way.
    const code = typeof parsed.code === 'string' ? Number(parsed.code) : parsed.code;
    if (typeof code === 'number' && Number.isInteger(code)) out.code = code;
    if (typeof parsed.message === 'string' && parsed.message !== '') out.message = parsed.message;
    return out;
  } catch {
    return {}; // a cut or non-JSON body: the status alone decides
  }
}
