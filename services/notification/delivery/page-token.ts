/**
 * The opaque page token of the delivery listing: a keyset token (shared/storage/keyset-token.ts) of
 * the last row's (creation time, id), bound to the whole filter it was issued for (channel, status,
 * backend, failure and the caller's scope), so a token cannot be replayed under another filter.
 */
import { decodeKeysetToken, encodeKeysetToken } from '../../../shared/storage/keyset-token';
import { canonicalJson } from './content-hash';
import type { DeliveryFilter, DeliveryPageKey } from './types';

function binding(filter: DeliveryFilter): string {
  const normalised = {
    channel: filter.channel ?? null,
    status: filter.status ?? null,
    backend: filter.backend ?? null,
    failure: filter.failure ?? null,
    scope: filter.scope ?? null,
    // Added with the console's filters: absent from older tokens' binding, so those stay valid.
    ...(filter.userId !== undefined ? { user: filter.userId } : {}),
    ...(filter.category !== undefined ? { category: filter.category } : {}),
    ...(filter.recipientKey !== undefined ? { recipient: filter.recipientKey } : {}),
    ...(filter.id !== undefined ? { id: filter.id } : {}),
  };
  return `deliveries:${canonicalJson(normalised)}`;
}

/** Encodes the position after `key` in the listing under `filter`. */
export function encodeDeliveryPageToken(filter: DeliveryFilter, key: DeliveryPageKey): string {
  return encodeKeysetToken(binding(filter), key);
}

/** Decodes a token issued for `filter`; a damaged token or one of another filter is InvalidArgumentError. */
export function decodeDeliveryPageToken(filter: DeliveryFilter, token: string): DeliveryPageKey {
  return decodeKeysetToken(binding(filter), token);
}
