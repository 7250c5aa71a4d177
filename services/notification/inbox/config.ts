/**
 * The inbox config record (`notification.inbox`). Keys are snake_case: they are a file/env format.
 * The config loader validates and fills it; the inbox takes it as a plain object.
 */

/** Settings of the inbox area. */
export interface InboxConfig {
  /** `database` (PostgreSQL or embedded PGlite) or `memory` (tests, throwaway runs). */
  store_backend: 'database' | 'memory';
  /** Messages (and their events) older than this many days are purged. */
  retention_days: number;
  /** Largest page getInbox returns; a larger request is capped, not refused. */
  max_page_size: number;
  /** How often the retention purge runs (once per interval across replicas). */
  purge_interval_seconds: number;
  /** Rows deleted per purge statement. */
  purge_batch_size: number;
  /** Longest title accepted, in characters. */
  max_title_length: number;
  /** Longest body accepted, in characters. */
  max_body_length: number;
  /** Largest metadata object accepted, as UTF-8 JSON bytes. */
  max_metadata_bytes: number;
  /** Events buffered per live subscriber before it is closed with RESOURCE_EXHAUSTED. */
  watch_buffer_size: number;
}

/** The defaults of InboxConfig. */
export const DEFAULT_INBOX_CONFIG: Readonly<InboxConfig> = Object.freeze({
  store_backend: 'database',
  retention_days: 30,
  max_page_size: 50,
  purge_interval_seconds: 3600,
  purge_batch_size: 1000,
  max_title_length: 200,
  max_body_length: 10000,
  max_metadata_bytes: 16384,
  watch_buffer_size: 256,
});
