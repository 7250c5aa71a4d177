/**
 * The one E.164 rule: a telephone number in international format, `+` then 2 to 15 digits with no
 * leading zero and nothing else. Config fields, SMS sends and the suppression list all ask it.
 */
const E164 = /^\+[1-9]\d{1,14}$/;

/** True when `value` is an E.164 number such as `+15551234567`. */
export function isE164(value: string): boolean {
  return E164.test(value);
}
