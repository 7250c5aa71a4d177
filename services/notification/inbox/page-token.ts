/**
 * The opaque page token of getInbox: a keyset token (shared/storage/keyset-token.ts) bound to the
 * user it was issued for, so a token is useless in another user's inbox.
 */
import { decodeKeysetToken, encodeKeysetToken } from '../../../shared/storage/keyset-token';
import type { PageKey } from './store';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** Encodes the position after `key` in `userId`'s inbox. */
export function encodePageToken(userId: string, key: PageKey): string {
  return encodeKeysetToken(`inbox:${userId}`, key);
}

/** Decodes a token issued for `userId`; anything else is InvalidArgumentError. */
export function decodePageToken(userId: string, token: string): PageKey {
  return decodeKeysetToken(`inbox:${userId}`, token);
}

/** True for a canonical or upper-case UUID. */
export function isUuid(value: string): boolean {
  return UUID.test(value.toLowerCase());
}
