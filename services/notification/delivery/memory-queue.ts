/**
 * The memory store's queue: pending and retrying records filed per backend by the time they become
 * claimable (a min-heap), claims under a lease, defer, release, leaveOut, due backends and the queue
 * gauges. The in-process counterpart of database-queue.ts; InMemoryDeliveryStore composes it.
 */
import type {
  BackendQueueDepth,
  ClaimRequest,
  DeferRequest,
  DueBackend,
  LeaveOutRequest,
  QueueStats,
} from './store';
import type { DeliveryRecord } from './types';
import { copy, type MemoryRecords } from './memory-records';

/** Due now: queued, its next attempt reached, and no live lease on it. */
export function isDue(r: DeliveryRecord, now: Date): boolean {
  return (
    (r.status === 'pending' || r.status === 'retrying') &&
    r.nextAttemptAt !== null &&
    r.nextAttemptAt.getTime() <= now.getTime() &&
    (r.leaseExpiresAt === null || r.leaseExpiresAt.getTime() <= now.getTime())
  );
}

/** When a queued record can next be claimed: its next attempt, or later when a lease holds it. */
function claimableAt(r: DeliveryRecord): number {
  const next = r.nextAttemptAt === null ? Infinity : r.nextAttemptAt.getTime();
  return r.leaseExpiresAt === null ? next : Math.max(next, r.leaseExpiresAt.getTime());
}

interface HeapEntry {
  at: number;
  /** Insertion order: ties go first in, first out. */
  seq: number;
  id: string;
}

/**
 * A min-heap of queued record ids by the time they become claimable, per backend, so a claim costs
 * O(k log n) for k records instead of a scan and sort of the whole queue. Entries are never updated in
 * place: a record that moved (claimed, deferred, retried, released) gets a new entry, and an entry whose
 * time no longer matches its record's `claimableAt` is stale and dropped when it reaches the top.
 */
class DueHeap {
  private readonly items: HeapEntry[] = [];
  private seq = 0;

  get size(): number {
    return this.items.length;
  }

  push(at: number, id: string): void {
    const items = this.items;
    const entry = { at, seq: this.seq++, id };
    let i = items.push(entry) - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!less(entry, items[parent]!)) break;
      items[i] = items[parent]!;
      i = parent;
    }
    items[i] = entry;
  }

  peek(): HeapEntry | undefined {
    return this.items[0];
  }

  pop(): HeapEntry | undefined {
    const items = this.items;
    const top = items[0];
    const last = items.pop();
    if (top === undefined || last === undefined || items.length === 0) return top;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= items.length) break;
      const r = l + 1;
      const c = r < items.length && less(items[r]!, items[l]!) ? r : l;
      if (!less(items[c]!, last)) break;
      items[i] = items[c]!;
      i = c;
    }
    items[i] = last;
    return top;
  }
}

function less(a: HeapEntry, b: HeapEntry): boolean {
  return a.at < b.at || (a.at === b.at && a.seq < b.seq);
}

/** The queued records of a MemoryRecords table and their leases. */
export class MemoryLeaseQueue {
  /** Ids of pending and retrying records (queue stats). */
  private readonly queued = new Set<string>();
  /** Queued records by `channel\nbackend`, in claimable order: the only ones a claim looks at. */
  private readonly due = new Map<string, DueHeap>();
  /** Entries in all heaps, stale ones included: bounded by compacting (see `schedule`). */
  private entries = 0;
  /** Index entries looked at by claims and polls since the queue was made (tests count work). */
  examined = 0;

  constructor(private readonly records: MemoryRecords) {}

  /** Heap entries held now, stale ones included (tests check the bound). */
  get indexSize(): number {
    return this.entries;
  }

  /** Puts a new record on the queue. */
  enqueue(r: DeliveryRecord): void {
    this.queued.add(r.id);
    this.schedule(r);
  }

  /** Takes a record off the queue (it ended); its heap entries go stale. */
  dequeue(id: string): void {
    this.queued.delete(id);
  }

  has(id: string): boolean {
    return this.queued.has(id);
  }

  /** Files a queued record under its backend at the time it next becomes claimable. */
  schedule(r: DeliveryRecord): void {
    const at = claimableAt(r);
    if (at === Infinity) return;
    const key = `${r.channel}\n${r.backend}`;
    let heap = this.due.get(key);
    if (!heap) this.due.set(key, (heap = new DueHeap()));
    heap.push(at, r.id);
    // Stale entries (a finished record's lease-expiry entry behind a due one) would pile up under a
    // steady stream: past twice the queue, rebuild the heaps from the queued records (amortised O(1)).
    if (++this.entries > 2 * this.queued.size + 1024) this.compact();
  }

  private compact(): void {
    this.due.clear();
    this.entries = 0;
    for (const id of this.queued) {
      const r = this.records.get(id)!;
      const at = claimableAt(r);
      if (at === Infinity) continue;
      const key = `${r.channel}\n${r.backend}`;
      let heap = this.due.get(key);
      if (!heap) this.due.set(key, (heap = new DueHeap()));
      heap.push(at, r.id);
      this.entries++;
    }
  }

  /** The entry's record when the entry is current (not stale), else undefined. */
  private current(entry: HeapEntry, key: string): DeliveryRecord | undefined {
    const r = this.records.get(entry.id);
    if (!r || !this.queued.has(r.id) || `${r.channel}\n${r.backend}` !== key) return undefined;
    return claimableAt(r) === entry.at ? r : undefined;
  }

  /** Drops stale entries from the top of a heap; the top then is current (or the heap is empty). */
  private settle(heap: DueHeap, key: string): HeapEntry | undefined {
    for (let top = heap.peek(); top !== undefined; top = heap.peek()) {
      this.examined++;
      if (this.current(top, key)) return top;
      heap.pop();
      this.entries--;
    }
    if (heap.size === 0) this.due.delete(key);
    return undefined;
  }

  dueBackends(now: Date): DueBackend[] {
    const backends: DueBackend[] = [];
    for (const [key, heap] of [...this.due]) {
      const top = this.settle(heap, key);
      if (top === undefined || top.at > now.getTime()) continue;
      const r = this.records.get(top.id)!;
      backends.push({ channel: r.channel, backend: r.backend });
    }
    return backends;
  }

  claim(request: ClaimRequest): DeliveryRecord[] {
    const key = `${request.channel}\n${request.backend}`;
    const heap = this.due.get(key);
    const claimed: DeliveryRecord[] = [];
    const t = request.now.getTime();
    while (heap && claimed.length < request.limit) {
      const top = this.settle(heap, key);
      if (top === undefined || top.at > t) break;
      heap.pop();
      this.entries--;
      const r = this.records.get(top.id)!;
      if (!isDue(r, request.now)) continue;
      // An attempt counts when it is claimed; the owner's own expired lease is only renewed.
      if (r.leaseOwner !== request.owner) r.attemptsStarted++;
      r.leaseOwner = request.owner;
      r.leaseExpiresAt = new Date(t + request.leaseMs);
      r.updatedAt = request.now;
      // Claimable again only once the lease expires (its owner died); completing re-files it anyway.
      this.schedule(r);
      claimed.push(r);
    }
    claimed.sort((a, b) => a.nextAttemptAt!.getTime() - b.nextAttemptAt!.getTime());
    return claimed.map(copy);
  }

  defer(id: string, owner: string, request: DeferRequest): boolean {
    const r = this.records.get(id);
    if (!r || r.leaseOwner !== owner || !this.queued.has(id)) return false;
    r.nextAttemptAt = request.nextAttemptAt;
    // No attempt was made under this claim.
    r.attemptsStarted = Math.max(0, r.attemptsStarted - 1);
    r.leaseOwner = null;
    r.leaseExpiresAt = null;
    r.updatedAt = request.now;
    this.schedule(r);
    return true;
  }

  release(ids: readonly string[], owner: string, now: Date): number {
    let released = 0;
    for (const id of ids) {
      const r = this.records.get(id);
      if (r && r.leaseOwner === owner) {
        // Shutdown aborted the attempt (or it never started): the claim is given back.
        r.attemptsStarted = Math.max(0, r.attemptsStarted - 1);
        r.leaseOwner = null;
        r.leaseExpiresAt = null;
        r.updatedAt = now;
        if (this.queued.has(id)) this.schedule(r);
        released++;
      }
    }
    return released;
  }

  leaveOut(id: string, owner: string, request: LeaveOutRequest): boolean {
    const r = this.records.get(id);
    if (!r || r.leaseOwner !== owner || !this.queued.has(id)) return false;
    r.recipient = request.recipient;
    r.maskedRecipient = request.maskedRecipient;
    r.payload = request.payload;
    r.suppressedRecipients = [...request.suppressedRecipients];
    r.updatedAt = request.now;
    return true;
  }

  queueStats(now: Date): QueueStats {
    const queued = { pending: 0, retrying: 0 };
    let oldest: Date | null = null;
    for (const id of this.queued) {
      const r = this.records.get(id)!;
      queued[r.status as 'pending' | 'retrying']++;
      if (isDue(r, now) && (oldest === null || r.nextAttemptAt! < oldest)) oldest = r.nextAttemptAt;
    }
    return { queued, oldestDueAt: oldest };
  }

  /** Queued records per channel and backend (the operator console). */
  queueDepths(): BackendQueueDepth[] {
    const depths = new Map<string, BackendQueueDepth>();
    for (const id of this.queued) {
      const r = this.records.get(id)!;
      const key = `${r.channel}\n${r.backend}`;
      const depth = depths.get(key) ?? { channel: r.channel, backend: r.backend, queued: 0 };
      depth.queued++;
      depths.set(key, depth);
    }
    return [...depths.values()];
  }
}
