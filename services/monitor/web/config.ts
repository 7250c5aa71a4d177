/**
 * The `web` section of the monitor (the status page): its one home, beside the web area that reads
 * it; the service's root config (../config.ts) composes it.
 */
import { z } from 'zod';

import { nonEmptyString, positiveInt, positiveNumber, stringList } from '../../../shared/config';

/**
 * The `web` section: the status page at `/` (web/README.md). Its data routes (`/status.json`,
 * `/status/events`) accept these tokens and the `server.api_tokens` with the `monitor:read` scope
 * (plain ones have every scope); with none configured anywhere they are open, like the RPCs.
 */
export const WebConfigSchema = z
  .strictObject({
    /** Read-only bearer tokens for the status page's data routes (secret), besides `server.api_tokens` with `monitor:read`. */
    api_tokens: stringList(nonEmptyString()).default(() => []),
    /** Alerts shown (newest first) in the snapshot; the page keeps at most this many. */
    recent_alerts: positiveInt().max(500, { error: 'at most 500' }).default(50),
    /** Open status event streams at most; beyond: 429 with Retry-After. */
    max_sse_connections: positiveInt().default(100),
    /** Bytes waiting to reach one browser at most; a stream over it is closed (the page reconnects). */
    sse_max_buffered_bytes: positiveInt().default(1024 * 1024),
    /** Seconds between SLO refreshes on open streams (sent only when the figures changed). */
    slo_refresh_seconds: positiveNumber().default(5),
    /** Seconds between heartbeat comments on open streams. */
    heartbeat_seconds: positiveNumber().default(15),
  })
  .prefault({});

/** Web (status page) section. */
export type WebConfig = z.infer<typeof WebConfigSchema>;
