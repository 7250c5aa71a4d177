/**
 * What both DigestBooks apply the same way: the category's digest config, the stored key, the bounds
 * of an event's and a digest's data.
 */
import { createHash } from 'node:crypto';
import { InvalidArgumentError } from '../../../../shared/errors';
import { textLength, wellFormed } from '../../../../shared/text/cut';
import type { CategoryConfig, DigestConfig } from '../config';
import type { DigestEvent } from '../timing';

/** An event's data is at most this many bytes as JSON (Notify already refuses more). */
export const MAX_EVENT_DATA_BYTES = 64 * 1024;

/**
 * A digest whose events' data reach this many bytes (as JSON) is full like one at `max_count`: due at
 * once, the next event opens a new digest. So a digest holds at most this plus one event's 64 KiB.
 */
export const MAX_DIGEST_DATA_BYTES = 1024 * 1024;

/** A key longer than this (characters) is stored as `sha256:<hex>` of itself: never cut, never merged. */
export const MAX_STORED_KEY_CHARS = 256;

/** Finished digests (sent, cancelled) the memory book keeps for `get`, oldest dropped first. */
export const MEMORY_FINISHED_DIGESTS = 10_000;

/** The digest configs of the categories, by category and channel. */
export class DigestRules {
  private readonly byCategory = new Map<string, CategoryConfig>();

  constructor(categories: readonly CategoryConfig[]) {
    for (const c of categories) this.byCategory.set(c.name, c);
  }

  /** The digest of `category` on `channel`; INVALID_ARGUMENT when the category does not digest it. */
  configOf(category: string, channel: string): DigestConfig {
    const config = this.byCategory.get(category)?.digest?.[channel as 'email'];
    if (!config) {
      throw new InvalidArgumentError(
        `category ${JSON.stringify(category)} has no digest for ${JSON.stringify(channel)}`,
        'category',
      );
    }
    return config;
  }
}

/**
 * The key as stored: itself, or `sha256:<hex>` past {@link MAX_STORED_KEY_CHARS} characters (code
 * points) or when it holds a lone surrogate (hashed over its UTF-16 code units, so two such keys never
 * meet as the same U+FFFD text).
 */
export function storedKey(key: string): string {
  if (wellFormed(key) !== key) {
    return `sha256:${createHash('sha256').update(Buffer.from(key, 'utf16le')).digest('hex')}`;
  }
  if (textLength(key, 'code_point') <= MAX_STORED_KEY_CHARS) return key;
  return `sha256:${createHash('sha256').update(key, 'utf8').digest('hex')}`;
}

/** The event's data as JSON and its size; INVALID_ARGUMENT past {@link MAX_EVENT_DATA_BYTES}. */
export function eventData(event: DigestEvent): { json: string; bytes: number } {
  // A lone surrogate in a string would be written as `\ud83d`, which jsonb refuses: U+FFFD instead.
  const json = JSON.stringify(event.data ?? {}, (_key, value: unknown) =>
    typeof value === 'string' ? wellFormed(value) : value,
  );
  const bytes = Buffer.byteLength(json, 'utf8');
  if (bytes > MAX_EVENT_DATA_BYTES) {
    throw new InvalidArgumentError(
      `a digest event's data is at most ${MAX_EVENT_DATA_BYTES} bytes as JSON (got ${bytes})`,
      'data',
    );
  }
  return { json, bytes };
}

/** Whether a digest with this many events and bytes takes no more (due at once). */
export function isFull(count: number, bytes: number, maxCount: number): boolean {
  return count >= maxCount || bytes >= MAX_DIGEST_DATA_BYTES;
}
