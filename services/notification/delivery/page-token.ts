/**
 * The opaque page token of the delivery listing: base64url JSON of the last row's (creation time, id)
 * and a short hash of the filter it was issued for, so a token cannot be replayed under another filter
 * (which would silently skip or repeat rows).
 */
import { createHash } from 'node:crypto';
import { InvalidArgumentError } from '../../../shared/errors';
import { canonicalJson } from './content-hash';
import type { DeliveryFilter, DeliveryPageKey } from './types';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const MAX_TOKEN_LENGTH = 512;

interface TokenBody {
  v: 1;
  /** Filter tag. */
  f: string;
  t: string;
  i: string;
}

function filterTag(filter: DeliveryFilter): string {
  const normalised = {
    channel: filter.channel ?? null,
    status: filter.status ?? null,
    backend: filter.backend ?? null,
    scope: filter.scope ?? null,
  };
  return createHash('sha256').update(canonicalJson(normalised)).digest('base64url').slice(0, 16);
}

/** Encodes the position after `key` in the listing under `filter`. */
export function encodeDeliveryPageToken(filter: DeliveryFilter, key: DeliveryPageKey): string {
  const body: TokenBody = { v: 1, f: filterTag(filter), t: key.createdAt, i: key.id };
  return Buffer.from(JSON.stringify(body)).toString('base64url');
}

/** Decodes a token issued for `filter`; a damaged token or one of another filter is InvalidArgumentError. */
export function decodeDeliveryPageToken(filter: DeliveryFilter, token: string): DeliveryPageKey {
  const invalid = () => new InvalidArgumentError('page_token is not a valid page token', 'page_token');
  if (token.length > MAX_TOKEN_LENGTH) throw invalid();
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
    body.f !== filterTag(filter) ||
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
