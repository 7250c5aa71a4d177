/**
 * InMemoryDeliveryStore: the `memory` store backend, for tests and throwaway runs. The same
 * semantics as DatabaseDeliveryStore (idempotency, leases, forward-only status, retention) in one
 * process; nothing survives a restart. Records are copied in and out, so callers never share state
 * with the store.
 */
import type {
  AttemptResult,
  ClaimRequest,
  DeferRequest,
  DeliveryPage,
  DeliveryPageQuery,
  DeliveryStore,
  DueBackend,
  NewDelivery,
  PurgeRequest,
  PurgeResult,
  QueueStats,
} from './store';
import { canTransition, FINAL_STATUSES, type DeliveryRecord } from './types';

function copy(record: DeliveryRecord): DeliveryRecord {
  return {
    ...record,
    payload: record.payload === null ? null : structuredClone(record.payload),
    attempts: record.attempts.map((a) => ({ ...a })),
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

/** The in-memory DeliveryStore. */
export class InMemoryDeliveryStore implements DeliveryStore {
  readonly backend = 'memory' as const;
  private readonly records = new Map<string, DeliveryRecord>();
  /** `${scope}\n${key}` -> id. */
  private readonly keys = new Map<string, string>();
  /** Ids of pending and retrying records: the only ones a claim looks at. */
  private readonly queued = new Set<string>();

  async create(input: NewDelivery): Promise<{ record: DeliveryRecord; created: boolean }> {
    if (input.idempotencyKey !== null) {
      const existing = this.keys.get(`${input.scope}\n${input.idempotencyKey}`);
      const record = existing === undefined ? undefined : this.records.get(existing);
      if (record) return { record: copy(record), created: false };
    }
    const record: DeliveryRecord = {
      id: input.id,
      channel: input.channel,
      backend: input.backend,
      backendPinned: input.backendPinned ?? false,
      failure: null,
      recipient: input.recipient,
      maskedRecipient: input.maskedRecipient,
      scope: input.scope,
      idempotencyKey: input.idempotencyKey,
      contentHash: input.contentHash,
      payload: structuredClone(input.payload),
      status: 'pending',
      attempts: [],
      nextAttemptAt: input.createdAt,
      lastError: null,
      providerReference: null,
      leaseOwner: null,
      leaseExpiresAt: null,
      createdAt: input.createdAt,
      updatedAt: input.createdAt,
      sentAt: null,
      deliveredAt: null,
      finishedAt: null,
      contentErasedAt: null,
    };
    this.records.set(record.id, record);
    this.queued.add(record.id);
    if (input.idempotencyKey !== null) this.keys.set(`${input.scope}\n${input.idempotencyKey}`, record.id);
    return { record: copy(record), created: true };
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
      records: page.map(copy),
      nextKey:
        matching.length > query.limit && last
          ? { createdAt: last.createdAt.toISOString(), id: last.id }
          : null,
    };
  }

  async dueBackends(now: Date): Promise<DueBackend[]> {
    const backends = new Map<string, DueBackend>();
    for (const id of this.queued) {
      const r = this.records.get(id)!;
      if (isDue(r, now))
        backends.set(`${r.channel}\n${r.backend}`, { channel: r.channel, backend: r.backend });
    }
    return [...backends.values()];
  }

  async claim(request: ClaimRequest): Promise<DeliveryRecord[]> {
    const due: DeliveryRecord[] = [];
    for (const id of this.queued) {
      const r = this.records.get(id)!;
      if (r.backend === request.backend && r.channel === request.channel && isDue(r, request.now))
        due.push(r);
    }
    due.sort((a, b) => a.nextAttemptAt!.getTime() - b.nextAttemptAt!.getTime());
    const claimed = due.slice(0, request.limit);
    for (const r of claimed) {
      r.leaseOwner = request.owner;
      r.leaseExpiresAt = new Date(request.now.getTime() + request.leaseMs);
      r.updatedAt = request.now;
    }
    return claimed.map(copy);
  }

  async completeAttempt(id: string, owner: string, result: AttemptResult): Promise<DeliveryRecord | null> {
    const r = this.records.get(id);
    if (!r || r.leaseOwner !== owner || !canTransition(r.status, result.status)) return null;
    r.attempts.push({ ...result.attempt });
    r.status = result.status;
    r.nextAttemptAt = result.nextAttemptAt;
    r.backend = result.backend ?? r.backend;
    r.failure = result.status === 'failed' ? (result.failure ?? null) : null;
    r.lastError = result.attempt.error ?? null;
    if (result.attempt.providerReference !== undefined)
      r.providerReference = result.attempt.providerReference;
    r.leaseOwner = null;
    r.leaseExpiresAt = null;
    r.updatedAt = result.now;
    if (result.status === 'sent') r.sentAt = result.now;
    if (result.status === 'sent' || result.status === 'failed') {
      r.finishedAt = result.now;
      this.queued.delete(id);
    }
    return copy(r);
  }

  async defer(id: string, owner: string, request: DeferRequest): Promise<boolean> {
    const r = this.records.get(id);
    if (!r || r.leaseOwner !== owner || !this.queued.has(id)) return false;
    r.nextAttemptAt = request.nextAttemptAt;
    r.leaseOwner = null;
    r.leaseExpiresAt = null;
    r.updatedAt = request.now;
    return true;
  }

  async release(ids: readonly string[], owner: string, now: Date): Promise<number> {
    let released = 0;
    for (const id of ids) {
      const r = this.records.get(id);
      if (r && r.leaseOwner === owner) {
        r.leaseOwner = null;
        r.leaseExpiresAt = null;
        r.updatedAt = now;
        released++;
      }
    }
    return released;
  }

  async purgeExpired(request: PurgeRequest): Promise<PurgeResult> {
    let erased = 0;
    let deleted = 0;
    for (const r of [...this.records.values()]) {
      if (r.finishedAt === null || !FINAL_STATUSES.includes(r.status)) continue;
      if (r.finishedAt < request.deleteBefore && deleted < request.batchSize) {
        this.records.delete(r.id);
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
    return { erased, deleted };
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
}
