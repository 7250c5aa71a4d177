/**
 * The one id source and the one id validator. Every id we make (messages, deliveries, suppressions,
 * alerts, captured exceptions, worker owners, Message-IDs) is a random version 4 UUID from
 * {@link newId}; every id we read back from outside is checked with {@link isUuid} before it is used.
 */
import { randomUUID } from 'node:crypto';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A new random id: a canonical (lower-case, hyphenated) version 4 UUID. */
export function newId(): string {
  return randomUUID();
}

/**
 * True for a UUID in its hyphenated form, in either case (callers that store or compare it lower-case
 * it first); false for anything else, non-strings included.
 */
export function isUuid(value: unknown): value is string {
  return typeof value === 'string' && UUID.test(value);
}
