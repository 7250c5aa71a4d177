/**
 * InMemoryInboundReplayStore: the `memory` store of the inbound replay ids (inbound-replay.ts), for
 * tests and throwaway runs. Bounded by count and age: ids older than the retention are dropped as new
 * ones arrive, and at `maxEntries` the oldest id is forgotten early (the map keeps insertion order,
 * which is time order). Unlike the suppression list, forgetting is the safe side here: a refused
 * callback could be a new STOP, a forgotten id only reopens one old replay.
 */
import type { InboundReplayStore } from './inbound-replay';
import { DEFAULT_REPLAY_MEMORY_MAX_ENTRIES, DEFAULT_REPLAY_RETENTION_HOURS } from './inbound-replay';
import { type Clock, dateReader } from '../../../shared/runtime/clock';

/** What the memory store is built from. */
export interface InMemoryInboundReplayStoreOptions {
  retentionHours?: number;
  maxEntries?: number;
  clock?: Clock;
}

/** The in-memory InboundReplayStore. */
export class InMemoryInboundReplayStore implements InboundReplayStore {
  readonly backend = 'memory' as const;
  /** `${backend}\n${id}` -> when it was first seen (ms), oldest first. */
  private readonly seen = new Map<string, number>();
  private readonly retentionMs: number;
  private readonly maxEntries: number;
  private readonly clock: () => Date;

  constructor(options: InMemoryInboundReplayStoreOptions = {}) {
    this.retentionMs = (options.retentionHours ?? DEFAULT_REPLAY_RETENTION_HOURS) * 3_600_000;
    this.maxEntries = options.maxEntries ?? DEFAULT_REPLAY_MEMORY_MAX_ENTRIES;
    this.clock = dateReader(options.clock);
  }

  /** Ids held now. */
  get size(): number {
    return this.seen.size;
  }

  async remember(backend: string, id: string): Promise<boolean> {
    const now = this.clock().getTime();
    this.expire(now);
    const key = `${backend}\n${id}`;
    if (this.seen.has(key)) return false;
    while (this.seen.size >= this.maxEntries) this.dropOldest();
    this.seen.set(key, now);
    return true;
  }

  async forget(backend: string, id: string): Promise<void> {
    this.seen.delete(`${backend}\n${id}`);
  }

  /** Drops the ids older than the retention (they are at the front). */
  private expire(now: number): void {
    for (const [key, at] of this.seen) {
      if (now - at < this.retentionMs) return;
      this.seen.delete(key);
    }
  }

  private dropOldest(): void {
    const first = this.seen.keys().next();
    if (!first.done) this.seen.delete(first.value);
  }
}
