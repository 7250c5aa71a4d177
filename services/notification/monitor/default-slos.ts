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

  constructor(private readonly config: DefaultSlosConfig) {
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

  inboxSendSlo(): string {
    return `${this.config.name_prefix}inbox-send`;
  }

  /** The latency objective of a channel, ms: at most this from acceptance to SENT is good. */
  latencyObjectiveMs(channel: Channel): number {
    return this.config.latency_objectives[channel] * 1000;
  }
}
