/**
 * InMemoryDeliveryStore: the `memory` store backend, for tests and throwaway runs. The same
 * semantics as DatabaseDeliveryStore (idempotency, leases, forward-only status, retention) in one
 * process; nothing survives a restart. Records are copied in and out, so callers never share state
 * with the store; the payload is cloned once on the way in and then frozen, so the copies out share it
 * (read-only) instead of cloning it per read, claim and completion.
 */
import {
  eventOf,
  matchesEventFilter,
  receiptReason,
  type DeliveryEvent,
  type DeliveryEventQuery,
} from './events';
import { AlreadyExistsError } from '../../../shared/errors';
import { foldReceipt, type IncomingReceipt } from './receipt';
import {
  IDEMPOTENCY_CONFLICT,
  type AppliedReceipt,
  type AttemptResult,
  type ClaimRequest,
  type DeferRequest,
  type DeliveryPage,
  type DeliveryPageQuery,
  type DeliveryStore,
  type DueBackend,
  type LeaveOutRequest,
  type NewDelivery,
  type PurgeRequest,
  type PurgeResult,
  type QueueStats,
  USER_DELETED_ERROR,
} from './store';
import {
  canTransition,
  FINAL_STATUSES,
  QUEUED_STATUSES as QUEUED,
  SUPPRESSED_ERROR,
  toView,
  type DeliveryRecord,
} from './types';

/**
 * Payloads held frozen (plain objects, arrays and primitives all the way down): a record's copy shares
 * such a payload instead of cloning it on every read, claim and completion, since nobody can change it.
 */
const frozenPayloads = new WeakSet<object>();

const MAX_FROZEN_DEPTH = 32;
/** Marks that a value is not plain data (bailing out of `frozenCopy`). */
const NOT_PLAIN = Symbol('not plain');

/**
 * A deep copy of `value`, frozen, when it is plain JSON-like data (objects of the plain prototype,
 * arrays, primitives), else NOT_PLAIN (a Date, bytes, a Map: such a payload is cloned per copy
 * instead). One pass, several times cheaper than structuredClone for the small objects payloads are.
 */
function frozenCopy(value: unknown, depth = 0): unknown {
  if (typeof value !== 'object' || value === null) return typeof value === 'function' ? NOT_PLAIN : value;
  // Deeper than any payload we build: a cycle, or a shape structuredClone is left to copy.
  if (depth > MAX_FROZEN_DEPTH) return NOT_PLAIN;
  let out: unknown[] | Record<string, unknown>;
  if (Array.isArray(value)) {
    const list: unknown[] = [];
    for (const item of value) {
      const c = frozenCopy(item, depth + 1);
      if (c === NOT_PLAIN) return NOT_PLAIN;
      list.push(c);
    }
    out = list;
  } else if (isPlainObject(value)) {
    const record: Record<string, unknown> = {};
    for (const key of Object.keys(value)) {
      const c = frozenCopy((value as Record<string, unknown>)[key], depth + 1);
      if (c === NOT_PLAIN) return NOT_PLAIN;
      record[key] = c;
    }
    out = record;
  } else return NOT_PLAIN;
  frozenPayloads.add(Object.freeze(out));
  return out;
}

/**
 * An object of the plain prototype, of any realm (structuredClone's objects may come from another one
 * than this module's `Object.prototype`, as under jest), or of none.
 */
function isPlainObject(value: object): boolean {
  const proto = Object.getPrototypeOf(value) as { constructor?: unknown } | null;
  if (proto === null) return true;
  return (
    Object.getPrototypeOf(proto) === null &&
    typeof proto.constructor === 'function' &&
    proto.constructor.name === 'Object'
  );
}

/** The stored form of a caller's payload: a private copy, frozen when it is plain data. */
function ownPayload(payload: unknown): unknown {
  const own = frozenCopy(payload);
  return own === NOT_PLAIN ? structuredClone(payload) : own;
}

function copyPayload(payload: unknown): unknown {
  if (typeof payload !== 'object' || payload === null || frozenPayloads.has(payload)) return payload;
  return structuredClone(payload);
}

function copy(record: DeliveryRecord): DeliveryRecord {
  return {
    ...record,
    payload: copyPayload(record.payload),
    attempts: record.attempts.map((a) => ({ ...a })),
    suppressedRecipients: [...record.suppressedRecipients],
    receipts: record.receipts.map((r) => ({ ...r })),
  };
}

function newestFirst(a: { createdAt: Date; id: string }, b: { createdAt: Date; id: string }): number {
  const t = b.createdAt.getTime() - a.createdAt.getTime();
  if (t !== 0) return t;
  return a.id < b.id ? 1 : a.id > b.id ? -1 : 0;
}

function isDue(r: DeliveryRecord, now: Date): boolean {
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

/** The in-memory DeliveryStore. */
export class InMemoryDeliveryStore implements DeliveryStore {
  readonly backend = 'memory' as const;
  private readonly records = new Map<string, DeliveryRecord>();
  /** `${scope}\n${key}` -> id. */
  private readonly keys = new Map<string, string>();
  /** Ids of pending and retrying records (queue stats). */
  private readonly queued = new Set<string>();
  /** Queued records by `channel\nbackend`, in claimable order: the only ones a claim looks at. */
  private readonly due = new Map<string, DueHeap>();
  /** Entries in all heaps, stale ones included: bounded by compacting (see `schedule`). */
  private entries = 0;
  /** The event log, by seq (sequenced at once: one process, nothing commits out of order). */
  private events: DeliveryEvent[] = [];
  private lastSeq = 0;
  /** Highest purged seq per scope. */
  private readonly horizons = new Map<string, number>();
  private readonly sequencedListeners = new Set<(latestSeq: number) => void>();

  /** Appends the event of a record's change (in the same synchronous step as the change). */
  private record(r: DeliveryRecord, reason?: string | null): void {
    this.events.push({ seq: ++this.lastSeq, ...eventOf(r, reason === undefined ? r.lastError : reason) });
    const seq = this.lastSeq;
    for (const listener of this.sequencedListeners) listener(seq);
  }

  /** Files a queued record under its backend at the time it next becomes claimable. */
  private schedule(r: DeliveryRecord): void {
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

  /** Index entries looked at by claims and polls since the store was made (tests count work). */
  examined = 0;

  /** Heap entries held now, stale ones included (tests check the bound). */
  get indexSize(): number {
    return this.entries;
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

  async create(input: NewDelivery): Promise<{ record: DeliveryRecord; created: boolean }> {
    return this.insert(input);
  }

  private insert(input: NewDelivery): { record: DeliveryRecord; created: boolean } {
    if (input.idempotencyKey !== null) {
      const existing = this.keys.get(`${input.scope}\n${input.idempotencyKey}`);
      const record = existing === undefined ? undefined : this.records.get(existing);
      if (record) return { record: copy(record), created: false };
    }
    const suppressed = input.suppressed === true;
    const record: DeliveryRecord = {
      id: input.id,
      channel: input.channel,
      backend: input.backend,
      backendPinned: input.backendPinned ?? false,
      failure: suppressed ? 'recipient_suppressed' : null,
      recipient: input.recipient,
      maskedRecipient: input.maskedRecipient,
      scope: input.scope,
      idempotencyKey: input.idempotencyKey,
      contentHash: input.contentHash,
      payload: ownPayload(input.payload),
      status: suppressed ? 'failed' : 'pending',
      attempts: [],
      nextAttemptAt: suppressed ? null : input.createdAt,
      lastError: suppressed ? SUPPRESSED_ERROR : null,
      providerReference: null,
      leaseOwner: null,
      leaseExpiresAt: null,
      createdAt: input.createdAt,
      updatedAt: input.createdAt,
      sentAt: null,
      deliveredAt: null,
      finishedAt: suppressed ? input.createdAt : null,
      contentErasedAt: null,
      receipts: [],
      traceParent: input.traceParent ?? null,
      suppressedRecipients: [...(input.suppressedRecipients ?? [])],
      attemptsStarted: 0,
      userId: input.userId ?? null,
    };
    this.records.set(record.id, record);
    if (!suppressed) {
      this.queued.add(record.id);
      this.schedule(record);
    }
    if (input.idempotencyKey !== null) this.keys.set(`${input.scope}\n${input.idempotencyKey}`, record.id);
    this.record(record);
    return { record: copy(record), created: true };
  }

  async createBatch(
    deliveries: readonly NewDelivery[],
  ): Promise<{ record: DeliveryRecord; created: boolean }[]> {
    // Every key checked before anything is inserted: a conflict records nothing of the batch.
    const hashes = new Map<string, string>();
    for (const d of deliveries) {
      if (d.idempotencyKey === null) continue;
      const key = `${d.scope}\n${d.idempotencyKey}`;
      const id = this.keys.get(key);
      const hash = hashes.get(key) ?? (id === undefined ? undefined : this.records.get(id)?.contentHash);
      if (hash !== undefined && hash !== d.contentHash) throw new AlreadyExistsError(IDEMPOTENCY_CONFLICT);
      hashes.set(key, hash ?? d.contentHash);
    }
    // One synchronous pass: nothing else runs in between, so no one sees half a batch.
    return deliveries.map((d) => this.insert(d));
  }

  async get(id: string): Promise<DeliveryRecord | null> {
    const record = this.records.get(id);
    return record ? copy(record) : null;
  }

  async list(query: DeliveryPageQuery): Promise<DeliveryPage> {
    const { filter } = query;
    const after = query.after
      ? { createdAt: new Date(query.after.createdAt), id: query.after.id }
      : undefined;
    const matching = [...this.records.values()]
      .filter(
        (r) =>
          (filter.channel === undefined || r.channel === filter.channel) &&
          (filter.status === undefined || r.status === filter.status) &&
          (filter.backend === undefined || r.backend === filter.backend) &&
          (filter.failure === undefined || r.failure === filter.failure) &&
          (filter.scope === undefined || r.scope === filter.scope) &&
          (after === undefined || newestFirst(after, r) < 0),
      )
      .sort(newestFirst);
    const page = matching.slice(0, query.limit);
    const last = page[page.length - 1];
    return {
      records: page.map((r) => ({ ...toView(copy(r)), receipts: [] })),
      nextKey:
        matching.length > query.limit && last
          ? { createdAt: last.createdAt.toISOString(), id: last.id }
          : null,
    };
  }

  async dueBackends(now: Date): Promise<DueBackend[]> {
    const backends: DueBackend[] = [];
    for (const [key, heap] of [...this.due]) {
      const top = this.settle(heap, key);
      if (top === undefined || top.at > now.getTime()) continue;
      const r = this.records.get(top.id)!;
      backends.push({ channel: r.channel, backend: r.backend });
    }
    return backends;
  }

  async claim(request: ClaimRequest): Promise<DeliveryRecord[]> {
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

  async completeAttempt(id: string, owner: string, result: AttemptResult): Promise<DeliveryRecord | null> {
    const r = this.records.get(id);
    if (!r || r.leaseOwner !== owner || !canTransition(r.status, result.status)) return null;
    if (result.attempt) r.attempts.push({ ...result.attempt });
    r.status = result.status;
    r.nextAttemptAt = result.nextAttemptAt;
    r.backend = result.backend ?? r.backend;
    r.failure = result.status === 'failed' ? (result.failure ?? null) : null;
    r.lastError = (result.attempt ? result.attempt.error : result.lastError) ?? null;
    if (result.attempt?.providerReference !== undefined)
      r.providerReference = result.attempt.providerReference;
    r.leaseOwner = null;
    r.leaseExpiresAt = null;
    r.updatedAt = result.now;
    if (result.status === 'sent') r.sentAt = result.now;
    if (result.status === 'sent' || result.status === 'failed') {
      r.finishedAt = result.now;
      this.queued.delete(id);
    } else this.schedule(r);
    this.record(r);
    return copy(r);
  }

  async defer(id: string, owner: string, request: DeferRequest): Promise<boolean> {
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

  async release(ids: readonly string[], owner: string, now: Date): Promise<number> {
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

  async leaveOut(id: string, owner: string, request: LeaveOutRequest): Promise<boolean> {
    const r = this.records.get(id);
    if (!r || r.leaseOwner !== owner || !this.queued.has(id)) return false;
    r.recipient = request.recipient;
    r.maskedRecipient = request.maskedRecipient;
    r.payload = request.payload;
    r.suppressedRecipients = [...request.suppressedRecipients];
    r.updatedAt = request.now;
    return true;
  }

  async findByProviderReference(
    channel: DeliveryRecord['channel'],
    reference: string,
    backend?: string,
  ): Promise<DeliveryRecord | null> {
    let found: DeliveryRecord | undefined;
    for (const r of this.records.values()) {
      if (r.channel !== channel || r.providerReference !== reference) continue;
      if (backend !== undefined && r.backend !== backend) continue;
      if (found === undefined || newestFirst(r, found) < 0) found = r;
    }
    return found ? copy(found) : null;
  }

  async applyReceipt(id: string, receipt: IncomingReceipt, now: Date): Promise<AppliedReceipt | null> {
    const r = this.records.get(id);
    if (!r) return null;
    const fold = foldReceipt(r, receipt, now);
    Object.assign(r, fold.changes);
    // A receipt that ended a queued record takes it off the queue: the provider has the message.
    if (!QUEUED.includes(r.status)) this.queued.delete(id);
    if (fold.effect === 'applied') this.record(r, receiptReason(receipt));
    return { record: copy(r), fold };
  }

  async purgeExpired(request: PurgeRequest): Promise<PurgeResult> {
    let erased = 0;
    let deleted = 0;
    const gone = new Set<string>();
    for (const r of [...this.records.values()]) {
      if (r.finishedAt === null || !FINAL_STATUSES.includes(r.status)) continue;
      if (r.finishedAt < request.deleteBefore && deleted < request.batchSize) {
        this.records.delete(r.id);
        gone.add(r.id);
        if (r.idempotencyKey !== null) this.keys.delete(`${r.scope}\n${r.idempotencyKey}`);
        deleted++;
      } else if (
        r.finishedAt < request.eraseBefore &&
        r.contentErasedAt === null &&
        erased < request.batchSize
      ) {
        r.payload = null;
        r.recipient = null;
        r.contentErasedAt = request.now;
        erased++;
      }
    }
    if (gone.size > 0) {
      // The record's events go with it; the scope's horizon tells older cursors (RESET).
      this.events = this.events.filter((e) => {
        if (!gone.has(e.deliveryId)) return true;
        this.horizons.set(e.scope, Math.max(this.horizons.get(e.scope) ?? 0, e.seq));
        return false;
      });
    }
    return { erased, deleted };
  }

  async eraseUser(userId: string, now: Date): Promise<number> {
    let erased = 0;
    const touched = new Set<string>();
    for (const r of this.records.values()) {
      if (r.userId !== userId) continue;
      if (QUEUED.includes(r.status)) {
        // Ended before its content goes: nothing is sent to a deleted user.
        r.status = 'failed';
        r.lastError = USER_DELETED_ERROR;
        r.nextAttemptAt = null;
        r.leaseOwner = null;
        r.leaseExpiresAt = null;
        r.finishedAt = now;
        r.updatedAt = now;
        this.queued.delete(r.id);
        this.record(r);
      }
      r.payload = null;
      r.recipient = null;
      r.contentErasedAt ??= now;
      touched.add(r.id);
      erased++;
    }
    for (const e of this.events) if (touched.has(e.deliveryId)) e.reason = null;
    return erased;
  }

  async queueStats(now: Date): Promise<QueueStats> {
    const queued = { pending: 0, retrying: 0 };
    let oldest: Date | null = null;
    for (const id of this.queued) {
      const r = this.records.get(id)!;
      queued[r.status as 'pending' | 'retrying']++;
      if (isDue(r, now) && (oldest === null || r.nextAttemptAt! < oldest)) oldest = r.nextAttemptAt;
    }
    return { queued, oldestDueAt: oldest };
  }

  async ping(): Promise<void> {}

  async eventsAfter(query: DeliveryEventQuery): Promise<DeliveryEvent[]> {
    // Binary search for the first seq after the cursor, then scan.
    let lo = 0;
    let hi = this.events.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.events[mid]!.seq <= query.after) lo = mid + 1;
      else hi = mid;
    }
    const scopes = new Set(query.scopes);
    const found: DeliveryEvent[] = [];
    for (let i = lo; i < this.events.length && found.length < query.limit; i++) {
      const e = this.events[i]!;
      if (scopes.has(e.scope) && matchesEventFilter(e, query.filter)) found.push({ ...e });
    }
    return found;
  }

  async latestEventSeq(): Promise<number> {
    return this.lastSeq;
  }

  async eventHorizon(scope: string): Promise<number> {
    return this.horizons.get(scope) ?? 0;
  }

  async sequenceEvents(): Promise<void> {}

  onEventsSequenced(listener: (latestSeq: number) => void): () => void {
    this.sequencedListeners.add(listener);
    return () => this.sequencedListeners.delete(listener);
  }

  /** Events held now (tests check they go with their records). */
  get eventCount(): number {
    return this.events.length;
  }
}
