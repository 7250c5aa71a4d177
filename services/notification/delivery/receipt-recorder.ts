/**
 * ReceiptRecorder: the one place a verified provider receipt enters the delivery area. The channel
 * webhooks (channels/sms/sms-webhooks.ts, channels/email/event-webhook.ts) verify the provider's
 * signature and parse its protocol; this finds the delivery (our delivery id when the provider echoes
 * it, else the provider's message id), folds the receipt into it through the store, counts it, and
 * hands recipients who must not be contacted again to the SuppressionSink.
 */
import type { Registry } from 'prom-client';
import type { Logger } from '../../../shared/logging/logger';
import { silentLogger } from '../../../shared/logging/logger';
import type { Channel } from './driver';
import { ReceiptMetrics, type ReceiptOutcomeLabel } from './metrics';
import type { IncomingReceipt } from './receipt';
import type { DeliveryStore } from './store';
import type { SuppressionEntry, SuppressionSink } from './suppression-sink';
import type { DeliveryRecord } from './types';
import type { SuppressionReason } from './suppression';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

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

/** What the recorder is built from. */
export interface ReceiptRecorderOptions {
  store: DeliveryStore;
  registry: Registry;
  sink: SuppressionSink;
  clock?: () => Date;
  logger?: Logger;
}

/** Applies verified receipts to delivery records. */
export class ReceiptRecorder {
  readonly metrics: ReceiptMetrics;
  private readonly store: DeliveryStore;
  private readonly sink: SuppressionSink;
  private readonly clock: () => Date;
  private readonly log: Logger;

  constructor(opts: ReceiptRecorderOptions) {
    this.store = opts.store;
    this.sink = opts.sink;
    this.metrics = new ReceiptMetrics(opts.registry);
    this.clock = opts.clock ?? (() => new Date());
    this.log = (opts.logger ?? silentLogger()).child({ component: 'delivery-receipts' });
  }

  /** Counts a receipt whose signature was missing or wrong; nothing else happens. */
  forged(source: ReceiptSource, type = 'unknown'): void {
    this.metrics.receipts.inc({
      provider: source.provider,
      backend: source.backend,
      type,
      outcome: 'forged',
    });
  }

  /**
   * Applies one verified receipt. A receipt for a message we do not know is counted and otherwise
   * dropped (the provider must not retry it forever); its suppression still counts, since the
   * provider's word about the recipient holds whatever our records say.
   */
  async record(source: ReceiptSource, verified: VerifiedReceipt): Promise<RecordOutcome> {
    const record = await this.find(source, verified);
    if (record === FOREIGN) {
      // Our id of a delivery another backend carried: this backend's key does not speak for it, nor
      // for its recipient. Nothing is applied or suppressed.
      this.metrics.receipts.inc({
        provider: source.provider,
        backend: source.backend,
        type: verified.type,
        outcome: 'foreign_backend',
      });
      this.log.warn(
        { deliveryId: verified.deliveryId, backend: source.backend, event: verified.receipt.event },
        'receipt names a delivery of another backend: ignored',
      );
      return 'foreign_backend';
    }
    let outcome: RecordOutcome = 'unknown_message';
    if (record) {
      const applied = await this.store.applyReceipt(record.id, verified.receipt, this.clock());
      if (applied) {
        outcome = applied.fold.effect === 'duplicate' ? 'duplicate' : 'verified';
        const { record: now, fold } = applied;
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
    this.metrics.receipts.inc({
      provider: source.provider,
      backend: source.backend,
      type: verified.type,
      outcome,
    });
    // Duplicates too: a provider retries a receipt whose sink call failed (500), and `add` is idempotent.
    if (verified.suppress) {
      await this.suppress({
        channel: source.channel,
        recipient: verified.suppress.recipient,
        reason: verified.suppress.reason,
        source: `receipt:${source.backend}`,
      });
    }
    return outcome;
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
    if (v.deliveryId !== undefined && UUID.test(v.deliveryId)) {
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
