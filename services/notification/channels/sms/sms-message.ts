/**
 * What an SMS is (`SmsPayload`, stored in the delivery record) and the checks every SMS passes before
 * anything is recorded or sent: an E.164 recipient and a body of 1 to 1,600 characters.
 */
import { InvalidArgumentError } from '../../../../shared/errors';
import { cutText } from '../../../../shared/text/cut';
import { isE164 } from '../../../../shared/text/e164';
import { longerThan } from '../../../../shared/text/check';

/** The stored payload of an SMS delivery: what every attempt sends, after a restart too. */
export interface SmsPayload {
  /** Recipient, E.164. */
  to: string;
  body: string;
  /**
   * Not written any more and ignored when present (records stored before drivers stamped their own
   * sender): the backend that sends an attempt always sends from its own `from_number`.
   */
  from?: string;
}

/** Longest body, in characters (Unicode code points): the Messages API's own limit (10 segments). */
export const MAX_SMS_BODY_CHARS = 1600;

// Line breaks and tabs are text; other control characters are not (NUL cannot even be stored).
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const CONTROL = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/;

/**
 * `value` if it is an E.164 number (`+` then 2 to 15 digits, no leading zero); InvalidArgumentError
 * naming `field` otherwise. The value is echoed only cut short, so a huge input cannot bloat the error.
 */
export function checkSmsNumber(value: unknown, field: string): string {
  if (typeof value !== 'string' || value === '') {
    throw new InvalidArgumentError(`${field} is required`, field);
  }
  if (!isE164(value)) {
    throw new InvalidArgumentError(
      `${field}: ${JSON.stringify(cutText(value, 32))} is not a telephone number in international (E.164) format such as +15551234567`,
      field,
    );
  }
  return value;
}

/** `value` if it is a sendable body; InvalidArgumentError naming `field` otherwise. */
export function checkSmsBody(value: unknown, field = 'body'): string {
  if (typeof value !== 'string' || value.trim() === '') {
    throw new InvalidArgumentError(`${field} is required`, field);
  }
  // Characters as a reader counts them: an emoji is one, not two UTF-16 units.
  if (longerThan(value, MAX_SMS_BODY_CHARS))
    throw new InvalidArgumentError(`${field} is longer than ${MAX_SMS_BODY_CHARS} characters`, field);
  if (CONTROL.test(value)) throw new InvalidArgumentError(`${field} contains control characters`, field);
  return value;
}

/** The shape check of a stored payload (a record written by another version, or tampered with). */
export function smsPayloadProblem(payload: unknown): string | undefined {
  if (typeof payload !== 'object' || payload === null) return 'not an object';
  const p = payload as Partial<SmsPayload>;
  if (typeof p.to !== 'string' || !isE164(p.to)) return 'to is not an E.164 number';
  if (typeof p.body !== 'string' || p.body === '') return 'body is missing';
  return undefined;
}
