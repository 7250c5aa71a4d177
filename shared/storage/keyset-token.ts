/**
 * The opaque page token of a keyset listing (newest first by creation time, then id): base64url JSON
 * of the last row's key and a short hash of what the token is bound to (a user, a filter), so a
 * token is useless elsewhere: replayed under another binding it would silently skip or repeat rows.
 * One home for the inbox's and the delivery listing's tokens.
 */
import { createHash } from 'node:crypto';
import { InvalidArgumentError } from '../errors';
import { isUuid } from '../runtime/ids';

/** The position in a listing: the last row's creation time (ISO 8601, UTC) and id (a UUID). */
export interface KeysetKey {
  createdAt: string;
  id: string;
}

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?Z$/;
/** Tokens are short; a longer one is garbage and is refused before it is parsed. */
const MAX_TOKEN_LENGTH = 512;

interface TokenBody {
  v: 1;
  /** A short hash of the binding. */
  b: string;
  t: string;
  i: string;
}

function bindingTag(binding: string): string {
  return createHash('sha256').update(binding).digest('base64url').slice(0, 16);
}

/** The envelope every token shares: version 1 and the binding's tag around the key's fields. */
function encodeBound(binding: string, fields: object): string {
  return Buffer.from(JSON.stringify({ v: 1, b: bindingTag(binding), ...fields })).toString('base64url');
}

/**
 * Opens the envelope: refuses a token over `maxLength` before parsing it, one that is not JSON, and
 * one of another version or binding (`invalid()`); the key's fields are the caller's to check.
 */
function decodeBound<B>(binding: string, token: string, maxLength: number, invalid: () => Error): Partial<B> {
  if (token.length > maxLength) throw invalid();
  let body: unknown;
  try {
    body = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
  } catch {
    throw invalid();
  }
  if (typeof body !== 'object' || body === null) throw invalid();
  const envelope = body as { v?: unknown; b?: unknown };
  if (envelope.v !== 1 || envelope.b !== bindingTag(binding)) throw invalid();
  return body as Partial<B>;
}

/** Encodes the position after `key` in the listing bound to `binding`. */
export function encodeKeysetToken(binding: string, key: KeysetKey): string {
  return encodeBound(binding, { t: key.createdAt, i: key.id });
}

/**
 * Decodes a token issued for `binding`; a damaged token, or one issued for another binding, is
 * InvalidArgumentError on `field`.
 */
export function decodeKeysetToken(binding: string, token: string, field = 'page_token'): KeysetKey {
  const invalid = () => new InvalidArgumentError(`${field} is not a valid page token`, field);
  const body = decodeBound<TokenBody>(binding, token, MAX_TOKEN_LENGTH, invalid);
  if (
    typeof body.t !== 'string' ||
    !ISO.test(body.t) ||
    Number.isNaN(Date.parse(body.t)) ||
    typeof body.i !== 'string' ||
    !isUuid(body.i)
  ) {
    throw invalid();
  }
  return { createdAt: body.t, id: body.i.toLowerCase() };
}

/**
 * A text key token is longer than a time-and-id one: a key of 128 code points is up to 512 UTF-8
 * bytes before base64. Longer is garbage, refused before it is parsed.
 */
const MAX_TEXT_KEY_TOKEN_LENGTH = 1024;

interface TextKeyBody {
  v: 1;
  b: string;
  k: string;
}

/**
 * Encodes the position after `key` in a listing ordered by one text key (a topic's members by user
 * id), bound to `binding` like the time-and-id tokens above.
 */
export function encodeTextKeyToken(binding: string, key: string): string {
  return encodeBound(binding, { k: key });
}

/**
 * Decodes a text key token issued for `binding`; a damaged token, or one issued for another binding,
 * is InvalidArgumentError on `field`.
 */
export function decodeTextKeyToken(binding: string, token: string, field = 'page_token'): string {
  const invalid = () => new InvalidArgumentError(`${field} is not a valid page token`, field);
  const body = decodeBound<TextKeyBody>(binding, token, MAX_TEXT_KEY_TOKEN_LENGTH, invalid);
  if (typeof body.k !== 'string' || body.k === '') throw invalid();
  return body.k;
}
