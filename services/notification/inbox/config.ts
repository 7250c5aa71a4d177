/**
 * The inbox section (`notification.inbox`, the spec's `InboxConfig`): its one home, beside the inbox
 * that reads it; the service's root config (../config.ts) composes it. The inbox takes it as a plain,
 * already validated object.
 */
import { z } from 'zod';

import { positiveInt } from '../../../shared/config';

/** `InboxConfig` and the limits of the inbox API. */
export const InboxConfigSchema = z
  .strictObject({
    /** `database` (PostgreSQL / PGlite) or `memory` (tests, throwaway runs). */
    store_backend: z.enum(['database', 'memory']).default('database'),
    /** Messages (and their events) older than this many days are purged. */
    retention_days: positiveInt().default(30),
    /** Largest page getInbox returns; a larger request is capped, not refused. */
    max_page_size: positiveInt().default(50),
    /** How often the retention purge runs (once per interval across replicas). */
    purge_interval_seconds: positiveInt().default(3600),
    /** Rows deleted per purge statement. */
    purge_batch_size: positiveInt().default(1000),
    /** Longest title accepted, in characters. */
    max_title_length: positiveInt().default(200),
    /** Longest body accepted, in characters. */
    max_body_length: positiveInt().default(10000),
    /** Largest metadata object accepted, as UTF-8 JSON bytes. */
    max_metadata_bytes: positiveInt().default(16384),
    /**
     * Events buffered per watcher (WatchInbox or SSE). A reader whose buffer is full catches up from
     * the store; only one that stops reading (watch_stall_seconds) is closed with RESOURCE_EXHAUSTED.
     */
    watch_buffer_size: positiveInt().default(256),
    /** A watcher with events waiting that asks for none for this long is closed (RESOURCE_EXHAUSTED). */
    watch_stall_seconds: positiveInt().default(10),
    /**
     * Open watches of one user per process, per watching party: the user's own sessions (admin SSE)
     * have this many, and each API caller (by token name) as many of its own; beyond: RESOURCE_EXHAUSTED / 429.
     */
    max_watchers_per_user: positiveInt().default(16),
    /** Open watches (WatchInbox and SSE together) per process; beyond: RESOURCE_EXHAUSTED / 429. */
    max_watchers: positiveInt().default(10000),
  })
  .prefault({});

/** The inbox section (the spec's record). */
export type InboxConfig = z.infer<typeof InboxConfigSchema>;

/** The defaults of InboxConfig, as the schema fills them. */
export const DEFAULT_INBOX_CONFIG: Readonly<InboxConfig> = Object.freeze(InboxConfigSchema.parse({}));
