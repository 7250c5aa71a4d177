/**
 * DeliveryStore: where delivery records live, implemented by DatabaseDeliveryStore (knex: PostgreSQL
 * or PGlite) and InMemoryDeliveryStore. Stores trust their input: validation, ids, clocks and the
 * retry policy belong to the pipeline. Every time a store compares against is passed in (`now`), so
 * the same clock drives leases, retries and retention.
 */
import type { DeliveryStatus, FailureKind } from './driver';
import type { DeliveryEvent, DeliveryEventQuery } from './events';
import type { FoldResult, IncomingReceipt } from './receipt';
import type { DeliveryAttempt, DeliveryFilter, DeliveryPageKey, DeliveryRecord, DeliveryView } from './types';

/** The message of AlreadyExistsError: an idempotency key reused for other content. */
export const IDEMPOTENCY_CONFLICT = 'idempotency_key was already used for a different delivery';

/** The `last_error` of a queued delivery ended because its user was deleted (`eraseUser`). */
export const USER_DELETED_ERROR = 'user deleted';

/** A delivery to record: the pipeline has validated it and chosen its id and time. */
export interface NewDelivery {
  id: string;
  channel: DeliveryRecord['channel'];
  backend: string;
  /** The caller named the backend: never routed elsewhere (false when absent). */
  backendPinned?: boolean;
  recipient: string;
  maskedRecipient: string;
  scope: string;
  idempotencyKey: string | null;
  contentHash: string;
  payload: unknown;
  createdAt: Date;
  /** The accepting call's W3C traceparent (the attempt spans continue its trace); null or absent: none. */
  traceParent?: string | null;
  /**
   * The recipient is suppressed: record the delivery FAILED (`recipient_suppressed`) at once, never
   * queued, so no worker ever sends it.
   */
  suppressed?: boolean;
  /** Masked recipients left out of a multi-recipient send because they are suppressed. */
  suppressedRecipients?: string[];
  /** The user it is for (a Notify fan-out); absent or null: none. */
  userId?: string | null;
  /** The Notify category it was sent for; absent or null: none. */
  category?: string | null;
}

/** One page query, newest first. */
export interface DeliveryPageQuery {
  filter: DeliveryFilter;
  limit: number;
  after?: DeliveryPageKey;
}

/**
 * A page of records as views (no content, no lease; `receipts` left empty: only a single record's
 * read shows them) and where the next one starts (null when there is none).
 */
export interface DeliveryPage {
  records: DeliveryView[];
  nextKey: DeliveryPageKey | null;
}

/** A backend with due work. */
export interface DueBackend {
  channel: DeliveryRecord['channel'];
  backend: string;
}

/** A claim of due deliveries of one backend (names are unique per channel, not across channels). */
export interface ClaimRequest {
  channel: DeliveryRecord['channel'];
  backend: string;
  owner: string;
  now: Date;
  leaseMs: number;
  limit: number;
}

/** How an attempt ended, as the pipeline records it. */
export interface AttemptResult {
  /**
   * The attempt to append; null when the record ends without one (the suppression list stopped it
   * before any provider was contacted).
   */
  attempt: DeliveryAttempt | null;
  /** `last_error` when there is no attempt (with an attempt, its error is). */
  lastError?: string;
  status: Extract<DeliveryStatus, 'sent' | 'retrying' | 'failed'>;
  nextAttemptAt: Date | null;
  /** Why it failed; kept only with status `failed` (null there when absent). */
  failure?: FailureKind | null;
  /**
   * The record's backend from now on: the one this attempt used, or the next one failover chose
   * for the retry. Absent: unchanged.
   */
  backend?: string;
  now: Date;
  /**
   * The record's `created_at` as claimed: the database store finds the row by (id, created_at), so
   * only its week's partition is probed (README, "Completions by partition"). Absent: by id alone.
   */
  createdAt?: Date;
}

/** A claimed record put back without an attempt (its backends' circuits are open). */
export interface DeferRequest {
  nextAttemptAt: Date;
  now: Date;
  /** The record's `created_at` as claimed: only its partition is probed (as AttemptResult.createdAt). */
  createdAt?: Date;
}

/**
 * A claimed record narrowed by the suppression rule before its attempt: the recipients it still goes
 * to and the payload without the others, which it names (masked).
 */
export interface LeaveOutRequest {
  recipient: string;
  maskedRecipient: string;
  payload: unknown;
  /** Every recipient left out so far (at submit and now), masked: replaces the record's list. */
  suppressedRecipients: string[];
  now: Date;
}

/** Queued records of one backend (the operator console's queue depth). */
export interface BackendQueueDepth extends DueBackend {
  queued: number;
}

/** Counts behind the queue gauges. */
export interface QueueStats {
  /** Records still to be sent, by status (pending, retrying). */
  queued: Record<'pending' | 'retrying', number>;
  /** The oldest next-attempt time among due records (not leased), null when none is due. */
  oldestDueAt: Date | null;
}

/** Settings of one retention pass. */
export interface PurgeRequest {
  now: Date;
  /** Final records that ended before this lose payload and full recipient. */
  eraseBefore: Date;
  /** Final records that ended before this are deleted. */
  deleteBefore: Date;
  /** Rows per statement. */
  batchSize: number;
}

/** What one retention pass did. */
export interface PurgeResult {
  erased: number;
  deleted: number;
}

/** A receipt folded into a record (`foldReceipt`), and the record as it is now. */
export interface AppliedReceipt {
  record: DeliveryRecord;
  fold: FoldResult;
}

/** Storage of delivery records. */
export interface DeliveryStore {
  /** `database` or `memory`, for health details and logs. */
  readonly backend: 'database' | 'memory';
  /**
   * Records a delivery; resolves once it is committed. When `(scope, idempotencyKey)` is taken, records
   * nothing and returns the existing record with `created: false`.
   */
  create(delivery: NewDelivery): Promise<{ record: DeliveryRecord; created: boolean }>;
  /**
   * Records many deliveries in ONE commit, all or none, with `create`'s idempotency per delivery;
   * results in input order. A key already taken (by an earlier delivery or an earlier item of the
   * batch) with another `contentHash` is AlreadyExistsError, and so is any other error: nothing of
   * the batch is committed.
   */
  createBatch(deliveries: readonly NewDelivery[]): Promise<{ record: DeliveryRecord; created: boolean }[]>;
  get(id: string): Promise<DeliveryRecord | null>;
  list(query: DeliveryPageQuery): Promise<DeliveryPage>;
  /** Backends (with their channel) that have records due at `now` and not leased. */
  dueBackends(now: Date): Promise<DueBackend[]>;
  /**
   * Leases up to `limit` due records of `backend` to `owner` until `now + leaseMs`, oldest due first;
   * a record leased to another owner is skipped until its lease has expired.
   */
  claim(request: ClaimRequest): Promise<DeliveryRecord[]>;
  /**
   * Appends an attempt and moves the record on, only while `owner` still holds its lease and it is not
   * final; clears the lease. Returns the updated record, or null when the lease was lost.
   */
  completeAttempt(id: string, owner: string, result: AttemptResult): Promise<DeliveryRecord | null>;
  /**
   * Clears `owner`'s lease on a queued record and moves its next attempt to `nextAttemptAt`, adding
   * no attempt and keeping its status. False when the lease was lost.
   */
  defer(id: string, owner: string, request: DeferRequest): Promise<boolean>;
  /**
   * Narrows a queued record `owner` holds the lease of (recipient, masked recipient, payload,
   * suppressed recipients) as the suppression check before its attempt decided; the lease stays.
   * False when the lease was lost.
   */
  leaveOut(id: string, owner: string, request: LeaveOutRequest): Promise<boolean>;
  /** Clears `owner`'s leases on `ids` (status kept) so another worker takes them at once. */
  release(ids: readonly string[], owner: string, now: Date): Promise<number>;
  /**
   * The newest delivery of `channel` whose provider reference (the provider's message id) is
   * `reference`, and whose backend is `backend` when given; null when none (indexed). References
   * are only unique per provider account: two backends may hand out the same one, and a delivery
   * that failed over holds the reference of the backend that accepted it (its `backend`).
   */
  findByProviderReference(
    channel: DeliveryRecord['channel'],
    reference: string,
    backend?: string,
  ): Promise<DeliveryRecord | null>;
  /**
   * Folds a verified receipt into delivery `id` atomically (`foldReceipt`: forward-only status,
   * duplicates by event id, bounded history); null when there is no such delivery.
   */
  applyReceipt(id: string, receipt: IncomingReceipt, now: Date): Promise<AppliedReceipt | null>;
  /** One batched retention pass: erases content of old final records, deletes older ones. */
  purgeExpired(request: PurgeRequest): Promise<PurgeResult>;
  /**
   * DeleteUser: erases the content and full recipient of every record of `userId` (and the reason
   * text of their events, which may quote a provider's words about the address), keeping ids,
   * statuses and masked recipients. A record still queued is ended FAILED first (`last_error`
   * "user deleted", its event appended), so nothing is sent to a deleted user. Returns how many
   * records were erased.
   */
  eraseUser(userId: string, now: Date): Promise<number>;
  /** The cheap counts behind the queue metrics. */
  queueStats(now: Date): Promise<QueueStats>;
  /**
   * The operator console's queue depth: queued records (pending or retrying) per channel and
   * backend, whether due yet or not; only backends with at least one.
   */
  queueDepths?(): Promise<BackendQueueDepth[]>;
  /** A cheap round trip, for the health check. */
  ping(): Promise<void>;

  // --- The event log (events.ts; WatchDeliveries). Every method above that changes a record's status
  // (create, createBatch, completeAttempt, applyReceipt when applied) appends its event in the same
  // commit; purgeExpired deletes a record's events with it and raises its scope's horizon.

  /** Sequenced events after `query.after` in the given scopes and filter, oldest first. */
  eventsAfter(query: DeliveryEventQuery): Promise<DeliveryEvent[]>;
  /** The highest seq given so far (0 when none): where a watch without a cursor starts. */
  latestEventSeq(): Promise<number>;
  /** The highest seq the retention deleted in `scope` (0 when none): older cursors get a RESET. */
  eventHorizon(scope: string): Promise<number>;
  /**
   * Gives committed, unsequenced events their seq (the database store's sequencer; the memory store
   * sequences at once and resolves). Resolves after a pass that started after the call.
   */
  sequenceEvents(): Promise<void>;
  /** Called (in this process) after events up to `latestSeq` were sequenced; returns unsubscribe. */
  onEventsSequenced(listener: (latestSeq: number) => void): () => void;
}
