/**
 * The opaque page token of getInbox: a keyset token (shared/storage/keyset-token.ts) bound to the
 * user it was issued for, so a token is useless in another user's inbox.
 */
import { decodeKeysetToken, encodeKeysetToken } from '../../../shared/storage/keyset-token';
import type { PageKey } from './store';

/** Encodes the position after `key` in `userId`'s inbox. */
export function encodePageToken(userId: string, key: PageKey): string {
  return encodeKeysetToken(`inbox:${userId}`, key);
}

/** Decodes a token issued for `userId`; anything else is InvalidArgumentError. */
export function decodePageToken(userId: string, token: string): PageKey {
  return decodeKeysetToken(`inbox:${userId}`, token);
}
