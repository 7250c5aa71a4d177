/**
 * The inbound replay store: the ids of the provider callbacks already taken (per backend), so a
 * signed callback captured and posted again is refused. Twilio signs no timestamp, so its signature
 * alone cannot tell a replayed STOP from a new one; the MessageSid can. Ids are kept for
 * `webhooks.replay_retention_hours` (at least the provider's retry window), then forgotten.
 *
 * Two stores, chosen by `delivery.store_backend` like the suppression list's:
 * `InMemoryInboundReplayStore` (bounded, for tests and throwaway runs) and
 * `DatabaseInboundReplayStore` (table `inbound_receipts`, shared by every replica).
 */

/** Where the ids of callbacks already taken live. */
export interface InboundReplayStore {
  readonly backend: 'database' | 'memory';
  /**
   * Records `id` for `backend`; true when it was new (apply the callback), false when it was seen
   * within the retention (a replay: apply nothing). Concurrent calls with one id: exactly one is true.
   */
  remember(backend: string, id: string): Promise<boolean>;
  /** Forgets `id` again: its callback could not be applied, and the provider's retry must be taken. */
  forget(backend: string, id: string): Promise<void>;
}

/** Default retention of the ids: 7 days (Twilio retries a callback within minutes). */
export const DEFAULT_REPLAY_RETENTION_HOURS = 168;
/** Default cap of the memory store. */
export const DEFAULT_REPLAY_MEMORY_MAX_ENTRIES = 100_000;
/** Longest id kept (a MessageSid is 34 characters; a status callback's id adds the status). */
export const MAX_REPLAY_ID_LENGTH = 128;
