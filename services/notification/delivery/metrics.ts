/**
 * DeliveryMetrics: the pipeline's Prometheus instruments. Counters and the latency histogram are
 * updated by the worker; the queue gauges are read from the store at scrape time (one grouped query
 * over the queued rows only), so they are true across replicas and cost nothing between scrapes.
 */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { Logger } from '../../../shared/logging/logger';
import type { DeliveryStore } from './store';
import { type Clock } from '../../../shared/runtime/clock';

/** Attempt latency buckets, in seconds: SMTP and HTTP providers answer in tens of ms to seconds. */
const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/** Sent-to-delivered buckets, in seconds: carriers confirm in seconds, mailboxes up to hours. */
const SENT_TO_DELIVERED_BUCKETS = [1, 2, 5, 10, 30, 60, 120, 300, 900, 1800, 3600, 4 * 3600, 24 * 3600];

/** What became of a receipt, for `notification_receipts_total`. */
export type ReceiptOutcomeLabel =
  | 'verified'
  | 'forged'
  | 'unknown_message'
  | 'duplicate'
  /** Our delivery id of a delivery another backend carried: nothing applied (receipt-recorder.ts). */
  | 'foreign_backend'
  /** A signed callback seen before (replayed): answered 200, nothing applied (inbound-replay). */
  | 'replay'
  /** A signed inbound message from a sender that is not a phone number: ignored. */
  | 'unsupported_sender'
  /** Verified, but could not be applied (a suppression refused, the store failed): counted, logged. */
  | 'failed';

/**
 * The receipt instruments: receipts by provider (driver kind), backend, event type and outcome, and
 * the time from SENT to DELIVERED. Every label value comes from config or a fixed list, never from a
 * request, so a forger cannot grow the series.
 */
export class ReceiptMetrics {
  readonly receipts: Counter<'provider' | 'backend' | 'type' | 'outcome'>;
  readonly sentToDelivered: Histogram<'channel' | 'backend'>;

  constructor(registry: Registry) {
    this.receipts = new Counter({
      name: 'notification_receipts_total',
      help: 'Provider receipts (signed webhooks) by provider, backend, event type and outcome (verified, forged, unknown_message, duplicate, foreign_backend, replay, unsupported_sender, failed).',
      labelNames: ['provider', 'backend', 'type', 'outcome'],
      registers: [registry],
    });
    this.sentToDelivered = new Histogram({
      name: 'notification_delivery_sent_to_delivered_seconds',
      help: 'Time from SENT (the provider accepted the message) to DELIVERED (its receipt), in seconds.',
      labelNames: ['channel', 'backend'],
      buckets: SENT_TO_DELIVERED_BUCKETS,
      registers: [registry],
    });
  }
}

/** The pipeline's instruments, registered once on the given registry. */
export class DeliveryMetrics {
  /** Deliveries that reached a final outcome (sent, failed), by channel and backend. */
  readonly deliveries: Counter<'channel' | 'backend' | 'outcome'>;
  /** Attempts by their outcome class (sent, retryable, rate_limited, permanent, recipient_failure). */
  readonly attempts: Counter<'channel' | 'backend' | 'outcome'>;
  readonly attemptSeconds: Histogram<'channel' | 'backend'>;

  /**
   * `statsMaxAgeMs`: how long the queue counts are reused before a scrape counts again
   * (`delivery.queue_stats_max_age_seconds`); 0 counts on every scrape.
   */
  constructor(registry: Registry, store: DeliveryStore, clock: Clock, logger: Logger, statsMaxAgeMs = 0) {
    this.deliveries = new Counter({
      name: 'notification_deliveries_total',
      help: 'Deliveries that reached a final outcome, by channel, backend and outcome (sent, failed).',
      labelNames: ['channel', 'backend', 'outcome'],
      registers: [registry],
    });
    this.attempts = new Counter({
      name: 'notification_delivery_attempts_total',
      help: 'Delivery attempts by channel, backend and outcome class.',
      labelNames: ['channel', 'backend', 'outcome'],
      registers: [registry],
    });
    this.attemptSeconds = new Histogram({
      name: 'notification_delivery_attempt_duration_seconds',
      help: 'Time one delivery attempt took (the provider call), in seconds.',
      labelNames: ['channel', 'backend'],
      buckets: LATENCY_BUCKETS,
      registers: [registry],
    });
    // Both gauges come from one query per scrape: prom-client starts every collect before awaiting
    // any, so the second joins the query the first started. The counts are kept `statsMaxAgeMs`:
    // counting a backlog of 100,000 rows on every scrape of every replica is what they must not cost.
    type Stats = Awaited<ReturnType<DeliveryStore['queueStats']>>;
    let pending: Promise<Stats | null> | null = null;
    let last: { at: number; stats: Stats } | null = null;
    const stats = () => {
      const now = clock.now();
      if (last && now - last.at < statsMaxAgeMs) return Promise.resolve(last.stats);
      pending ??= store
        .queueStats(new Date(clock.now()))
        .then((s) => {
          last = { at: now, stats: s };
          return s;
        })
        .catch((err: unknown) => {
          logger.warn({ err }, 'delivery queue stats failed');
          return null;
        })
        .finally(() => (pending = null));
      return pending;
    };
    new Gauge({
      name: 'notification_delivery_queue_depth',
      help: 'Deliveries waiting to be sent, by status (pending, retrying), across all replicas.',
      labelNames: ['status'],
      registers: [registry],
      async collect() {
        const s = await stats();
        if (!s) return;
        this.set({ status: 'pending' }, s.queued.pending);
        this.set({ status: 'retrying' }, s.queued.retrying);
      },
    });
    new Gauge({
      name: 'notification_delivery_oldest_due_age_seconds',
      help: 'How long the oldest due, unclaimed delivery has been waiting past its attempt time (0 when none).',
      registers: [registry],
      async collect() {
        const s = await stats();
        if (!s) return;
        this.set(s.oldestDueAt ? Math.max(0, (clock.now() - s.oldestDueAt.getTime()) / 1000) : 0);
      },
    });
  }
}
