/**
 * The memory store's event log: the events statements append (numbered at once: one process, nothing
 * commits out of order), reads after a cursor, the per-scope horizon, and erasure with the records.
 * The in-process counterpart of database-event-log.ts; InMemoryDeliveryStore composes it. Its seqs
 * start at `firstSeq` (the store passes `epochFirstSeq`): what is below is every scope's horizon, so
 * a cursor kept across a restart gets a reset, never the new process's events under its numbers.
 */
import { eventOf, matchesEventFilter, type DeliveryEvent, type DeliveryEventQuery } from './events';
import type { DeliveryRecord } from './types';

/** The in-memory delivery event log. */
export class MemoryDeliveryEventLog {
  /** The log, by seq. */
  private events: DeliveryEvent[] = [];
  private lastSeq: number;
  /** Every seq up to here belongs to an earlier log: the horizon of every scope. */
  private readonly before: number;
  /** Highest purged seq per scope. */
  private readonly horizons = new Map<string, number>();
  private readonly sequencedListeners = new Set<(latestSeq: number) => void>();

  /** `firstSeq` (default 1): the seq of the first event. */
  constructor(firstSeq = 1) {
    if (!Number.isSafeInteger(firstSeq) || firstSeq < 1) throw new RangeError('firstSeq must be >= 1');
    this.before = firstSeq - 1;
    this.lastSeq = this.before;
  }

  /**
   * Appends the event of a record's change (in the same synchronous step as the change); `reason`
   * defaults to the record's last error.
   */
  append(r: DeliveryRecord, reason?: string | null): void {
    this.events.push({ seq: ++this.lastSeq, ...eventOf(r, reason === undefined ? r.lastError : reason) });
    const seq = this.lastSeq;
    for (const listener of this.sequencedListeners) listener(seq);
  }

  /** Drops the events of deleted records; each scope's horizon rises to the highest seq dropped. */
  eraseDeliveries(gone: ReadonlySet<string>): void {
    if (gone.size === 0) return;
    this.events = this.events.filter((e) => {
      if (!gone.has(e.deliveryId)) return true;
      this.horizons.set(e.scope, Math.max(this.horizons.get(e.scope) ?? this.before, e.seq));
      return false;
    });
  }

  /** Blanks the reasons of these deliveries' events (DeleteUser: a reason may quote the address). */
  eraseReasons(ids: ReadonlySet<string>): void {
    if (ids.size === 0) return;
    for (const e of this.events) if (ids.has(e.deliveryId)) e.reason = null;
  }

  eventsAfter(query: DeliveryEventQuery): DeliveryEvent[] {
    // Binary search for the first seq after the cursor, then scan.
    let lo = 0;
    let hi = this.events.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.events[mid]!.seq <= query.after) lo = mid + 1;
      else hi = mid;
    }
    const scopes = query.scopes === null ? null : new Set(query.scopes);
    const found: DeliveryEvent[] = [];
    for (let i = lo; i < this.events.length && found.length < query.limit; i++) {
      const e = this.events[i]!;
      if ((scopes === null || scopes.has(e.scope)) && matchesEventFilter(e, query.filter))
        found.push({ ...e });
    }
    return found;
  }

  get latestSeq(): number {
    return this.lastSeq;
  }

  horizon(scope: string): number {
    return this.horizons.get(scope) ?? this.before;
  }

  onSequenced(listener: (latestSeq: number) => void): () => void {
    this.sequencedListeners.add(listener);
    return () => this.sequencedListeners.delete(listener);
  }

  /** Events held now. */
  get size(): number {
    return this.events.length;
  }
}
