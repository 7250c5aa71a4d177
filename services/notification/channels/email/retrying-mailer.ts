/**
 * `RetryingMailer` (the spec's name): any mailer, wrapped with the delivery pipeline's retry policy
 * and delivery-store tracking, for use in-process without the service. It is a small DeliveryPipeline
 * of its own (one backend, the given store, its own worker), so retries, backoff, Retry-After,
 * permanent failures and the one Message-ID per delivery are exactly the service's: there is no
 * second retry implementation.
 *
 *   const mailer = new RetryingMailer(new SmtpMailer({...}), { config: { max_attempts: 3 } });
 *   const delivery = await mailer.send(new Mailable().to('jane@example.com').subject('Hi').text('..'));
 *   // delivery.status is 'sent' or 'failed'; delivery.attempts lists every try
 *   await mailer.close();
 *
 * The worker claims every due email delivery of the mailer's backend name in the store: give it a
 * store of its own (the default, in memory) unless it is meant to work that backend's queue.
 */
import { parseSectionInCode } from '../../../../shared/config';
import { UnavailableError } from '../../../../shared/errors';
import type { Logger } from '../../../../shared/logging/logger';
import { type DeliveryConfig, DeliveryConfigSchema } from '../../delivery/config';
import { InMemoryDeliveryStore } from '../../delivery/memory-store';
import { DeliveryPipeline } from '../../delivery/pipeline';
import type { AttemptResult, DeliveryStore } from '../../delivery/store';
import { type DeliveryRecord, type DeliveryView, FINAL_STATUSES } from '../../delivery/types';
import { emailSubmission, storedMessageId } from './email-sender';
import { DEFAULT_MAILABLE_LIMITS, type EmailMessage, Mailable, type MailableLimits } from './mailable';
import type { MailerProtocol } from './mailer';

/** Options of RetryingMailer. */
export interface RetryingMailerOptions {
  /** Where the delivery records live; a fresh in-memory store by default. */
  store?: DeliveryStore;
  /** Retry and worker settings as in `notification.delivery` (validated; defaults for the rest). */
  config?: Partial<DeliveryConfig>;
  logger?: Logger;
  /** The limits each Mailable is built with (defaults of `mailer`). */
  limits?: MailableLimits;
  /** The idempotency scope of this mailer's deliveries (default `retrying-mailer`). */
  scope?: string;
}

/** A final delivery record and the Message-ID every attempt carried. */
export type EmailDelivery = DeliveryView & { messageId: string };

/** What the store decorator tells when an attempt made a record final. */
type FinalListener = (record: DeliveryRecord) => void;

/** The store, passed through, except that a record becoming final is announced to the waiters. */
class FinalNotifyingStore implements DeliveryStore {
  readonly backend: DeliveryStore['backend'];
  constructor(
    private readonly inner: DeliveryStore,
    private readonly onFinal: FinalListener,
  ) {
    this.backend = inner.backend;
  }
  create: DeliveryStore['create'] = (d) => this.inner.create(d);
  createBatch: DeliveryStore['createBatch'] = (ds) => this.inner.createBatch(ds);
  get: DeliveryStore['get'] = (id) => this.inner.get(id);
  list: DeliveryStore['list'] = (q) => this.inner.list(q);
  dueBackends: DeliveryStore['dueBackends'] = (now) => this.inner.dueBackends(now);
  claim: DeliveryStore['claim'] = (r) => this.inner.claim(r);
  defer: DeliveryStore['defer'] = (id, owner, r) => this.inner.defer(id, owner, r);
  release: DeliveryStore['release'] = (ids, owner, now) => this.inner.release(ids, owner, now);
  leaveOut: DeliveryStore['leaveOut'] = (id, owner, r) => this.inner.leaveOut(id, owner, r);
  purgeExpired: DeliveryStore['purgeExpired'] = (r) => this.inner.purgeExpired(r);
  eraseUser: DeliveryStore['eraseUser'] = (userId, now) => this.inner.eraseUser(userId, now);
  queueStats: DeliveryStore['queueStats'] = (now) => this.inner.queueStats(now);
  ping: DeliveryStore['ping'] = () => this.inner.ping();
  findByProviderReference: DeliveryStore['findByProviderReference'] = (c, ref, backend) =>
    this.inner.findByProviderReference(c, ref, backend);
  applyReceipt: DeliveryStore['applyReceipt'] = (id, r, now) => this.inner.applyReceipt(id, r, now);
  eventsAfter: DeliveryStore['eventsAfter'] = (q) => this.inner.eventsAfter(q);
  latestEventSeq: DeliveryStore['latestEventSeq'] = () => this.inner.latestEventSeq();
  eventHorizon: DeliveryStore['eventHorizon'] = (scope) => this.inner.eventHorizon(scope);
  sequenceEvents: DeliveryStore['sequenceEvents'] = () => this.inner.sequenceEvents();
  onEventsSequenced: DeliveryStore['onEventsSequenced'] = (l) => this.inner.onEventsSequenced(l);
  async completeAttempt(id: string, owner: string, result: AttemptResult): Promise<DeliveryRecord | null> {
    const record = await this.inner.completeAttempt(id, owner, result);
    if (record && FINAL_STATUSES.includes(record.status)) this.onFinal(record);
    return record;
  }
}

/** A mailer with the pipeline's retries and a delivery record per message. */
export class RetryingMailer {
  /** The pipeline behind it (records: `pipeline.get(id)`, `pipeline.list()`). */
  readonly pipeline: DeliveryPipeline;
  private readonly waiters = new Map<string, Set<() => void>>();
  private readonly pollMs: number;
  private readonly limits: MailableLimits;
  private readonly scope: string;
  private started = false;
  private closed = false;

  constructor(
    private readonly mailer: MailerProtocol,
    options: RetryingMailerOptions = {},
  ) {
    const config = parseSectionInCode(DeliveryConfigSchema, options.config ?? {}, 'notification', [
      'delivery',
    ]);
    this.pollMs = config.poll_interval_ms;
    this.limits = options.limits ?? DEFAULT_MAILABLE_LIMITS;
    this.scope = options.scope ?? 'retrying-mailer';
    const store = new FinalNotifyingStore(options.store ?? new InMemoryDeliveryStore(), (r) => {
      for (const wake of this.waiters.get(r.id) ?? []) wake();
    });
    this.pipeline = new DeliveryPipeline({
      store,
      lookup: (channel, backend) =>
        channel === 'email' && (backend === undefined || backend === mailer.name) ? mailer : undefined,
      config,
      logger: options.logger,
    });
  }

  /**
   * Records the message, sends it with retries, and resolves with the final record (`sent` or
   * `failed`, every attempt listed) and its Message-ID. InvalidArgumentError for an invalid
   * Mailable (nothing recorded); UnavailableError when the mailer is closed before the end.
   */
  async send(
    message: Mailable | EmailMessage,
    opts: { idempotencyKey?: string } = {},
  ): Promise<EmailDelivery> {
    if (this.closed) throw new UnavailableError('the retrying mailer is closed');
    const built = message instanceof Mailable ? message.build(this.limits) : message;
    const { delivery, payload } = await this.pipeline.submit(
      // Named: this pipeline has one mailer, and its records are that mailer's.
      emailSubmission(built, this.mailer, this.scope, {
        backend: this.mailer.name,
        idempotencyKey: opts.idempotencyKey,
      }),
    );
    const messageId = storedMessageId(payload);
    if (!this.started) {
      this.started = true;
      this.pipeline.start();
    }
    return { ...(await this.untilFinal(delivery.id)), messageId };
  }

  /** Resolves with the record once it is final: woken by the store, checked every poll interval. */
  private async untilFinal(id: string): Promise<DeliveryView> {
    for (;;) {
      const view = await this.pipeline.get(id);
      if (FINAL_STATUSES.includes(view.status)) return view;
      if (this.closed) throw new UnavailableError(`the retrying mailer closed before delivery ${id} ended`);
      // The worker's timers are unref'd; this one is not, so a script awaiting send() stays alive
      // through the backoff. It also covers a record that another process finished.
      await new Promise<void>((resolve) => {
        const set = this.waiters.get(id) ?? new Set<() => void>();
        this.waiters.set(id, set);
        const done = () => {
          clearTimeout(timer);
          set.delete(done);
          if (set.size === 0) this.waiters.delete(id);
          resolve();
        };
        const timer = setTimeout(done, this.pollMs);
        set.add(done);
      });
    }
  }

  /**
   * Stops the worker: attempts in flight finish until `deadline` (now by default), the rest stay
   * queued in the store. Sends still waiting end with UnavailableError. The wrapped mailer is the
   * caller's to close.
   */
  async close(deadline: Date = new Date()): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.started) await this.pipeline.stop(deadline);
    for (const set of this.waiters.values()) for (const wake of [...set]) wake();
  }
}
