/**
 * DatabaseDeliveryStore: delivery records in PostgreSQL (pg) or the embedded PGlite, through knex.
 *
 * Claiming is `SELECT ... FOR UPDATE SKIP LOCKED` on our own table plus a lease (owner and expiry
 * columns): concurrent workers skip each other's rows instead of waiting, a committed lease keeps
 * other workers off a row while its attempt runs, and a lease whose owner died expires and the row is
 * claimed again. Finishing an attempt is conditional on still holding the lease, so a worker that lost
 * its lease can never overwrite what the new owner recorded, and a record is never moved backwards.
 * (delivery/README.md records why this and not pg-boss or graphile-worker.)
 */
import type { Knex } from 'knex';
import type { Logger } from '../../../shared/logging/logger';
import { silentLogger } from '../../../shared/logging/logger';
import { databaseEngine, rows } from '../../../shared/storage/database';
import { AlreadyExistsError, ResourceExhaustedError } from '../../../shared/errors';
import { fulfilled, GroupCommit } from '../../../shared/storage/group-commit';
import type { DeliveryEvent, DeliveryEventQuery } from './events';
import {
  IDEMPOTENCY_CONFLICT,
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
import { SUPPRESSED_ERROR, type DeliveryRecord } from './types';
import type { IncomingReceipt } from './receipt';
import { DatabaseDeliveryEventLog, eventInsert } from './database-event-log';
import { DatabaseOutcomeRecorder } from './database-outcomes';
import { DatabaseLeaseQueue } from './database-queue';
import { applyReceipt, findByProviderReference } from './database-receipts';
import { purgeExpired } from './database-retention';
import { rowToRecord, rowToView, VIEW_COLUMNS, type DeliveryRow, type ViewRow } from './database-records';

export { DELIVERY_EVENTS_CHANNEL } from './database-event-log';
export { UNSTORABLE_OUTCOME_ERROR } from './database-outcomes';

/**
 * Whose clock decides leases, due times and "now": `database` (the default) reads `now()` in each
 * statement, so replicas whose clocks differ agree; `caller` uses the `now` each call passes, for
 * tests that drive time by hand.
 */
export type DeliveryClockSource = 'database' | 'caller';

/** Tuning of DatabaseDeliveryStore. */
export interface DatabaseDeliveryStoreOptions {
  /** Most deliveries inserted by one statement (default 256). */
  maxBatchSize?: number;
  /** Most payload JSON characters in one statement (default 8 Mi); a bigger payload goes alone. */
  maxBatchBytes?: number;
  /** Insert statements in flight at once (default 2; always 1 on PGlite, which has one connection). */
  maxConcurrentBatches?: number;
  /** Events the sequencer numbers per transaction (delivery.watch.sequencer_batch_size; default 1000). */
  sequencerBatchSize?: number;
  /**
   * Least time between the starts of two sequencer passes while commits keep coming (default 25 ms):
   * the commits of that window share one pass. A commit after a quiet spell is numbered at once.
   */
  sequencerIntervalMs?: number;
  /** Where sequencer failures are logged (they are retried by the next commit or the safety timer). */
  logger?: Logger;
  /** Whose clock leases, due times and "now" come from (default `database`). */
  clock?: DeliveryClockSource;
  /**
   * Most creates waiting for or in their INSERT at once (`delivery.max_pending_submits`; default
   * unbounded); one more is ResourceExhaustedError at once.
   */
  maxPendingCreates?: number;
}

interface PendingCreate {
  delivery: NewDelivery;
  payloadJson: string;
}

/**
 * The knex-backed DeliveryStore (PostgreSQL or PGlite). Run the notification migrations first.
 * Concurrent creates are group-committed: what arrives while earlier batches are in flight goes into
 * one INSERT statement.
 */
export class DatabaseDeliveryStore implements DeliveryStore {
  readonly backend = 'database' as const;
  private readonly maxBatchSize: number;
  private readonly maxBatchBytes: number;
  private readonly maxConcurrentBatches: number;
  /** Creates, group-committed (bounded by delivery.max_pending_submits). */
  private readonly creates: GroupCommit<PendingCreate, { record: DeliveryRecord; created: boolean }>;
  /** The queue's claims and leases. */
  private readonly queue: DatabaseLeaseQueue;
  /** Outcomes (where a delivery becomes SENT, RETRYING or FAILED), group-committed. */
  private readonly outcomes: DatabaseOutcomeRecorder;
  /** The event log: reads, and the sequencer that numbers what the store's statements write. */
  private readonly events: DatabaseDeliveryEventLog;
  private readonly log: Logger;
  /** True: "now" is the database's (`now()`), and the callers' times only give durations. */
  private readonly databaseClock: boolean;

  constructor(
    private readonly knex: Knex,
    options: DatabaseDeliveryStoreOptions = {},
  ) {
    this.maxBatchSize = Math.max(1, options.maxBatchSize ?? 256);
    this.maxBatchBytes = Math.max(1, options.maxBatchBytes ?? 8 * 1024 * 1024);
    this.maxConcurrentBatches =
      databaseEngine(knex) === 'pglite' ? 1 : Math.max(1, options.maxConcurrentBatches ?? 2);
    this.log = (options.logger ?? silentLogger()).child({ component: 'delivery-events' });
    this.events = new DatabaseDeliveryEventLog(knex, {
      log: this.log,
      sequencerBatchSize: options.sequencerBatchSize,
      sequencerIntervalMs: options.sequencerIntervalMs,
    });
    this.databaseClock = (options.clock ?? 'database') === 'database';
    this.creates = new GroupCommit({
      flush: (batch) => this.flushCreates(batch),
      maxBatchSize: this.maxBatchSize,
      maxBatchBytes: this.maxBatchBytes,
      sizeOf: (p) => p.payloadJson.length,
      maxConcurrentFlushes: this.maxConcurrentBatches,
      maxPending: options.maxPendingCreates ?? Number.POSITIVE_INFINITY,
      overloaded: () =>
        new ResourceExhaustedError(
          'too many sends are waiting for the database; retry later (delivery.max_pending_submits)',
        ),
    });
    this.queue = new DatabaseLeaseQueue(knex, (now) => this.at(now));
    this.outcomes = new DatabaseOutcomeRecorder(knex, {
      log: this.log,
      at: (now) => this.at(now),
      onRecorded: () => this.kickSequencer(),
      maxBatchSize: this.maxBatchSize,
      maxConcurrentBatches: this.maxConcurrentBatches,
    });
  }

  /** The time to bind for a caller's `now`: null (the database's `now()`) on the database clock. */
  private at(now: Date): string | null {
    return this.databaseClock ? null : now.toISOString();
  }

  /**
   * Group-committed (shared/storage/group-commit): the submits of one turn, and those that arrive
   * while earlier batches are in flight, join one statement, bounded by count and payload bytes.
   * Beyond `maxPendingCreates` waiting: ResourceExhaustedError at once.
   */
  create(delivery: NewDelivery): Promise<{ record: DeliveryRecord; created: boolean }> {
    return this.creates.add({ delivery, payloadJson: JSON.stringify(delivery.payload) });
  }

  private async flushCreates(
    batch: readonly PendingCreate[],
  ): Promise<PromiseSettledResult<{ record: DeliveryRecord; created: boolean }>[]> {
    const results = await this.insertBatch(batch);
    if (results.some((r) => r.created)) this.kickSequencer();
    return fulfilled(results);
  }

  /**
   * One statement inserts the whole batch (it commits on its own, so every caller is answered only
   * after its row is durable). Rows whose (scope, key) was taken, by an earlier delivery or by an
   * earlier row of the same batch, are not inserted; a second statement reads the winners.
   */
  private async insertBatch(
    batch: readonly Pick<PendingCreate, 'delivery' | 'payloadJson'>[],
    db: Knex | Knex.Transaction = this.knex,
  ): Promise<{ record: DeliveryRecord; created: boolean }[]> {
    const input = batch.map(({ delivery: d }, i) => ({
      i,
      id: d.id,
      channel: d.channel,
      backend: d.backend,
      backend_pinned: d.backendPinned ?? false,
      recipient: d.recipient,
      masked_recipient: d.maskedRecipient,
      scope: d.scope,
      idempotency_key: d.idempotencyKey,
      content_hash: d.contentHash,
      created_at: d.createdAt.toISOString(),
      trace_parent: d.traceParent ?? null,
      suppressed: d.suppressed === true,
      suppressed_recipients: d.suppressedRecipients?.length ? JSON.stringify(d.suppressedRecipients) : null,
      user_id: d.userId ?? null,
      category: d.category ?? null,
    }));
    // Each payload goes in as the JSON value it is (its text spliced into its row's object), not as a
    // string holding JSON: a string would escape every quote of the payload here and make PostgreSQL
    // parse it twice (the recordset, then `::jsonb`). payloadJson is JSON.stringify's output.
    const recordset = `[${input
      .map((row, i) => `${JSON.stringify(row).slice(0, -1)},"payload":${batch[i]!.payloadJson}}`)
      .join(',')}]`;
    // The rows and their events in ONE statement (one commit): a change never lacks its event.
    const inserted = rows<DeliveryRow>(
      await db.raw(
        `WITH r AS MATERIALIZED (SELECT * FROM jsonb_to_recordset(?::jsonb) AS r(i int, id uuid, channel text,
           backend text, backend_pinned boolean, recipient text, masked_recipient text, scope text,
           idempotency_key text, content_hash text, payload jsonb, created_at timestamptz, trace_parent text,
           suppressed boolean, suppressed_recipients text, user_id text, category text)),
         -- The key is taken first (deliveries is partitioned by day: no unique index can span it);
         -- a row is inserted only when it has no key or took its key here.
         k AS (INSERT INTO delivery_keys (scope, idempotency_key, delivery_id, created_at)
           SELECT r.scope, r.idempotency_key, r.id, r.created_at FROM r WHERE r.idempotency_key IS NOT NULL
           ORDER BY r.i
           ON CONFLICT (scope, idempotency_key) DO NOTHING
           RETURNING delivery_id),
         ins AS (INSERT INTO deliveries (id, channel, backend, backend_pinned, recipient, masked_recipient, scope,
           idempotency_key, content_hash, payload, status, next_attempt_at, created_at, updated_at,
           trace_parent, failure, last_error, finished_at, suppressed_recipients, user_id, category)
         SELECT r.id, r.channel, r.backend, r.backend_pinned, r.recipient, r.masked_recipient, r.scope,
           r.idempotency_key, r.content_hash, r.payload,
           CASE WHEN r.suppressed THEN 'failed' ELSE 'pending' END,
           CASE WHEN r.suppressed THEN NULL WHEN ?::boolean THEN now() ELSE r.created_at END, r.created_at,
           r.created_at, r.trace_parent,
           CASE WHEN r.suppressed THEN 'recipient_suppressed' END,
           CASE WHEN r.suppressed THEN ?::text END,
           CASE WHEN r.suppressed THEN r.created_at END,
           r.suppressed_recipients::jsonb, r.user_id, r.category
         FROM r WHERE r.idempotency_key IS NULL OR r.id IN (SELECT delivery_id FROM k)
         ORDER BY r.i
         RETURNING *),
         ev AS (${eventInsert('ins')})
         SELECT * FROM ins`,
        // Due at once by the database's clock (a replica whose clock runs ahead must not delay it).
        [recordset, this.databaseClock, SUPPRESSED_ERROR],
      ),
    );
    const byId = new Map(inserted.map((r) => [r.id, rowToRecord(r)]));
    const missing = batch.filter((p) => !byId.has(p.delivery.id));
    const existing = new Map<string, DeliveryRecord>();
    if (missing.length > 0) {
      // ON CONFLICT waited for any competing insert to commit, so the winners are visible now.
      const keys = missing.map((p) => ({ scope: p.delivery.scope, key: p.delivery.idempotencyKey }));
      const found = rows<DeliveryRow>(
        await db.raw(
          `SELECT d.* FROM jsonb_to_recordset(?::jsonb) AS q(scope text, key text)
           JOIN delivery_keys k ON k.scope = q.scope AND k.idempotency_key = q.key
           JOIN deliveries d ON d.id = k.delivery_id AND d.created_at = k.created_at`,
          [JSON.stringify(keys)],
        ),
      );
      for (const r of found) existing.set(`${r.scope}\n${r.idempotency_key}`, rowToRecord(r));
    }
    return batch.map(({ delivery: d }) => {
      const record = byId.get(d.id);
      if (record) return { record, created: true };
      const winner = existing.get(`${d.scope}\n${d.idempotencyKey}`);
      if (!winner) throw new Error('idempotency conflict without a visible row');
      return { record: winner, created: false };
    });
  }

  /**
   * One transaction: statements of up to the group-commit batch size (count and bytes), committed
   * together, so a batch is recorded whole or not at all. A key reused for other content is found
   * before the commit and rolls the whole batch back (AlreadyExistsError).
   */
  async createBatch(
    deliveries: readonly NewDelivery[],
  ): Promise<{ record: DeliveryRecord; created: boolean }[]> {
    if (deliveries.length === 0) return [];
    const items = deliveries.map((delivery) => ({ delivery, payloadJson: JSON.stringify(delivery.payload) }));
    const results = await this.knex.transaction(async (trx) => {
      const results: { record: DeliveryRecord; created: boolean }[] = [];
      for (let start = 0; start < items.length;) {
        let bytes = 0;
        let end = start;
        while (end < items.length && end - start < this.maxBatchSize) {
          bytes += items[end]!.payloadJson.length;
          if (end > start && bytes > this.maxBatchBytes) break;
          end++;
        }
        results.push(...(await this.insertBatch(items.slice(start, end), trx)));
        start = end;
      }
      for (const [i, r] of results.entries()) {
        if (!r.created && r.record.contentHash !== deliveries[i]!.contentHash)
          throw new AlreadyExistsError(IDEMPOTENCY_CONFLICT);
      }
      return results;
    });
    if (results.some((r) => r.created)) this.kickSequencer();
    return results;
  }

  async get(id: string): Promise<DeliveryRecord | null> {
    const [row] = rows<DeliveryRow>(await this.knex.raw('SELECT * FROM deliveries WHERE id = ?', [id]));
    return row ? rowToRecord(row) : null;
  }

  async list(query: DeliveryPageQuery): Promise<DeliveryPage> {
    const where: string[] = [];
    const bindings: Knex.RawBinding[] = [];
    const { filter } = query;
    for (const [column, value] of [
      ['channel', filter.channel],
      ['status', filter.status],
      ['backend', filter.backend],
      ['failure', filter.failure],
      ['scope', filter.scope],
      ['id', filter.id],
      ['user_id', filter.userId],
      ['category', filter.category],
    ] as const) {
      if (value !== undefined) {
        where.push(`${column} = ?`);
        bindings.push(value);
      }
    }
    if (filter.recipientKey !== undefined) {
      // The GIN index of the generated column (migration 20261129000000).
      where.push('recipient_keys @> ARRAY[?]::text[]');
      bindings.push(filter.recipientKey);
    }
    if (query.after) {
      where.push('(created_at, id) < (?::timestamptz, ?::uuid)');
      bindings.push(query.after.createdAt, query.after.id);
    }
    // Only the view's columns: a page never carries payloads, recipients or receipts to drop them.
    const sql = `SELECT ${VIEW_COLUMNS} FROM deliveries ${where.length ? `WHERE ${where.join(' AND ')}` : ''}
      ORDER BY created_at DESC, id DESC LIMIT ?`;
    bindings.push(query.limit + 1);
    const found = rows<ViewRow>(await this.knex.raw(sql, bindings)).map(rowToView);
    const page = found.slice(0, query.limit);
    const last = page[page.length - 1];
    return {
      records: page,
      nextKey:
        found.length > query.limit && last ? { createdAt: last.createdAt.toISOString(), id: last.id } : null,
    };
  }

  dueBackends(now: Date): Promise<DueBackend[]> {
    return this.queue.dueBackends(now);
  }

  claim(request: ClaimRequest): Promise<DeliveryRecord[]> {
    return this.queue.claim(request);
  }

  /**
   * Group-committed like `create`: the outcomes recorded during one event-loop turn (and while earlier
   * batches are in flight) go into one UPDATE, each row still conditional on its owner's lease.
   */
  completeAttempt(id: string, owner: string, result: AttemptResult): Promise<DeliveryRecord | null> {
    return this.outcomes.record(id, owner, result);
  }

  defer(id: string, owner: string, request: DeferRequest): Promise<boolean> {
    return this.queue.defer(id, owner, request);
  }

  release(ids: readonly string[], owner: string, now: Date): Promise<number> {
    return this.queue.release(ids, owner, now);
  }

  leaveOut(id: string, owner: string, request: LeaveOutRequest): Promise<boolean> {
    return this.queue.leaveOut(id, owner, request);
  }

  findByProviderReference(
    channel: DeliveryRecord['channel'],
    reference: string,
    backend?: string,
  ): Promise<DeliveryRecord | null> {
    return findByProviderReference(this.knex, channel, reference, backend);
  }

  async applyReceipt(id: string, receipt: IncomingReceipt, now: Date) {
    const applied = await applyReceipt(this.knex, id, receipt, now);
    if (applied?.fold.effect === 'applied') this.kickSequencer();
    return applied;
  }

  purgeExpired(request: PurgeRequest): Promise<PurgeResult> {
    return purgeExpired(this.knex, request);
  }

  async eraseUser(userId: string, now: Date): Promise<number> {
    const at = this.databaseClock ? null : now.toISOString();
    const erased = await this.knex.transaction(async (trx) => {
      // Queued records end FAILED first (with their event), so no worker sends them afterwards; a
      // worker holding one loses its lease, so its attempt's result is not recorded.
      await trx.raw(
        `WITH ended AS (UPDATE deliveries SET status = 'failed', last_error = ?, next_attempt_at = NULL,
           lease_owner = NULL, lease_expires_at = NULL, finished_at = COALESCE(?::timestamptz, now()),
           updated_at = COALESCE(?::timestamptz, now())
         WHERE user_id = ? AND status IN ('pending', 'retrying') RETURNING *)
         ${eventInsert('ended')}`,
        [USER_DELETED_ERROR, at, at, userId],
      );
      const erased = rows<{ id: string }>(
        await trx.raw(
          `UPDATE deliveries SET payload = NULL, recipient = NULL,
             content_erased_at = COALESCE(content_erased_at, ?::timestamptz, now())
           WHERE user_id = ? RETURNING id`,
          [at, userId],
        ),
      );
      await trx.raw(
        `UPDATE delivery_events SET reason = NULL
         WHERE delivery_id IN (SELECT id FROM deliveries WHERE user_id = ?) AND reason IS NOT NULL`,
        [userId],
      );
      return erased.length;
    });
    if (erased > 0) this.kickSequencer();
    return erased;
  }

  queueStats(now: Date): Promise<QueueStats> {
    return this.queue.queueStats(now);
  }

  async queueDepths(): Promise<BackendQueueDepth[]> {
    const found = rows<{ channel: BackendQueueDepth['channel']; backend: string; n: number | string }>(
      await this.knex.raw(
        `SELECT channel, backend, count(*) AS n FROM deliveries
         WHERE status IN ('pending', 'retrying') GROUP BY channel, backend`,
      ),
    );
    return found.map((r) => ({ channel: r.channel, backend: r.backend, queued: Number(r.n) }));
  }

  async ping(): Promise<void> {
    await this.knex.raw('SELECT 1');
  }

  eventsAfter(query: DeliveryEventQuery): Promise<DeliveryEvent[]> {
    return this.events.eventsAfter(query);
  }

  latestEventSeq(): Promise<number> {
    return this.events.latestEventSeq();
  }

  eventHorizon(scope: string): Promise<number> {
    return this.events.eventHorizon(scope);
  }

  onEventsSequenced(listener: (latestSeq: number) => void): () => void {
    return this.events.onEventsSequenced(listener);
  }

  /** After a local commit that wrote events: number them soon (failures wait for the next trigger). */
  private kickSequencer(): void {
    this.events.kick();
  }

  /** Numbers the committed events that have none yet (see DatabaseDeliveryEventLog.sequenceEvents). */
  sequenceEvents(): Promise<void> {
    return this.events.sequenceEvents();
  }
}
