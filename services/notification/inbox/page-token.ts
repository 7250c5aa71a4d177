/**
 * The opaque page token of getInbox: base64url of the last row's (creation time, id), bound to the
 * user it was issued for, so a token is useless in another user's inbox.
 */
import { createHash } from 'node:crypto';
import { InvalidArgumentError } from '../../../shared/errors';
import type { PageKey } from './store';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?Z$/;

interface TokenBody {
  v: 1;
  /** A short hash of the user id. */
  u: string;
  t: string;
  i: string;
}

function userTag(userId: string): string {
  return createHash('sha256').update(userId).digest('base64url').slice(0, 16);
}

/** Encodes the position after `key` in `userId`'s inbox. */
export function encodePageToken(userId: string, key: PageKey): string {
  const body: TokenBody = { v: 1, u: userTag(userId), t: key.createdAt, i: key.id };
  return Buffer.from(JSON.stringify(body)).toString('base64url');
}

/** Decodes a token issued for `userId`; anything else is InvalidArgumentError. */
export function decodePageToken(userId: string, token: string): PageKey {
  const invalid = () => new InvalidArgumentError('page_token is not a valid page token', 'page_token');
  if (token.length > 512) throw invalid();
  let body: Partial<TokenBody>;
  try {
    body = JSON.parse(Buffer.from(token, 'base64url').toString('utf8')) as Partial<TokenBody>;
  } catch {
    throw invalid();
  }
  if (
    typeof body !== 'object' ||
    body === null ||
    body.v !== 1 ||
    body.u !== userTag(userId) ||
    typeof body.t !== 'string' ||
    !ISO.test(body.t) ||
    Number.isNaN(Date.parse(body.t)) ||
    typeof body.i !== 'string' ||
    !UUID.test(body.i)
  ) {
    throw invalid();
  }
  return { createdAt: body.t, id: body.i };
}

/** True for a canonical or upper-case UUID. */
export function isUuid(value: string): boolean {
  return UUID.test(value.toLowerCase());
}
