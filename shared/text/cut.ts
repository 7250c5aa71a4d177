/**
 * The one way text is shortened in this repository. A JavaScript string counts UTF-16 code units: an
 * emoji or a rare CJK character is two of them (a surrogate pair), and a cut between the two leaves a
 * lone surrogate. `JSON.stringify` writes that as `\ud83d`, which PostgreSQL's jsonb refuses (and a
 * UTF-8 encoder turns into U+FFFD), so one bad cut made a whole batch of writes fail. Every cut goes
 * through `cutText`, which never splits a pair.
 */

import { InvalidArgumentError } from '../errors';

/** How `cutText` measures `max`. */
export type TextUnit = 'code_unit' | 'code_point';

/** Options of `cutText`. */
export interface CutOptions {
  /**
   * `code_unit` (default): `max` counts UTF-16 code units, what `string.length` says (a column or
   * protocol limit in characters as JavaScript counts them). `code_point`: `max` counts Unicode code
   * points (what a reader sees as characters, combining marks aside).
   */
  unit?: TextUnit;
  /**
   * Appended when the text was cut (`…`, `...`), counted within `max`, so the result is never longer
   * than `max`. Default: none.
   */
  ellipsis?: string;
  /** `start` (default): keep the beginning of the text; `end`: keep its end (the ellipsis then leads). */
  keep?: 'start' | 'end';
}

function isHigh(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

function isLow(code: number): boolean {
  return code >= 0xdc00 && code <= 0xdfff;
}

/** Code units of the first `points` code points of `text` (all of it when it has fewer). */
function unitsOfPoints(text: string, points: number): number {
  let i = 0;
  for (let n = 0; n < points && i < text.length; n++) {
    i += isHigh(text.charCodeAt(i)) && i + 1 < text.length && isLow(text.charCodeAt(i + 1)) ? 2 : 1;
  }
  return i;
}

/** The length of `text` in `unit`s. */
export function textLength(text: string, unit: TextUnit = 'code_unit'): number {
  if (unit === 'code_unit') return text.length;
  let n = 0;
  for (let i = 0; i < text.length; n++) {
    i += isHigh(text.charCodeAt(i)) && i + 1 < text.length && isLow(text.charCodeAt(i + 1)) ? 2 : 1;
  }
  return n;
}

/**
 * `text` cut to at most `max` units (see CutOptions), never between the two halves of a surrogate
 * pair: a pair that does not fit is left out whole. Text that fits is returned as it is; a cut text
 * ends with `ellipsis` (begins with it when `keep` is `end`), counted within `max`; when `max` cannot
 * hold even the ellipsis, the ellipsis is cut too. A negative or fractional `max` counts as its
 * floor, at least 0.
 */
export function cutText(text: string, max: number, options: CutOptions = {}): string {
  const unit = options.unit ?? 'code_unit';
  const limit = Math.max(0, Math.floor(max));
  if (text.length <= limit) return text; // code points never outnumber code units
  if (unit === 'code_point' && textLength(text, unit) <= limit) return text;
  const ellipsis = options.ellipsis ?? '';
  const room = limit - textLength(ellipsis, unit);
  if (room < 0) return cutText(ellipsis, limit, { unit });
  if (options.keep === 'end') {
    let start = unit === 'code_unit' ? text.length - room : text.length - unitsOfLastPoints(text, room);
    // Never start between a high surrogate and its low half.
    if (start < text.length && isLow(text.charCodeAt(start)) && isHigh(text.charCodeAt(start - 1))) start++;
    return ellipsis + text.slice(start);
  }
  let end = unit === 'code_unit' ? room : unitsOfPoints(text, room);
  // Never end between a high surrogate and its low half.
  if (end > 0 && isHigh(text.charCodeAt(end - 1)) && isLow(text.charCodeAt(end))) end--;
  return text.slice(0, end) + ellipsis;
}

/** Code units of the last `points` code points of `text`. */
function unitsOfLastPoints(text: string, points: number): number {
  let start = text.length;
  for (let n = 0; n < points && start > 0; n++) {
    start -= start >= 2 && isLow(text.charCodeAt(start - 1)) && isHigh(text.charCodeAt(start - 2)) ? 2 : 1;
  }
  return text.length - start;
}

// A high surrogate not followed by a low one, or a low one not preceded by a high one.
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/**
 * `text` with every lone surrogate replaced by U+FFFD (what a UTF-8 encoder writes for it): text that
 * arrived broken (a provider's JSON may carry `"\ud83d"`) is stored as valid Unicode.
 */
export function wellFormed(text: string): string {
  return text.replace(LONE_SURROGATE, '\ufffd');
}

/**
 * Whether PostgreSQL can store `text`: no NUL (text and jsonb columns refuse it) and no lone
 * surrogate (it has no UTF-8 form; jsonb refuses its escape). A caller's text with either is bad
 * input to refuse with INVALID_ARGUMENT before it reaches a statement, which would fail as INTERNAL.
 */
export function isStorableText(text: string): boolean {
  return !text.includes('\u0000') && wellFormed(text) === text;
}

/**
 * The one refusal of text that is not storable (`isStorableText`): InvalidArgumentError on `field`,
 * its message naming `what` (default: the field).
 */
export function requireStorableText(text: string, field: string, what = field): void {
  if (!isStorableText(text))
    throw new InvalidArgumentError(
      `${what} must not contain NUL characters or broken text (a lone surrogate)`,
      field,
    );
}

// In JSON text, a NUL or lone-surrogate escape not itself escaped (`\\u0000` is a literal backslash
// followed by `u0000`, which is storable).
const UNSTORABLE_ESCAPE = /(?<!\\)(?:\\\\)*\\u(?:0000|d[89a-f][0-9a-f]{2})/i;

/**
 * Whether `json`, the output of `JSON.stringify`, holds text PostgreSQL's jsonb refuses: a NUL or a
 * lone surrogate, anywhere, keys included. `JSON.stringify` writes a surrogate pair as itself and
 * escapes only a lone half (`\ud800`), so a `\ud8..`-`\udf..` escape in its output is always a lone
 * one. A caller's free-form JSON object (a `google.protobuf.Struct` over Connect JSON can carry
 * `"\ud800"`) is checked with this before it is stored: jsonb would fail the whole statement, and
 * the caller would get INTERNAL for its own bad input.
 */
export function hasUnstorableText(json: string): boolean {
  return UNSTORABLE_ESCAPE.test(json);
}
