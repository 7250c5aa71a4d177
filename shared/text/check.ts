/**
 * The one check of a caller's text (an id, a key, a name, a title): its length in characters, its
 * control characters, and whether PostgreSQL can store it. "Characters" are Unicode code points
 * everywhere a caller's text is counted (an emoji or a rare CJK character is one, though it is two
 * UTF-16 units), so a limit means the same whatever the script. Every refusal is InvalidArgumentError
 * on the field with one wording: `<field> is required`, `<field> is longer than N characters`,
 * `<field> contains control characters`, and the storable-text message of `requireStorableText`.
 */
import { InvalidArgumentError } from '../errors';
import { requireStorableText, textLength, wellFormed } from './cut';

// Unicode's control characters (general category Cc): C0, DEL and C1. None belongs in an id, a key or
// a one-line name; they garble logs and pages, and NUL cannot be stored.
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;
// eslint-disable-next-line no-control-regex -- the same set, every occurrence
const CONTROLS = /[\u0000-\u001f\u007f-\u009f]/g;

/** Whether `text` holds a control character (Unicode category Cc: C0, DEL, C1). */
export function hasControlCharacters(text: string): boolean {
  return CONTROL.test(text);
}

/** `text` with each control character (see `hasControlCharacters`) replaced by `by` (default: removed). */
export function replaceControlCharacters(text: string, by = ''): string {
  return text.replace(CONTROLS, by);
}

// eslint-disable-next-line no-control-regex -- runs of the same set
const CONTROL_RUNS = /[\u0000-\u001f\u007f-\u009f]+/g;

/**
 * Someone else's text (a provider's reason, a relay's reply) as one storable line: each run of
 * control characters (line breaks included) folded to one space, trimmed, lone surrogates replaced by
 * U+FFFD (`wellFormed`). What it does not do: cut (see `cutText`).
 */
export function storableLine(text: string): string {
  return wellFormed(text.replace(CONTROL_RUNS, ' ').trim());
}

/**
 * Whether `text` has more than `max` characters (code points). Cheap for text whose UTF-16 length is
 * within `max`: code points never outnumber code units.
 */
export function longerThan(text: string, max: number): boolean {
  return text.length > max && textLength(text, 'code_point') > max;
}

/** What `checkText` asks of a text. */
export interface TextRule {
  /** Most characters (code points). */
  max: number;
  /**
   * `non_empty`: '' (and a value that is not a string) is refused as required; `non_blank`: so is
   * text of only white space. Default: '' passes.
   */
  required?: 'non_empty' | 'non_blank';
  /** `allow` for free text (a title, a body: line breaks and tabs are part of it). Default: refuse. */
  controls?: 'refuse' | 'allow';
}

/**
 * `value` when it keeps `rule`, else InvalidArgumentError on `field` (see the file comment). A value
 * that is not a string is refused as required. Checked in order: required, length, control
 * characters, storable (no NUL, no lone surrogate, whose UTF-8 form the driver would replace with
 * U+FFFD, making two different keys one).
 */
export function checkText(value: unknown, field: string, rule: TextRule): string {
  if (typeof value !== 'string') throw new InvalidArgumentError(`${field} is required`, field);
  if (rule.required !== undefined && (rule.required === 'non_blank' ? value.trim() : value) === '')
    throw new InvalidArgumentError(`${field} is required`, field);
  if (longerThan(value, rule.max))
    throw new InvalidArgumentError(`${field} is longer than ${rule.max} characters`, field);
  if (rule.controls !== 'allow' && hasControlCharacters(value))
    throw new InvalidArgumentError(`${field} contains control characters`, field);
  requireStorableText(value, field);
  return value;
}
