/**
 * The SMTP driver's outcome table: how a relay's reply (code and enhanced status code, RFC 3463), or
 * a failure without a reply (nodemailer's error code), classifies an attempt. Kept as data so the
 * README and the row-by-row tests read the same rules the driver applies. First matching row wins.
 */
import { type CodePattern, codeMatches, type OutcomeDecision, safeText } from '../outcome-table';
import type { SendOutcome } from '../../delivery/driver';

/** A row matched on the relay's reply. */
export interface SmtpReplyRow extends OutcomeDecision {
  reply: CodePattern;
  /** Prefix of the enhanced status code (`5.7.`, `4.7.28`); any when absent. */
  enhanced?: string;
}

/** A row matched on a failure that carries no reply (connection, timeout, TLS, ...). */
export interface SmtpErrorRow extends OutcomeDecision {
  /** nodemailer's error code (`ECONNECTION`, `ETIMEDOUT`, ...). */
  error: string;
}

/** Replies, most specific first. */
export const SMTP_REPLY_OUTCOMES: readonly SmtpReplyRow[] = [
  { reply: '2xx', class: 'sent', meaning: 'accepted by the relay' },
  // Providers' own "slow down" replies: retry, later rather than sooner.
  {
    reply: '4xx',
    enhanced: '4.7.28',
    class: 'rate_limited',
    meaning: 'rate limited by the receiver (Gmail)',
  },
  {
    reply: '4xx',
    enhanced: '4.7.650',
    class: 'rate_limited',
    meaning: 'rate limited by the receiver (Microsoft)',
  },
  { reply: 450, enhanced: '4.2.1', class: 'rate_limited', meaning: 'recipient receiving mail too fast' },
  { reply: 421, class: 'retryable', meaning: 'service not available, closing the connection' },
  { reply: '4xx', class: 'retryable', meaning: 'transient failure' },
  // RFC 5321 makes every 5yz permanent except 503: a bad command sequence on this connection, which a
  // new connection does not repeat.
  { reply: 503, class: 'retryable', meaning: 'bad sequence of commands' },
  // Policy (relay denied, spam block, authentication) is about the sender, not the mailbox.
  {
    reply: '5xx',
    enhanced: '5.7.',
    class: 'permanent',
    meaning: 'refused by policy',
    failure: 'provider_rejected',
  },
  {
    reply: 550,
    class: 'recipient_failure',
    meaning: 'mailbox unavailable',
    failure: 'recipient_invalid',
  },
  { reply: 551, class: 'recipient_failure', meaning: 'user not local', failure: 'recipient_invalid' },
  {
    reply: 553,
    class: 'recipient_failure',
    meaning: 'mailbox name not allowed',
    failure: 'recipient_invalid',
  },
  {
    reply: '5xx',
    enhanced: '5.1.',
    class: 'recipient_failure',
    meaning: 'bad destination address',
    failure: 'recipient_invalid',
  },
  // A full mailbox exists: the recipient (not the message) is the problem, but it is not invalid.
  {
    reply: 552,
    enhanced: '5.2.2',
    class: 'recipient_failure',
    meaning: 'mailbox full',
    failure: 'provider_rejected',
  },
  { reply: '5xx', class: 'permanent', meaning: 'permanent failure', failure: 'provider_rejected' },
  { reply: '3xx', class: 'retryable', meaning: 'unexpected intermediate reply' },
];

/** Failures without a reply. */
export const SMTP_ERROR_OUTCOMES: readonly SmtpErrorRow[] = [
  { error: 'ECONNECTION', class: 'retryable', meaning: 'connection closed unexpectedly' },
  { error: 'ESOCKET', class: 'retryable', meaning: 'connection failed' },
  { error: 'ETIMEDOUT', class: 'retryable', meaning: 'timed out' },
  { error: 'EDNS', class: 'retryable', meaning: 'relay host name did not resolve' },
  { error: 'ETLS', class: 'retryable', meaning: 'TLS or STARTTLS failed' },
  { error: 'EPROXY', class: 'retryable', meaning: 'proxy connection failed' },
  { error: 'EPROTOCOL', class: 'retryable', meaning: 'invalid reply from the relay' },
  { error: 'EABORT', class: 'retryable', meaning: 'attempt aborted (timeout or shutdown)' },
  { error: 'EMAXLIMIT', class: 'retryable', meaning: 'pool connection limit reached' },
  { error: 'EAUTH', class: 'permanent', meaning: 'authentication failed', failure: 'provider_auth' },
  {
    error: 'ENOAUTH',
    class: 'permanent',
    meaning: 'the relay requires credentials',
    failure: 'provider_auth',
  },
  {
    error: 'EREQUIRETLS',
    class: 'permanent',
    meaning: 'the relay does not support REQUIRETLS',
    failure: 'provider_rejected',
  },
  { error: 'EENVELOPE', class: 'permanent', meaning: 'invalid envelope', failure: 'recipient_invalid' },
  { error: 'EMESSAGE', class: 'permanent', meaning: 'message refused', failure: 'payload_rejected' },
];

/** What is not in the table: retried, so a surprise never loses a message without attempts left. */
export const SMTP_UNKNOWN_OUTCOME: OutcomeDecision = { class: 'retryable', meaning: 'unexpected failure' };

/** The parts of a nodemailer error the table reads. */
export interface SmtpFailure {
  code?: string;
  responseCode?: number;
  /** The relay's reply text, e.g. `451 4.7.1 Try again later`. */
  response?: string;
  /** For ETIMEDOUT: which wait ended (CONNECT_TIMEOUT, GREETING_TIMEOUT, SOCKET_TIMEOUT, ...). */
  timeoutType?: string;
}

const ENHANCED = /^\d{3}[ -]([245]\.\d{1,3}\.\d{1,3})\b/;

/** The row deciding a reply `code` with text `response`. */
export function smtpReplyRow(code: number, response = ''): SmtpReplyRow | undefined {
  const enhanced = ENHANCED.exec(response.trim())?.[1];
  return SMTP_REPLY_OUTCOMES.find(
    (row) =>
      codeMatches(row.reply, code) &&
      (row.enhanced === undefined || (enhanced !== undefined && matchesEnhanced(row.enhanced, enhanced))),
  );
}

/** Classifies a failed SMTP attempt. */
export function classifySmtpFailure(failure: SmtpFailure): SendOutcome {
  if (typeof failure.responseCode === 'number' && failure.responseCode >= 200) {
    const row = smtpReplyRow(failure.responseCode, failure.response) ?? SMTP_UNKNOWN_OUTCOME;
    const text = failure.response ? safeText(failure.response) : String(failure.responseCode);
    return {
      // A failure is never "sent", even when the relay's code was odd (a 2xx where 354 was due).
      class: row.class === 'sent' ? 'retryable' : row.class,
      reason: `${row.meaning}: ${text}`,
      providerCode: String(failure.responseCode),
      ...(row.failure ? { failure: row.failure } : {}),
    };
  }
  const code = failure.code ?? 'unknown';
  const row = SMTP_ERROR_OUTCOMES.find((r) => r.error === code) ?? SMTP_UNKNOWN_OUTCOME;
  const detail = failure.timeoutType ? `${code}, ${failure.timeoutType}` : code;
  return {
    class: row.class,
    reason: `${row.meaning} (${detail})`,
    providerCode: code,
    ...(row.failure ? { failure: row.failure } : {}),
  };
}

/** `5.7.` matches `5.7.1`; `4.7.28` matches only `4.7.28`. */
function matchesEnhanced(pattern: string, enhanced: string): boolean {
  return pattern.endsWith('.') ? enhanced.startsWith(pattern) : enhanced === pattern;
}
