/**
 * Scrubbing of captured exceptions before they leave the process: the error tracker sends no
 * personal data (`send_default_pii: false`), and exception messages of a notification service are
 * where recipients end up ("invalid address jane@example.com"). Email addresses, phone numbers and
 * bearer tokens in the text are replaced; the stack keeps its frames only (its first line repeats
 * the message). Both are bounded.
 */

import { storableLine } from '../../../shared/text/check';
import { cutText, wellFormed } from '../../../shared/text/cut';

/** Longest message sent. */
export const MAX_MESSAGE_LENGTH = 1000;
/** Longest stack trace sent. */
export const MAX_STACK_LENGTH = 8192;
/** Longest exception type sent (the monitor's `type` limit is 256 characters). */
export const MAX_TYPE_LENGTH = 200;

const EMAIL = /[^\s@<>"'(),;:]+@[^\s@<>"'(),;:]+\.[^\s@<>"'(),;:]+/g;
// An international number, or a run of 7+ digits with the usual separators.
const PHONE = /\+?\d[\d ().-]{6,}\d/g;
const CREDENTIAL = /\b(bearer|token|key|secret|password)([=: ]+)[^\s)\]}>,;'"]+/gi;

/**
 * Bounded and storable: the monitor refuses (INVALID_ARGUMENT) a NUL or a lone surrogate in any text
 * of an exception, and a report it refuses is lost, so they are replaced here (a NUL by U+FFFD, as a
 * lone surrogate), never sent. An error's message is anyone's text: a provider's answer cut inside an
 * emoji, a NUL from a caller's input.
 */
function bound(text: string, max: number): string {
  return cutText(wellFormed(text.replaceAll('\u0000', '\ufffd')), max, { ellipsis: '…' });
}

/**
 * An error's type (its name) as the monitor takes it: one line, no control characters, storable,
 * bounded; `Error` when nothing is left.
 */
export function errorType(name: string): string {
  return cutText(storableLine(name), MAX_TYPE_LENGTH, { ellipsis: '…' }) || 'Error';
}

/** `text` without email addresses, phone numbers and credentials, bounded. */
export function scrubText(text: string): string {
  return bound(
    text.replace(EMAIL, '[email]').replace(PHONE, '[phone]').replace(CREDENTIAL, '$1$2[redacted]'),
    MAX_MESSAGE_LENGTH,
  );
}

/** The frames of a stack (`    at ...` lines), without the message line, bounded. */
export function stackFrames(stack: string | undefined): string {
  if (!stack) return '';
  const frames = stack.split('\n').filter((line) => /^\s+at /.test(line));
  return bound(frames.join('\n'), MAX_STACK_LENGTH);
}
