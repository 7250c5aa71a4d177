/**
 * ReceiptRecorder: the one place a verified provider receipt enters the delivery area. The channel
 * webhooks (channels/sms/sms-webhooks.ts, channels/email/event-webhook.ts) verify the provider's
 * signature and parse its protocol; this finds the delivery (our delivery id when the provider echoes
 * it, else the provider's message id), only among the deliveries of the backend whose key verified
 * it, folds the receipt into it through the store, counts it, and hands recipients who must not be
 * contacted again to the SuppressionSink. Callbacks without a signed timestamp are taken once (the
 * inbound replay store); a receipt that cannot be applied never blocks the others.
 */
import type { Registry } from 'prom-client';
import { DomainError } from '../../../shared/errors';
import type { Logger } from '../../../shared/logging/logger';
import { silentLogger } from '../../../shared/logging/logger';
import { isUuid } from '../../../shared/runtime/ids';
import type { Channel } from './driver';
import { ReceiptMetrics, type ReceiptOutcomeLabel } from './metrics';
import { MAX_REPLAY_ID_LENGTH, type InboundReplayStore } from './inbound-replay';
import { InMemoryInboundReplayStore } from './inbound-replay-memory-store';
import type { FoldResult, IncomingReceipt } from './receipt';
import type { DeliveryStore } from './store';
import type { SuppressionEntry, SuppressionSink } from './suppression-sink';
import type { DeliveryRecord } from './types';
import { normaliseRecipient, type SuppressionReason } from './suppression';
import { type Clock, dateReader } from '../../../shared/runtime/clock';
import type { InboundSmsLog } from '../channels/sms/inbound-log';
import type { DeliveryObserver } from './observer';

/** A provider message id we remember: printable ASCII, bounded (a Twilio MessageSid is 34 characters). */
const PROVIDER_ID = new RegExp(`^[\\x21-\\x7e]{1,${MAX_REPLAY_ID_LENGTH - 16}}$`);

/**
 * True for an error that retrying cannot fix (a domain error other than "unavailable" or a deadline):
 * the receipt is dropped, counted and logged rather than retried by the provider forever.
 */
function isPermanent(err: unknown): boolean {
  return err instanceof DomainError && err.code !== 'UNAVAILABLE' && err.code !== 'DEADLINE_EXCEEDED';
}

/** `find`'s answer for our id of a delivery that the receipt's backend never carried. */
const FOREIGN = Symbol('foreign delivery');

/**
 * True when `backend` carried (or carries) the delivery: it is the record's backend, or one of its
 * attempts went through it (a provider that accepted a message whose answer was lost, before a
 * failover, still reports on it).
 */
function carriedBy(record: DeliveryRecord, backend: string): boolean {
  return record.backend === backend || record.attempts.some((a) => a.backend === backend);
}

/** Where a receipt came from: the backend whose key verified it. */
export interface ReceiptSource {
  channel: Channel;
  /** The backend's configured name (from the route, checked against config). */
  backend: string;
  /** The driver kind (`sms_gateway`, `http_api`): the metrics' `provider` label. */
  provider: string;
}

/** A verified receipt and how to find its delivery. */
export interface VerifiedReceipt {
  receipt: IncomingReceipt;
  /** The event type for metrics: one of the channel's known event names, or `other`. */
  type: string;
  /** Our delivery id, when the provider echoed it (email custom args). */
  deliveryId?: string;
  /** The provider's message id (SMS MessageSid, the email API's X-Message-Id). */
  providerReference?: string;
  /** A recipient the event says must not be contacted again (bounce, complaint, unsubscribe). */
  suppress?: { recipient: string; reason: SuppressionReason };
}

/** What the recorder made of a verified receipt. */
export type RecordOutcome = Exclude<ReceiptOutcomeLabel, 'forged'>;

/** A verified inbound message, as the webhook read it. */
export interface InboundMessage {
  /** The provider's message id (Twilio MessageSid); '' when the request had none. */
  id: string;
  /** The sender as given (`+15551234567`, `whatsapp:+1...`, an alphanumeric sender id). */
  from: string;
  type: 'inbound_stop' | 'inbound_start' | 'inbound_other';
  /** Our number it was sent to (`To`), as given. */
  to?: string;
  /** The text (`Body`), as given. */
  body?: string;
}

/** What the recorder is built from. */
export interface ReceiptRecorderOptions {
  store: DeliveryStore;
  /** The ids of callbacks taken (the composition root's; default a memory store). */
  replays?: InboundReplayStore;
  registry: Registry;
  sink: SuppressionSink;
  /**
   * Where inbound messages other than STOP / START are kept (WatchInboundSms); without one they are
   * only counted.
   */
  inboundLog?: InboundSmsLog;
  clock?: Clock;
  logger?: Logger;
  /**
   * Told (`onReceipt`) when a receipt this process applied ended a delivery (DELIVERED or
   * UNDELIVERED); one that throws is logged and ignored.
   */
  observer?: DeliveryObserver;
}

/** Applies verified receipts to delivery records. */
export class ReceiptRecorder {
  readonly metrics: ReceiptMetrics;
  private readonly store: DeliveryStore;
  private readonly sink: SuppressionSink;
  private readonly replays: InboundReplayStore;
  private readonly inboundLog: InboundSmsLog | undefined;
  private readonly observer: DeliveryObserver | undefined;
  private readonly clock: () => Date;
  private readonly log: Logger;

  constructor(opts: ReceiptRecorderOptions) {
    this.store = opts.store;
    this.sink = opts.sink;
    this.replays = opts.replays ?? new InMemoryInboundReplayStore();
    this.inboundLog = opts.inboundLog;
    this.observer = opts.observer;
    this.metrics = new ReceiptMetrics(opts.registry);
    this.clock = dateReader(opts.clock);
    this.log = (opts.logger ?? silentLogger()).child({ component: 'delivery-receipts' });
  }

  /** Counts a receipt whose signature was missing or wrong; nothing else happens. */
  forged(source: ReceiptSource, type = 'unknown'): void {
    this.count(source, type, 'forged');
  }

  /**
   * Applies one verified receipt. A receipt for a message we do not know is counted and otherwise
   * dropped (the provider must not retry it forever); its suppression still counts, since the
   * provider's word about the recipient holds whatever our records say.
   *
   * A receipt that cannot be applied is counted `failed` and logged. When it never can be (a domain
   * error: an address the list refuses, a full memory store), `failed` is answered, so one bad
   * receipt never blocks the others; when it may later (the store could not be reached), the error
   * is thrown, so the webhook answers 5xx and the provider retries.
   */
  async record(source: ReceiptSource, verified: VerifiedReceipt): Promise<RecordOutcome> {
    return this.guarded(source, verified.type, () => this.apply(source, verified));
  }

  /**
   * `record` for a callback that must be taken once (a Twilio status callback, which carries no
   * signed timestamp; an email event that suppresses): the first time `id` arrives on this backend
   * within the retention it is recorded; again, it is a `replay`: counted, nothing applied. An id whose
   * receipt failed is forgotten, so the provider's retry counts.
   */
  async recordOnce(source: ReceiptSource, id: string, verified: VerifiedReceipt): Promise<RecordOutcome> {
    return this.once(source, id, verified.type, () => this.record(source, verified));
  }

  /**
   * An inbound message (Twilio's `/inbound`): STOP and its synonyms suppress the sender, START / UNSTOP
   * / YES lift it, anything else goes to the inbound SMS log when there is one (WatchInboundSms), else
   * is only counted. A sender that is not a phone number (a WhatsApp id, an alphanumeric sender id)
   * is `unsupported_sender`; a message without an id cannot be told from a replay and is ignored
   * (`unknown_message`); a message id seen before is a `replay` (a replayed `ACK 4821` is not logged
   * twice).
   */
  async inbound(source: ReceiptSource, message: InboundMessage): Promise<RecordOutcome> {
    const { type } = message;
    let from: string;
    try {
      from = normaliseRecipient('sms', message.from, 'From');
    } catch {
      this.count(source, type, 'unsupported_sender');
      return 'unsupported_sender';
    }
    if (!PROVIDER_ID.test(message.id)) {
      this.count(source, type, 'unknown_message');
      return 'unknown_message';
    }
    if (type === 'inbound_other') {
      const log = this.inboundLog;
      if (!log) {
        // Changes nothing, so nothing to replay: not remembered (keeps the replay table small).
        this.count(source, type, 'verified');
        return 'verified';
      }
      // Logged once: the log adds nothing for a provider id it holds, and the replay store refuses the
      // same message after the log's retention too.
      return this.once(source, `inbound:${message.id}`, type, () =>
        this.guarded(source, type, async () => {
          const logged = await log.append({
            backend: source.backend,
            providerId: message.id,
            from,
            to: message.to ?? '',
            body: message.body ?? '',
          });
          const outcome: RecordOutcome = logged ? 'verified' : 'duplicate';
          this.count(source, type, outcome);
          return outcome;
        }),
      );
    }
    return this.once(source, `inbound:${message.id}`, type, () =>
      this.guarded(source, type, async () => {
        if (type === 'inbound_stop') {
          await this.suppress({
            channel: 'sms',
            recipient: from,
            reason: 'stop_keyword',
            source: `receipt:${source.backend}`,
          });
        } else await this.unsuppress('sms', from);
        return 'verified';
      }),
    );
  }

  /** Runs `apply` the first time `id` arrives on the source's backend; a `replay` after. */
  private async once(
    source: ReceiptSource,
    id: string,
    type: string,
    apply: () => Promise<RecordOutcome>,
  ): Promise<RecordOutcome> {
    let first: boolean;
    try {
      first = await this.replays.remember(source.backend, id);
    } catch (err) {
      this.count(source, type, 'failed');
      this.log.warn(
        { err, backend: source.backend, type },
        'could not check a provider callback for a replay',
      );
      throw err; // the provider retries it
    }
    if (!first) {
      this.count(source, type, 'replay');
      this.log.info({ backend: source.backend, type }, 'replayed provider callback refused');
      return 'replay';
    }
    let outcome: RecordOutcome | undefined;
    try {
      outcome = await apply();
      return outcome;
    } finally {
      // Not applied: the provider's retry (or a later delivery of the same callback) must count.
      if (outcome === undefined || outcome === 'failed') {
        await this.replays.forget(source.backend, id).catch((err: unknown) => {
          this.log.warn({ err, backend: source.backend }, 'could not forget a failed callback id');
        });
      }
    }
  }

  /** Runs `apply`; counts and logs a failure, answering `failed` for one that will never succeed. */
  private async guarded(
    source: ReceiptSource,
    type: string,
    apply: () => Promise<RecordOutcome>,
  ): Promise<RecordOutcome> {
    try {
      return await apply();
    } catch (err) {
      this.count(source, type, 'failed');
      const permanent = isPermanent(err);
      this.log.warn(
        { err, backend: source.backend, type, retried: !permanent },
        permanent
          ? 'provider receipt could not be applied: dropped'
          : 'provider receipt could not be applied',
      );
      if (permanent) return 'failed';
      throw err;
    }
  }

  private async apply(source: ReceiptSource, verified: VerifiedReceipt): Promise<RecordOutcome> {
    const record = await this.find(source, verified);
    if (record === FOREIGN) {
      // Our id of a delivery another backend carried: this backend's key does not speak for it, nor
      // for its recipient. Nothing is applied or suppressed.
      this.count(source, verified.type, 'foreign_backend');
      this.log.warn(
        { deliveryId: verified.deliveryId, backend: source.backend, event: verified.receipt.event },
        'receipt names a delivery of another backend: ignored',
      );
      return 'foreign_backend';
    }
    let outcome: RecordOutcome = 'unknown_message';
    if (record) {
      const receivedAt = this.clock();
      const applied = await this.store.applyReceipt(record.id, verified.receipt, receivedAt);
      if (applied) {
        outcome = applied.fold.effect === 'duplicate' ? 'duplicate' : 'verified';
        const { record: now, fold } = applied;
        this.tellReceipt(source, verified, now, fold, receivedAt);
        if (fold.effect === 'applied' && now.status === 'delivered' && fold.previousStatus !== 'delivered') {
          if (now.sentAt && now.deliveredAt) {
            const seconds = Math.max(0, (now.deliveredAt.getTime() - now.sentAt.getTime()) / 1000);
            this.metrics.sentToDelivered.observe({ channel: now.channel, backend: source.backend }, seconds);
          }
        }
        this.log.debug(
          { deliveryId: now.id, event: verified.receipt.event, effect: fold.effect, status: now.status },
          'delivery receipt',
        );
      }
    }
    // Duplicates too: a provider retries a receipt whose sink call failed (500), and `add` is idempotent.
    if (verified.suppress) {
      await this.suppress({
        channel: source.channel,
        recipient: verified.suppress.recipient,
        reason: verified.suppress.reason,
        source: `receipt:${source.backend}`,
      });
    }
    // Counted once it is all done: a receipt whose suppression failed is counted `failed` instead.
    this.count(source, verified.type, outcome);
    return outcome;
  }

  /**
   * Tells the observer of a receipt whose store update (atomic, so once across replicas) ended the
   * delivery: `applied`, to DELIVERED or UNDELIVERED, from a status that was not final. A duplicate,
   * an ignored receipt and a cause added to a DELIVERED record tell nobody.
   */
  private tellReceipt(
    source: ReceiptSource,
    verified: VerifiedReceipt,
    now: DeliveryRecord,
    fold: FoldResult,
    receivedAt: Date,
  ): void {
    if (!this.observer?.onReceipt || fold.effect !== 'applied') return;
    if (now.status !== 'delivered' && now.status !== 'undelivered') return;
    if (
      fold.previousStatus === 'delivered' ||
      fold.previousStatus === 'undelivered' ||
      fold.previousStatus === 'failed'
    )
      return;
    try {
      this.observer.onReceipt({
        deliveryId: now.id,
        channel: now.channel,
        backend: source.backend,
        status: now.status,
        failure: verified.receipt.failure,
        ...(verified.receipt.providerCode !== undefined
          ? { providerCode: verified.receipt.providerCode }
          : {}),
        sentAt: now.sentAt ?? null,
        receivedAt,
      });
    } catch (err) {
      this.log.warn({ err, deliveryId: now.id }, 'a delivery observer failed on a receipt: ignored');
    }
  }

  /** Counts one receipt. */
  count(source: ReceiptSource, type: string, outcome: ReceiptOutcomeLabel): void {
    this.metrics.receipts.inc({ provider: source.provider, backend: source.backend, type, outcome });
  }

  /** Suppresses a recipient (an inbound STOP, a bounce). */
  async suppress(entry: SuppressionEntry): Promise<boolean> {
    return this.sink.add(entry);
  }

  /** Lifts a recipient's suppression (an inbound START or UNSTOP). */
  async unsuppress(channel: Channel, recipient: string): Promise<boolean> {
    return this.sink.remove(channel, recipient);
  }

  /**
   * The delivery the receipt is about, only among the deliveries of the backend it came through;
   * FOREIGN when our id names a delivery of another backend (or channel).
   */
  private async find(
    source: ReceiptSource,
    v: VerifiedReceipt,
  ): Promise<DeliveryRecord | typeof FOREIGN | null> {
    const { channel } = source;
    // Our id is only trusted as a UUID (anything else cannot be ours, and never reaches SQL as one).
    if (v.deliveryId !== undefined && isUuid(v.deliveryId)) {
      const byId = await this.store.get(v.deliveryId.toLowerCase());
      if (byId) return byId.channel === channel && carriedBy(byId, source.backend) ? byId : FOREIGN;
    }
    if (v.providerReference !== undefined && v.providerReference !== '') {
      // Only the backend whose key verified the receipt: references are unique per provider account,
      // not across backends, and a delivery that failed over holds the reference of the backend that
      // accepted it (its `backend`).
      return this.store.findByProviderReference(channel, v.providerReference, source.backend);
    }
    return null;
  }
}
