/**
 * The REST drivers' side of the one bounded outbound request (shared/http/outbound.ts: timeout, abort
 * signal, answer-size bound, no redirects; the `http_api` mailer and the `sms_gateway` SMS driver send
 * through it): their answer-size bound, and the outcome of a request that got no answer.
 */
import type { SendOutcome } from '../delivery/driver';
import type { OutcomeDecision } from './outcome-table';
import { DEFAULT_MAX_ANSWER_BYTES, type NoAnswer } from '../../../shared/http/outbound';

export { boundedRequest } from '../../../shared/http/outbound';
export type { BoundedRequest, HttpAnswer, NoAnswer } from '../../../shared/http/outbound';

/** The most of an answer's body a driver reads; the rest is never buffered. */
export const MAX_ANSWER_BYTES = DEFAULT_MAX_ANSWER_BYTES;

/**
 * The outcome of a request that got no answer, from the driver's own table of those cases (kept
 * beside the driver as data): the row's class, its meaning (with the socket error's code) as reason.
 */
export function noAnswerOutcome(
  table: Readonly<Record<NoAnswer['kind'], OutcomeDecision>>,
  why: NoAnswer,
): SendOutcome {
  const row = table[why.kind];
  return {
    class: row.class,
    reason: why.code ? `${row.meaning} (${why.code})` : row.meaning,
    providerCode: why.code ?? why.kind,
  };
}
