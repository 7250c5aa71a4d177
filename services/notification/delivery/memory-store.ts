/**
 * InMemoryDeliveryStore: the `memory` store backend, for tests and throwaway runs. The same
 * semantics as DatabaseDeliveryStore (idempotency, leases, forward-only status, retention) in one
 * process; nothing survives a restart. Records are copied in and out, so callers never share state
 * with the store (memory-records.ts). Like the database store it composes one file per concern:
 * records, queue, outcomes, receipts, event log, retention (memory-*.ts); creates and reads stay here.
 */
import type { DeliveryEvent, DeliveryEventQuery } from './events';
import { AlreadyExistsError } from '../../../shared/errors';
import type { IncomingReceipt } from './receipt';
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
  type BackendQueueDepth,
  USER_DELETED_ERROR,
} from './store';
import { QUEUED_STATUSES, SUPPRESSED_ERROR, toView, type DeliveryRecord } from './types';
import { copy, MemoryRecords, newestFirst, ownPayload } from './memory-records';
import { MemoryLeaseQueue } from './memory-queue';
import { MemoryDeliveryEventLog } from './memory-event-log';
import { completeAttempt, type MemoryOutcomeParts } from './memory-outcomes';
import { applyReceipt, findByProviderReference } from './memory-receipts';
import { purgeExpired } from './memory-retention';
import { recipientKeys } from './recipient-keys';
import { type Clock, systemClock } from '../../../shared/runtime/clock';
import { epochFirstSeq } from '../../../shared/streams/memory-event-log';

/** The in-memory DeliveryStore. */
export class InMemoryDeliveryStore implements DeliveryStore {
  readonly backend = 'memory' as const;
  private readonly records = new MemoryRecords();
  /** Pending and retrying records, per backend in claimable order, and their leases. */
  private readonly queue = new MemoryLeaseQueue(this.records);
  /**
   * The event log (sequenced at once: one process, nothing commits out of order), numbered past
   * every seq an earlier process handed out: a WatchDeliveries cursor kept across a restart gets a
   * reset.
   */
  private readonly events: MemoryDeliveryEventLog;
  private readonly parts: MemoryOutcomeParts;

  /** `clock` (default the system's) dates the event log's first seq. */
  constructor(options: { clock?: Clock } = {}) {
    this.events = new MemoryDeliveryEventLog(epochFirstSeq((options.clock ?? systemClock).now()));
    this.parts = { records: this.records, queue: this.queue, events: this.events };
  }

  /** Index entries looked at by claims and polls since the store was made (tests count work). */
  get examined(): number {
    return this.queue.examined;
  }

  /** Heap entries held now, stale ones included (tests check the bound). */
  get indexSize(): number {
    return this.queue.indexSize;
  }

  async create(input: NewDelivery): Promise<{ record: DeliveryRecord; created: boolean }> {
    return this.insert(input);
  }

  private insert(input: NewDelivery): { record: DeliveryRecord; created: boolean } {
    if (input.idempotencyKey !== null) {
      const record = this.records.byKey(input.scope, input.idempotencyKey);
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
      category: input.category ?? null,
    };
    this.records.add(record);
    if (!suppressed) this.queue.enqueue(record);
    this.events.append(record);
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
      const hash = hashes.get(key) ?? this.records.byKey(d.scope, d.idempotencyKey)?.contentHash;
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
    const matching = [...this.records.byId.values()]
      .filter(
        (r) =>
          (filter.channel === undefined || r.channel === filter.channel) &&
          (filter.status === undefined || r.status === filter.status) &&
          (filter.backend === undefined || r.backend === filter.backend) &&
          (filter.failure === undefined || r.failure === filter.failure) &&
          (filter.scope === undefined || r.scope === filter.scope) &&
          (filter.id === undefined || r.id === filter.id) &&
          (filter.userId === undefined || r.userId === filter.userId) &&
          (filter.category === undefined || r.category === filter.category) &&
          (filter.recipientKey === undefined || recipientKeys(r).includes(filter.recipientKey)) &&
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
    return this.queue.dueBackends(now);
  }

  async claim(request: ClaimRequest): Promise<DeliveryRecord[]> {
    return this.queue.claim(request);
  }

  async completeAttempt(id: string, owner: string, result: AttemptResult): Promise<DeliveryRecord | null> {
    return completeAttempt(this.parts, id, owner, result);
  }

  async defer(id: string, owner: string, request: DeferRequest): Promise<boolean> {
    return this.queue.defer(id, owner, request);
  }

  async release(ids: readonly string[], owner: string, now: Date): Promise<number> {
    return this.queue.release(ids, owner, now);
  }

  async leaveOut(id: string, owner: string, request: LeaveOutRequest): Promise<boolean> {
    return this.queue.leaveOut(id, owner, request);
  }

  async findByProviderReference(
    channel: DeliveryRecord['channel'],
    reference: string,
    backend?: string,
  ): Promise<DeliveryRecord | null> {
    return findByProviderReference(this.records, channel, reference, backend);
  }

  async applyReceipt(id: string, receipt: IncomingReceipt, now: Date): Promise<AppliedReceipt | null> {
    return applyReceipt(this.parts, id, receipt, now);
  }

  async purgeExpired(request: PurgeRequest): Promise<PurgeResult> {
    return purgeExpired(this.records, this.events, request);
  }

  async eraseUser(userId: string, now: Date): Promise<number> {
    let erased = 0;
    const touched = new Set<string>();
    for (const r of this.records.byId.values()) {
      if (r.userId !== userId) continue;
      if (QUEUED_STATUSES.includes(r.status)) {
        // Ended before its content goes: nothing is sent to a deleted user.
        r.status = 'failed';
        r.lastError = USER_DELETED_ERROR;
        r.nextAttemptAt = null;
        r.leaseOwner = null;
        r.leaseExpiresAt = null;
        r.finishedAt = now;
        r.updatedAt = now;
        this.queue.dequeue(r.id);
        this.events.append(r);
      }
      r.payload = null;
      r.recipient = null;
      r.contentErasedAt ??= now;
      touched.add(r.id);
      erased++;
    }
    this.events.eraseReasons(touched);
    return erased;
  }

  async queueStats(now: Date): Promise<QueueStats> {
    return this.queue.queueStats(now);
  }

  async queueDepths(): Promise<BackendQueueDepth[]> {
    return this.queue.queueDepths();
  }

  async ping(): Promise<void> {}

  async eventsAfter(query: DeliveryEventQuery): Promise<DeliveryEvent[]> {
    return this.events.eventsAfter(query);
  }

  async latestEventSeq(): Promise<number> {
    return this.events.latestSeq;
  }

  async eventHorizon(scope: string): Promise<number> {
    return this.events.horizon(scope);
  }

  async sequenceEvents(): Promise<void> {}

  onEventsSequenced(listener: (latestSeq: number) => void): () => void {
    return this.events.onSequenced(listener);
  }

  /** Events held now (tests check they go with their records). */
  get eventCount(): number {
    return this.events.size;
  }
}
