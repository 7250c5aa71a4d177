/**
 * DatabaseInboundReplayStore: the inbound replay ids (inbound-replay.ts) in PostgreSQL or PGlite
 * through knex (table `inbound_receipts`, migration 20261126110000_inbound_receipts), so a callback
 * taken by one replica is a replay on every other. One row per (backend, id); `INSERT ... ON CONFLICT
 * DO NOTHING` decides which of two concurrent deliveries of one callback is new. Time is the
 * database's (`now()`): the retention never depends on a replica's clock. Rows older than the
 * retention are deleted in bounded batches, at most once per `pruneIntervalMs` per process, as ids
 * arrive; an id older than the retention that is still there (not pruned yet) counts as new.
 */
import type { Knex } from 'knex';
import type { InboundReplayStore } from './inbound-replay';
import { DEFAULT_REPLAY_RETENTION_HOURS } from './inbound-replay';
import { rows } from '../../../shared/storage/database';

/** Most rows one prune statement deletes. */
export const REPLAY_PRUNE_BATCH = 1000;

/** What the database store is built from. */
export interface DatabaseInboundReplayStoreOptions {
  retentionHours?: number;
  /** Least time between two prunes of this process (default one minute). */
  pruneIntervalMs?: number;
}

/** The knex-backed InboundReplayStore. Run the notification migrations first. */
export class DatabaseInboundReplayStore implements InboundReplayStore {
  readonly backend = 'database' as const;
  private readonly retentionHours: number;
  private readonly pruneIntervalMs: number;
  private lastPrune = -Infinity;
  private pruning?: Promise<void>;

  constructor(
    private readonly knex: Knex,
    options: DatabaseInboundReplayStoreOptions = {},
  ) {
    this.retentionHours = options.retentionHours ?? DEFAULT_REPLAY_RETENTION_HOURS;
    this.pruneIntervalMs = options.pruneIntervalMs ?? 60_000;
  }

  async remember(backend: string, id: string): Promise<boolean> {
    this.maybePrune();
    // A row past the retention that the prune has not reached yet is taken over as new.
    const taken = rows<{ backend: string }>(
      await this.knex.raw(
        `INSERT INTO inbound_receipts (backend, receipt_id, seen_at) VALUES (?, ?, now())
         ON CONFLICT (backend, receipt_id) DO UPDATE SET seen_at = now()
           WHERE inbound_receipts.seen_at < now() - make_interval(hours => ?)
         RETURNING backend`,
        [backend, id, this.retentionHours],
      ),
    );
    return taken.length > 0;
  }

  async forget(backend: string, id: string): Promise<void> {
    await this.knex.raw('DELETE FROM inbound_receipts WHERE backend = ? AND receipt_id = ?', [backend, id]);
  }

  /** Deletes rows past the retention, one bounded batch at a time; returns how many went. */
  async prune(): Promise<number> {
    let total = 0;
    for (;;) {
      const deleted = rows<{ backend: string }>(
        await this.knex.raw(
          `DELETE FROM inbound_receipts WHERE (backend, receipt_id) IN (
             SELECT backend, receipt_id FROM inbound_receipts
             WHERE seen_at < now() - make_interval(hours => ?)
             LIMIT ?)
           RETURNING backend`,
          [this.retentionHours, REPLAY_PRUNE_BATCH],
        ),
      ).length;
      total += deleted;
      if (deleted < REPLAY_PRUNE_BATCH) return total;
    }
  }

  /** Starts a prune in the background when the last one is old enough (one at a time). */
  private maybePrune(): void {
    const now = Date.now();
    if (this.pruning || now - this.lastPrune < this.pruneIntervalMs) return;
    this.lastPrune = now;
    // A failed prune is retried at the next interval; the remember itself does not depend on it.
    this.pruning = this.prune()
      .then(
        () => undefined,
        () => undefined,
      )
      .finally(() => (this.pruning = undefined));
  }

  /** Waits for a prune in progress (tests, shutdown). */
  async settled(): Promise<void> {
    await this.pruning;
  }
}
