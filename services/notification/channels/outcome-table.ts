/** Helpers shared by every driver's outcome table (email, SMS, push). */
import type { FailureKind, OutcomeClass, SendOutcome } from '../delivery/driver';
import type { SuppressionReason } from '../delivery/suppression';
import { cutText } from '../../../shared/text/cut';
import { storableLine } from '../../../shared/text/check';

/** A reply or status code pattern: an exact code (`550`) or a class (`'5xx'`). */
export type CodePattern = number | '2xx' | '3xx' | '4xx' | '5xx';

/** True when `code` matches `pattern`. */
export function codeMatches(pattern: CodePattern, code: number): boolean {
  return typeof pattern === 'number' ? pattern === code : Math.floor(code / 100) === Number(pattern[0]);
}

/** What a row of an outcome table decides. */
export interface OutcomeDecision {
  class: OutcomeClass;
  /** What the row means, for the reason stored with the attempt and for the README. */
  meaning: string;
  /** For permanent and recipient rows: the delivery's failure kind (Delivery.failure). */
  failure?: FailureKind;
  /**
   * For recipient rows: the provider says the recipient must not be contacted again; the worker adds
   * it to the suppression list with this reason.
   */
  suppress?: SuppressionReason;
}

/** The failure kind and suppression of a row, as SendOutcome fields (absent ones left out). */
export function rowVerdict(row: OutcomeDecision): Pick<SendOutcome, 'failure' | 'suppress'> {
  const out: Pick<SendOutcome, 'failure' | 'suppress'> = {};
  if (row.failure) out.failure = row.failure;
  if (row.suppress) out.suppress = row.suppress;
  return out;
}

const MAX_REASON = 300;

/**
 * Provider text made safe to store and show: control characters folded to spaces, `secrets`
 * replaced, lone surrogates replaced, cut to at most 300 characters and `...` (never inside a
 * surrogate pair: jsonb refuses half an emoji).
 */
export function safeText(text: string, secrets: readonly string[] = []): string {
  let out = text;
  for (const s of secrets) if (s !== '') out = out.split(s).join('[REDACTED]');
  out = storableLine(out);
  return out.length > MAX_REASON ? `${cutText(out, MAX_REASON)}...` : out;
}
