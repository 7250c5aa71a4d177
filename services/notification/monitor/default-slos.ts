/**
 * The notification service's own SLOs (issue 31), registered at the monitor as ratio SLOs when the
 * service starts, and how each delivery outcome and inbox Send counts in them:
 *
 * - `<prefix><channel>-delivery`: among the deliveries of a channel that end (SENT, or FAILED after
 *   every retry and failover for a reason of the service's or its providers': SERVICE_FAILURES),
 *   the share that end SENT. Counted once, when the sender's part ends: a later provider receipt
 *   (DELIVERED, UNDELIVERED) does not count again.
 * - `<prefix><channel>-latency`: among the SENT deliveries, the share sent within the channel's
 *   latency objective of being accepted. A FAILED delivery is no latency event: an outage burns the
 *   delivery SLO alone, so it pages once, not twice.
 * - `<prefix><channel>-receipts`, only for a channel whose provider receipts are configured
 *   ({@link receiptChannels}): among the SENT deliveries the provider reports on, the share it reports
 *   DELIVERED. Counted once, when the receipt that ends the delivery is recorded, at that time: good
 *   for DELIVERED, bad for UNDELIVERED for a reason of the provider's or the network's
 *   (RECEIPT_PROVIDER_FAILURES, or no reason given), no event for a recipient's reason (an unknown or
 *   unreachable number, a bounce, an unsubscribed recipient). A provider that accepts messages and
 *   then drops them burns this SLO, which the delivery SLO (already counted SENT) cannot see.
 * - `<prefix>inbox-send`: among inbox Send calls, the share that did not fail on the service's side
 *   (INTERNAL, UNAVAILABLE and the like); a caller's error (INVALID_ARGUMENT, ...) is no event.
 */
import { CHANNELS, type Channel, type FailureKind } from '../delivery/driver';

/**
 * Failures that are the service's or its providers' (a bad event of the delivery SLO). A failure
 * of the recipient or the request (an invalid or suppressed address, an unregistered device, a
 * rejected payload) is no event: the service did its part, and a caller sending bad addresses must
 * not page the service's on-call.
 */
export const SERVICE_FAILURES: ReadonlySet<FailureKind> = new Set<FailureKind>([
  'provider_auth',
  'provider_rejected',
  'retries_exhausted',
  'worker_died',
]);
import type { DefaultSlosConfig } from './config';

/**
 * Causes of an UNDELIVERED receipt that are the provider's or the network's (a bad event of the
 * receipts SLO): `provider_undelivered` is what the webhooks record for Twilio `undelivered` /
 * `failed` without a recipient ErrorCode (carrier or network failures, filtered, queue overflow)
 * and for SendGrid `dropped` and `blocked` bounces; the service failures count too should a
 * receipt ever carry one. Every other cause is the recipient's and is no event: Twilio 30003 /
 * 30005 / 30006 (`recipient_invalid`: unreachable handset, unknown destination, landline), 21610
 * (`recipient_unsubscribed`: replied STOP), SendGrid `bounce` (`recipient_bounced`).
 */
export const RECEIPT_PROVIDER_FAILURES: ReadonlySet<FailureKind> = new Set<FailureKind>([
  ...SERVICE_FAILURES,
  'provider_undelivered',
]);

/**
 * The channels whose provider receipts are configured, so that receipts can arrive: `email` when
 * an `http_api` mailer has an `event_webhook_public_key` (its event webhook route exists); `sms`
 * when an `sms_gateway` backend exists and `webhooks.public_base_url` is set (only then does the
 * driver ask the provider for status callbacks); `push` never (APNs and FCM send no receipts).
 */
export function receiptChannels(config: {
  sms_backends: readonly { sms_gateway?: unknown }[];
  mailer: { backends: readonly { driver: string; http_api?: { event_webhook_public_key?: string } }[] };
  webhooks: { public_base_url?: string };
}): Channel[] {
  const channels: Channel[] = [];
  if (config.mailer.backends.some((b) => b.driver === 'http_api' && b.http_api?.event_webhook_public_key))
    channels.push('email');
  if (config.webhooks.public_base_url !== undefined && config.sms_backends.some((b) => b.sms_gateway))
    channels.push('sms');
  return channels;
}

/** A ratio SLO as the reporter registers it (svc.monitor.v1.RatioSlo). */
export interface RatioSloDeclaration {
  name: string;
  target: number;
  period: { kind: 'rolling'; seconds: number } | { kind: 'calendar_month'; timeZone: string };
  minEvents: number;
  tier: string;
  description: string;
  runbookUrl?: string;
}

/** The default SLOs of a config, and the names events are counted under. */
export class DefaultSlos {
  readonly declarations: RatioSloDeclaration[];

  /** The channels with a receipts SLO. */
  private readonly withReceipts: ReadonlySet<Channel>;

  /** `receipts`: the channels whose receipts are configured ({@link receiptChannels}). */
  constructor(
    private readonly config: DefaultSlosConfig,
    receipts: readonly Channel[] = [],
  ) {
    this.withReceipts = new Set(receipts);
    const period: RatioSloDeclaration['period'] =
      typeof config.period === 'number'
        ? { kind: 'rolling', seconds: config.period }
        : { kind: 'calendar_month', timeZone: config.period.time_zone };
    const base = {
      period,
      minEvents: config.min_events,
      tier: config.tier,
      ...(config.runbook_url ? { runbookUrl: config.runbook_url } : {}),
    };
    this.declarations = config.enabled
      ? [
          ...CHANNELS.flatMap((channel) => [
            {
              ...base,
              name: this.deliverySlo(channel),
              target: config.delivery_target,
              description: `Share of ${channel} deliveries that end SENT among those that end`,
            },
            {
              ...base,
              name: this.latencySlo(channel),
              target: config.latency_target,
              description: `Share of SENT ${channel} deliveries sent within ${this.latencyObjectiveMs(channel) / 1000} s of being accepted`,
            },
            ...(this.withReceipts.has(channel)
              ? [
                  {
                    ...base,
                    name: `${config.name_prefix}${channel}-receipts`,
                    target: config.receipts_target,
                    description: `Share of SENT ${channel} deliveries the provider reports DELIVERED among those it reports on`,
                  },
                ]
              : []),
          ]),
          {
            ...base,
            name: this.inboxSendSlo(),
            target: config.inbox_send_target,
            description: 'Share of inbox Send calls that did not fail on the service side',
          },
        ]
      : [];
  }

  get enabled(): boolean {
    return this.config.enabled;
  }

  deliverySlo(channel: Channel): string {
    return `${this.config.name_prefix}${channel}-delivery`;
  }

  latencySlo(channel: Channel): string {
    return `${this.config.name_prefix}${channel}-latency`;
  }

  /** The receipts SLO of a channel; undefined when its receipts are not configured. */
  receiptsSlo(channel: Channel): string | undefined {
    return this.withReceipts.has(channel) ? `${this.config.name_prefix}${channel}-receipts` : undefined;
  }

  inboxSendSlo(): string {
    return `${this.config.name_prefix}inbox-send`;
  }

  /** The latency objective of a channel, ms: at most this from acceptance to SENT is good. */
  latencyObjectiveMs(channel: Channel): number {
    return this.config.latency_objectives[channel] * 1000;
  }
}
