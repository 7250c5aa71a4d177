/**
 * DeliveryPipeline: the one way every send (email, SMS, push) enters the system. `submit` validates,
 * resolves the backend, applies the caller's idempotency key and records the delivery (resolving only
 * once the record is committed); the worker then sends it and retries it by the retry policy. `get`
 * and `list` show records without what was sent (masked recipient, no payload).
 */
import { isUuid, newId } from '../../../shared/runtime/ids';
import { pageSize as resolvePageSize } from '../../../shared/storage/page-size';
import type { Registry } from 'prom-client';
import {
  AlreadyExistsError,
  FailedPreconditionError,
  InvalidArgumentError,
  NotFoundError,
} from '../../../shared/errors';
import type { Logger } from '../../../shared/logging/logger';
import { silentLogger } from '../../../shared/logging/logger';
import type { DeliveryConfig } from './config';
import { contentHash } from './content-hash';
import { CircuitBreakers } from './circuit-breaker';
import { FAILURE_KINDS, type Channel, type DeliveryDriver } from './driver';
import {
  applySuppressionRule,
  recipientsOf,
  logUncheckedSuppression,
  type Suppressions,
  type WithoutRecipients,
} from './suppression';
import { BackendRouter, type BackendLookup } from './routing';
import { maskRecipient } from './mask';
import { DeliveryMetrics } from './metrics';
import type { DeliveryObserver } from './observer';
import { currentTraceParent } from './trace-context';
import { decodeDeliveryPageToken, encodeDeliveryPageToken } from './page-token';
import { RetryPolicy } from './retry-policy';
import type { JobLease } from '../../../shared/storage/periodic-job';
import { DeliveryRetention } from './retention';
import { IDEMPOTENCY_CONFLICT, type BackendQueueDepth, type DeliveryStore, type NewDelivery } from './store';
import {
  CHANNELS,
  DELIVERY_STATUSES,
  toView,
  type DeliveryFilter,
  type DeliveryRecord,
  type DeliveryView,
} from './types';
import { DeliveryWorker } from './worker';
import { type Clock, systemClock } from '../../../shared/runtime/clock';
import { checkText } from '../../../shared/text/check';

export type { BackendLookup } from './routing';

/** A validated submit on its way to the store. */
interface Prepared {
  delivery: NewDelivery;
  hash: string;
  input: SubmitInput;
  /** The backend the caller named, or the channel's primary. */
  named: DeliveryDriver;
  /** The caller named the backend. */
  pinned: boolean;
  /** What the suppression list did to it (counted once its record is created). */
  suppression?: 'stopped' | 'partial';
}

/** What a caller submits. */
export interface SubmitInput {
  channel: Channel;
  /** Backend name; the channel's primary when absent or empty. */
  backend?: string;
  /**
   * Email addresses (comma-separated when several: to, cc, bcc), an E.164 number or a device token;
   * the channel layer has validated its form. Masked per address for display.
   */
  recipient: string;
  /** What to send: the channel's payload, JSON-serialisable. */
  payload: unknown;
  /**
   * What the idempotency content hash covers instead of `payload`. A channel whose payload carries a
   * value made fresh on every call (email's Message-ID) hashes the payload without it, so a retried
   * call with the same key and content is recognised as the same delivery.
   */
  hashPayload?: unknown;
  /** Who the idempotency key belongs to (API token identity, or one scope when tokens are off). */
  scope: string;
  /** Optional; the same key with the same content returns the first delivery and sends nothing. */
  idempotencyKey?: string;
  /**
   * A send to several recipients (an email's to, cc and bcc): each one, as the suppression list
   * checks them. Absent: `recipient` is the one recipient.
   */
  recipients?: readonly string[];
  /**
   * For a send to several recipients: the payload and recipient without the suppressed ones
   * (`suppressed` holds normalised recipients, see `normaliseRecipient`), or null when what is left
   * cannot be sent; then the whole send is stopped as suppressed. Absent: any suppressed recipient
   * stops the send.
   */
  withoutRecipients?: WithoutRecipients;
  /** The user the delivery is for (a Notify fan-out), so DeleteUser can erase it; absent: none. */
  userId?: string;
  /** The Notify category it is sent for (the console filters by it); absent: none. */
  category?: string;
}

/** What submit answers. */
export interface SubmitResult {
  delivery: DeliveryView;
  /** False when an earlier delivery with the same key and content was returned instead. */
  created: boolean;
  /**
   * The stored payload: this submit's, or the earlier delivery's when `created` is false (null once
   * the content retention erased it). For the channel layer that built it (email reads its
   * Message-ID back), never for responses.
   */
  payload: unknown;
}

/** A page of deliveries, newest first. */
export interface DeliveryListPage {
  deliveries: DeliveryView[];
  /** Empty when there is no further page. */
  nextPageToken: string;
}

/** Options of DeliveryPipeline. */
export interface DeliveryPipelineOptions {
  store: DeliveryStore;
  lookup: BackendLookup;
  config: DeliveryConfig;
  /** Where the delivery metrics are registered; none means no metrics. */
  registry?: Registry;
  logger?: Logger;
  clock?: Clock;
  /** Jitter source in [0, 1). */
  random?: () => number;
  /** Lease owner id of this process's worker. */
  owner?: string;
  /** Who runs the retention pass per interval (a DatabaseJobLease across replicas); this process by default. */
  retentionLease?: JobLease;
  /** Told about every delivery this process's worker brings to a final status (SENT or FAILED). */
  observer?: DeliveryObserver;
  /**
   * The suppression list: checked by every submit before a backend is chosen, and fed by the worker
   * from provider errors that say a recipient must not be contacted again. None: no suppression.
   */
  suppression?: Suppressions;
  /**
   * Per channel, how it leaves suppressed recipients out of a stored payload (email:
   * `withoutSuppressed`): the check before each attempt applies the submit's rule with it. A submit's
   * own `withoutRecipients` wins at submit. None for a channel: any suppressed recipient stops it.
   */
  withoutRecipients?: Partial<Record<Channel, WithoutRecipients>>;
}

/** Default page size of `list`. */
export const DEFAULT_PAGE_SIZE = 50;
/** Largest page of `list`; a larger request is capped. */
export const MAX_PAGE_SIZE = 500;
const MAX_SCOPE_LENGTH = 256;
const MAX_KEY_LENGTH = 256;
// An email goes to up to mailer.max_recipients (100) addresses of up to 254 characters each.
const MAX_RECIPIENT_LENGTH = 32 * 1024;
const MAX_BACKEND_LENGTH = 128;
/**
 * A submit's scope, key, recipient or backend: required, at most `max` code points, no control
 * characters, storable (two idempotency keys "k\ud800" and "k\udc00" must not become one stored key).
 */
function checkField(value: unknown, field: string, max: number): string {
  return checkText(value, field, { max, required: 'non_empty' });
}

/** The delivery pipeline facade. */
export class DeliveryPipeline {
  /** The worker of this process (exposed for shutdown figures and tests). */
  readonly worker: DeliveryWorker;
  /** The retention pass; `retention.runOnce` is what the periodic job runs. */
  readonly retention: DeliveryRetention;
  /** This process's circuit breakers, one per backend (health checks read them). */
  readonly breakers: CircuitBreakers;
  /** The routing rules (`delivery.routing`). */
  readonly router: BackendRouter;
  private readonly store: DeliveryStore;
  private readonly log: Logger;
  private readonly clock: Clock;

  constructor(private readonly options: DeliveryPipelineOptions) {
    this.store = options.store;
    this.clock = options.clock ?? systemClock;
    this.log = (options.logger ?? silentLogger()).child({ component: 'delivery-pipeline' });
    this.breakers = new CircuitBreakers(options.config.circuit_breaker, this.clock, options.registry);
    this.router = new BackendRouter(options.lookup, options.config.routing, this.breakers);
    const metrics = options.registry
      ? new DeliveryMetrics(
          options.registry,
          options.store,
          this.clock,
          this.log,
          options.config.queue_stats_max_age_seconds * 1000,
        )
      : undefined;
    this.worker = new DeliveryWorker({
      store: options.store,
      resolveDriver: (r) => {
        const driver = options.lookup(r.channel, r.backend);
        return driver && driver.channel === r.channel ? driver : undefined;
      },
      router: this.router,
      breakers: this.breakers,
      policy: new RetryPolicy(options.config, options.random),
      config: options.config,
      metrics,
      logger: options.logger,
      clock: this.clock,
      owner: options.owner,
      observer: options.observer,
      suppression: options.suppression,
      withoutRecipients: options.withoutRecipients,
    });
    this.retention = new DeliveryRetention({
      store: options.store,
      config: options.config,
      logger: options.logger,
      clock: this.clock,
      lease: options.retentionLease,
    });
  }

  /**
   * Records a delivery and resolves once it is committed (status pending); the worker is woken to
   * send it. Bad input is InvalidArgumentError and nothing is recorded; the same idempotency key with
   * other content is AlreadyExistsError.
   */
  async submit(input: SubmitInput): Promise<SubmitResult> {
    const prepared = this.prepare(input);
    await this.applySuppression([prepared]);
    this.route(prepared);
    const result = this.finish(prepared, await this.store.create(prepared.delivery));
    if (result.created) this.worker.wake({ channel: input.channel, backend: prepared.delivery.backend });
    return result;
  }

  /**
   * Records many deliveries in ONE commit, all or nothing, and wakes the worker once. Every input is
   * validated first: a bad one throws (as `submit` would) and nothing is recorded; a key reused for
   * other content is AlreadyExistsError and nothing is recorded either, nor on any store error, so a
   * caller that retries the whole batch never sends an item twice. Results in input order. The
   * caller bounds the batch (`delivery.max_batch_size`).
   */
  async submitBatch(inputs: readonly SubmitInput[]): Promise<SubmitResult[]> {
    const prepared = inputs.map((input) => this.prepare(input));
    await this.applySuppression(prepared);
    for (const p of prepared) this.route(p);
    const recorded = await this.store.createBatch(prepared.map((p) => p.delivery));
    const results = prepared.map((p, i) => this.finish(p, recorded[i]!));
    const woken = new Set<string>();
    for (const [i, p] of prepared.entries()) {
      const key = `${p.delivery.channel}/${p.delivery.backend}`;
      if (results[i]!.created && !woken.has(key)) {
        woken.add(key);
        this.worker.wake({ channel: p.delivery.channel, backend: p.delivery.backend });
      }
    }
    return results;
  }

  /**
   * Applies the suppression rule (`applySuppressionRule`, one query per channel) to `prepared`: a
   * stopped send is marked to be recorded FAILED / recipient_suppressed; a multi-recipient send
   * leaves the suppressed ones out and names them (masked) in the record. Runs before any backend is
   * chosen. A list that cannot be read leaves the sends unchecked (logged): they are recorded pending
   * and the same rule runs when the worker claims them, before any provider is contacted; it defers
   * them while the list stays unreadable.
   */
  private async applySuppression(prepared: readonly Prepared[]): Promise<void> {
    const list = this.options.suppression;
    if (!list || prepared.length === 0) return;
    let verdicts;
    try {
      verdicts = await applySuppressionRule(
        list,
        prepared.map((p) => ({
          channel: p.delivery.channel,
          recipients: p.input.recipients ?? recipientsOf(p.delivery.channel, p.input.recipient),
          payload: p.delivery.payload,
          withoutRecipients:
            p.input.withoutRecipients ?? this.options.withoutRecipients?.[p.delivery.channel],
        })),
        'submit',
      );
    } catch (err) {
      logUncheckedSuppression(
        this.log,
        err,
        { sends: prepared.length },
        {
          timeout: 'suppression check at submit timed out: accepted unchecked, checked at claim',
          failed: 'suppression check at submit failed: accepted unchecked, checked at claim',
        },
      );
      return;
    }
    for (const [i, p] of prepared.entries()) {
      const verdict = verdicts[i]!;
      if (verdict.kind === 'partial') {
        p.delivery.recipient = verdict.recipient;
        p.delivery.payload = verdict.payload;
        p.delivery.maskedRecipient = verdict.maskedRecipient;
        p.delivery.suppressedRecipients = verdict.suppressedRecipients;
        p.suppression = 'partial';
      } else if (verdict.kind === 'stopped') {
        p.delivery.suppressed = true;
        p.suppression = 'stopped';
      }
    }
  }

  /**
   * Chooses the backend of a new delivery nobody named (round robin takes the next in turn); after
   * the suppression check, so a stopped send takes no turn.
   */
  private route(p: Prepared): void {
    if (p.pinned || p.delivery.suppressed) return;
    p.delivery.backend = this.router.pickForNew(p.delivery.channel, p.named).name;
  }

  /** Validates one input and builds its record; throws on bad input, records nothing. */
  private prepare(input: SubmitInput): Prepared {
    if (!CHANNELS.includes(input.channel)) {
      throw new InvalidArgumentError(`channel must be one of ${CHANNELS.join(', ')}`, 'channel');
    }
    const scope = checkField(input.scope, 'scope', MAX_SCOPE_LENGTH);
    const idempotencyKey = input.idempotencyKey
      ? checkField(input.idempotencyKey, 'idempotency_key', MAX_KEY_LENGTH)
      : null;
    const recipient = checkField(input.recipient, 'recipient', MAX_RECIPIENT_LENGTH);
    const requested = input.backend ? checkField(input.backend, 'backend', MAX_BACKEND_LENGTH) : undefined;
    const named = this.options.lookup(input.channel, requested);
    if (!named) {
      if (requested === undefined)
        throw new FailedPreconditionError(`no ${input.channel} backend configured`);
      throw new InvalidArgumentError(`unknown ${input.channel} backend "${requested}"`, 'backend');
    }
    if (named.channel !== input.channel) {
      throw new InvalidArgumentError(`backend "${named.name}" does not serve ${input.channel}`, 'backend');
    }
    const payload = this.checkPayload(input.payload);
    const hashed = input.hashPayload === undefined ? payload : input.hashPayload;
    // The hash covers the backend the caller asked for (the primary's name when none), not the one
    // round robin picks: a retried call with the same key and content is the same delivery.
    const hash = contentHash({ channel: input.channel, backend: named.name, recipient, payload: hashed });
    return {
      hash,
      input,
      named,
      pinned: requested !== undefined,
      delivery: {
        id: newId(),
        channel: input.channel,
        backend: named.name,
        backendPinned: requested !== undefined,
        recipient,
        maskedRecipient: maskRecipient(input.channel, recipient),
        scope,
        idempotencyKey,
        contentHash: hash,
        payload,
        createdAt: new Date(this.clock.now()),
        // The caller's span (SendEmail): the worker's attempt span continues this trace.
        traceParent: currentTraceParent(),
        ...(input.userId ? { userId: input.userId } : {}),
        ...(input.category ? { category: input.category } : {}),
      },
    };
  }

  /** What the store answered, as the caller sees it; a key reused for other content throws. */
  private finish(prepared: Prepared, record: { record: DeliveryRecord; created: boolean }): SubmitResult {
    if (!record.created) {
      if (record.record.contentHash !== prepared.hash) {
        throw new AlreadyExistsError(IDEMPOTENCY_CONFLICT);
      }
      return { delivery: toView(record.record), created: false, payload: record.record.payload };
    }
    // A replayed call (same key) was counted when it was first stopped.
    if (prepared.suppression)
      this.options.suppression?.countStopped(prepared.delivery.channel, prepared.suppression);
    // Built only when debug is on: this runs once per acknowledged send.
    if (this.log.isLevelEnabled('debug'))
      this.log.debug(
        {
          deliveryId: record.record.id,
          channel: prepared.delivery.channel,
          backend: prepared.delivery.backend,
          recipient: record.record.maskedRecipient,
        },
        'delivery recorded',
      );
    return { delivery: toView(record.record), created: true, payload: record.record.payload };
  }

  /** Round-trips the payload through JSON (what the store keeps) and bounds it. */
  private checkPayload(payload: unknown): unknown {
    let json: string | undefined;
    try {
      json = JSON.stringify(payload);
    } catch {
      throw new InvalidArgumentError('payload is not serialisable as JSON', 'payload');
    }
    if (json === undefined || payload === null)
      throw new InvalidArgumentError('payload is required', 'payload');
    // PostgreSQL's jsonb cannot hold NUL characters.
    if (json.includes('\\u0000'))
      throw new InvalidArgumentError('payload contains NUL characters', 'payload');
    if (Buffer.byteLength(json) > this.options.config.max_payload_bytes) {
      throw new InvalidArgumentError(
        `payload is larger than ${this.options.config.max_payload_bytes} bytes`,
        'payload',
      );
    }
    return JSON.parse(json) as unknown;
  }

  /**
   * One delivery; NotFoundError when unknown, InvalidArgumentError when `id` is not a UUID. With
   * `scope`, a delivery of another caller is NotFoundError too: indistinguishable from a missing one.
   */
  async get(id: string, scope?: string): Promise<DeliveryView> {
    const normalised = typeof id === 'string' ? id.toLowerCase() : '';
    if (!isUuid(normalised)) throw new InvalidArgumentError('id must be a UUID', 'id');
    const record = await this.store.get(normalised);
    if (!record || (scope !== undefined && record.scope !== scope)) {
      throw new NotFoundError(`delivery ${normalised} not found`);
    }
    return toView(record);
  }

  /**
   * Deliveries newest first under `filter`. `pageSize` 0 or absent means 50; above 500 is capped;
   * `pageToken` must come from the previous page of the same filter.
   */
  async list(filter: DeliveryFilter = {}, pageToken = '', pageSize = 0): Promise<DeliveryListPage> {
    if (filter.channel !== undefined && !CHANNELS.includes(filter.channel)) {
      throw new InvalidArgumentError(`channel must be one of ${CHANNELS.join(', ')}`, 'channel');
    }
    if (filter.status !== undefined && !DELIVERY_STATUSES.includes(filter.status)) {
      throw new InvalidArgumentError(`status must be one of ${DELIVERY_STATUSES.join(', ')}`, 'status');
    }
    if (filter.backend !== undefined) checkField(filter.backend, 'backend', MAX_BACKEND_LENGTH);
    if (filter.failure !== undefined && !FAILURE_KINDS.includes(filter.failure)) {
      throw new InvalidArgumentError(`failure must be one of ${FAILURE_KINDS.join(', ')}`, 'failure');
    }
    const limit = resolvePageSize(pageSize, { default: DEFAULT_PAGE_SIZE, max: MAX_PAGE_SIZE });
    const after = pageToken ? decodeDeliveryPageToken(filter, pageToken) : undefined;
    const page = await this.store.list({ filter, limit, after });
    return {
      deliveries: page.records,
      nextPageToken: page.nextKey ? encodeDeliveryPageToken(filter, page.nextKey) : '',
    };
  }

  /** Queued records (pending or retrying) per channel and backend, for the operator console. */
  async queueDepths(): Promise<BackendQueueDepth[]> {
    return (await this.store.queueDepths?.()) ?? [];
  }

  /** Starts the worker (pending and retrying records left by an earlier process resume now). */
  start(): void {
    this.worker.start();
  }

  /** Stops the worker: in-flight attempts finish until `deadline`, the rest are released. */
  async stop(deadline: Date): Promise<{ finished: number; released: number }> {
    await this.retention.stop();
    return this.worker.stop(deadline);
  }
}
