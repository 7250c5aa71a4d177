/**
 * The `alerts` config section: business hours, the P2 digest interval, buffer bounds and the
 * channels (each with its tiers and minimum severity); and `createAlertDispatcher`, which builds the
 * tier-aware dispatcher from it.
 */
import { z } from 'zod';

import { duration, httpUrl, itemName, positiveInt, uniqueNames } from '../../config/fields';
import { type Logger, silentLogger } from '../../logging/logger';
import type { Clock, Timers } from '../../runtime/clock';
import type { MonitoringEventBus } from '../events/event-bus';
import { MonitoringConfigError } from '../errors';
import {
  type AlertChannel,
  LogAlertChannel,
  SeverityFilterChannel,
  WebhookChannel,
  type WebhookChannelOptions,
} from './channels';
import { severityRank } from './dispatcher';
import type { HeldAlertStore } from './held-store';
import { TierAwareDispatcher } from './tier-dispatcher';
import { isValidTimeZone, parseClockTime } from '../../time/zone';
import { ALERT_TIERS, type AlertTier, BusinessHours, WEEKDAYS } from './tiers';

function positiveDuration() {
  return duration().refine((s) => s > 0, { error: 'expected a duration greater than 0' });
}

function clockTime() {
  return z.string().refine((v) => parseClockTime(v) !== undefined, {
    error: 'expected a local time HH:MM (00:00 to 23:59)',
  });
}

/** Severities a channel's `min_severity` may name (see {@link severityRank} for their order). */
export const MIN_SEVERITIES = ['low', 'medium', 'warning', 'high', 'critical'] as const;

/** Keys every channel has, whatever its type. */
export function alertChannelCommonShape() {
  return {
    /** Shown in logs; unique among the channels. */
    name: itemName(),
    /** Tiers this channel receives; empty means every tier. */
    tiers: z.array(z.enum(ALERT_TIERS as [AlertTier, ...AlertTier[]])).default(() => []),
    /** Alerts below this severity are not sent to the channel (low < medium = warning < high < critical). */
    min_severity: z
      .enum(MIN_SEVERITIES, { error: 'expected low, medium, warning, high or critical' })
      .default('low'),
  };
}

/** A `log` channel: the service log, at the logging dispatcher's levels. */
export function logChannelConfigSchema() {
  return z.strictObject({ ...alertChannelCommonShape(), type: z.literal('log') });
}

/** A `webhook` channel: one JSON POST per alert. */
export function webhookChannelConfigSchema() {
  return z.strictObject({
    ...alertChannelCommonShape(),
    type: z.literal('webhook'),
    webhook: z.strictObject({
      /** Secret-bearing (Slack, Teams put the token in the path): only its origin is logged. */
      url: httpUrl(),
      /** Extra headers, e.g. `authorization`; never logged. */
      headers: z.record(z.string(), z.string()).default(() => ({})),
      /** Milliseconds one attempt may take. */
      timeout_ms: positiveInt().max(60_000, { error: 'expected at most 60000 ms' }).default(5000),
      /** Attempts in all (the first one included); retried on network errors, 408, 429 and 5xx. */
      max_attempts: positiveInt().max(10, { error: 'expected at most 10 attempts' }).default(4),
      /** Milliseconds before the first retry, doubled each retry (capped at 30 s). */
      backoff_ms: positiveInt().default(500),
    }),
  });
}

/** A channel schema: a strict object with the common keys and a literal `type`. */
export type AlertChannelConfigSchema = z.ZodObject<
  ReturnType<typeof alertChannelCommonShape> & { type: z.ZodLiteral<string> },
  z.core.$strict
>;

/**
 * The `alerts` section. `channels` is the one way to say where alerts go: the library knows the
 * `log` and `webhook` types; a service adds its own types (the monitor's `notification`) through
 * `extraChannels`, and keys of its own through `extraKeys`. With no channel configured, every tier
 * goes to the service log.
 */
export function alertsConfigSchema<
  const Extra extends readonly AlertChannelConfigSchema[] = [],
  Keys extends z.ZodRawShape = Record<never, never>,
>(extraChannels: Extra = [] as unknown as Extra, extraKeys: Keys = {} as Keys) {
  const channel = z.discriminatedUnion('type', [
    logChannelConfigSchema(),
    webhookChannelConfigSchema(),
    ...extraChannels,
  ]);
  return (
    z
      .strictObject({
        ...extraKeys,
        /** When P1_BUSINESS_HOURS alerts are sent at once; outside these hours they are held until opening. */
        business_hours: z
          .strictObject({
            /** IANA time zone name, e.g. `Europe/Paris`. */
            time_zone: z
              .string()
              .refine(isValidTimeZone, { error: 'expected an IANA time zone such as Europe/Paris' })
              .default('UTC'),
            days: z
              .array(z.enum(WEEKDAYS, { error: 'expected days mon, tue, wed, thu, fri, sat, sun' }))
              .min(1, { error: 'expected at least one day' })
              .default(() => [
                'mon' as const,
                'tue' as const,
                'wed' as const,
                'thu' as const,
                'fri' as const,
              ]),
            open: clockTime().default('09:00'),
            close: clockTime().default('17:00'),
          })
          .refine((b) => parseClockTime(b.close)! > parseClockTime(b.open)!, {
            error: 'expected close after open (hours spanning midnight are not supported)',
            path: ['close'],
          })
          .prefault({}),
        /** Seconds between P2_DIGEST digests (a number, or text such as "1h"). */
        digest_interval_seconds: positiveDuration().default(3600),
        /** Most P1 alerts held outside business hours; beyond it the oldest are dropped and counted. */
        max_held: positiveInt().default(1000),
        /** Most P2 alerts in one digest; beyond it the oldest are dropped and counted. */
        max_digest: positiveInt().default(1000),
        /**
         * Seconds a dispatcher's claim on kept alerts lasts with a durable store (a held batch being
         * sent, an alert sent at once in the outbox), renewed every half while they are on their way;
         * alerts a dead replica left are sent by another once it has run out.
         */
        claim_lease_seconds: positiveInt().max(3600, { error: 'expected at most 3600 seconds' }).default(300),
        /** Where alerts go; empty: one `log` channel for every tier. */
        channels: z
          .array(channel)
          .max(20, { error: 'expected at most 20 channels' })
          .default(() => [])
          .superRefine(uniqueNames('channel')),
      })
      // Every key has a default (the caller's extra keys too, by contract), so `{}` is a full input.
      .prefault({} as never)
  );
}

/** The validated `alerts` section (library channel types). */
export type AlertsConfig = z.infer<ReturnType<typeof alertsConfigSchema>>;

/** One configured channel of the library's types. */
export type AlertChannelConfig = AlertsConfig['channels'][number];

/** The `alerts` section with every default. */
export const DEFAULT_ALERTS_CONFIG: AlertsConfig = alertsConfigSchema().parse(undefined);

/** Options of a WebhookChannel from a `webhook` channel entry (the caller adds `encode`, `logger`). */
export function webhookChannelOptions(
  entry: z.infer<ReturnType<typeof webhookChannelConfigSchema>>,
): WebhookChannelOptions {
  return {
    name: entry.name,
    url: entry.webhook.url,
    headers: entry.webhook.headers,
    timeoutSeconds: entry.webhook.timeout_ms / 1000,
    maxRetries: entry.webhook.max_attempts - 1,
    backoffSeconds: entry.webhook.backoff_ms / 1000,
  };
}

/** Builds the channel of one entry; undefined means "use the library's own for this type". */
export type AlertChannelBuilder<C extends { type: string; name: string }> = (
  entry: C,
) => AlertChannel | undefined;

/**
 * Builds the tier-aware dispatcher of an `alerts` section. Each channel goes to its `tiers` (all
 * when empty), behind a severity filter when `min_severity` is above `low`. `buildChannel` makes the
 * channels of a service's own types (and may replace the library's); an entry nobody builds is a
 * configuration error. Call `shutdown()` on the dispatcher at shutdown.
 */
export function createAlertDispatcher<
  C extends { type: string; name: string; tiers: readonly AlertTier[]; min_severity: string },
>(
  config: Omit<AlertsConfig, 'channels'> & { channels: readonly C[] },
  deps: {
    logger?: Logger;
    clock?: Clock;
    timers?: Timers;
    events?: MonitoringEventBus;
    buildChannel?: AlertChannelBuilder<C>;
    /** Where held P1 and pending P2 alerts are kept (default: in memory). */
    heldStore?: HeldAlertStore;
    /** The dispatcher's name in the held store's leases (default: a random id). */
    owner?: string;
  } = {},
): TierAwareDispatcher {
  const logger = deps.logger ?? silentLogger();
  const channels: Partial<Record<AlertTier, AlertChannel[]>> = {};
  const add = (tiers: readonly AlertTier[], channel: AlertChannel) => {
    for (const tier of tiers.length === 0 ? ALERT_TIERS : tiers) (channels[tier] ??= []).push(channel);
  };
  if (config.channels.length === 0) add([], new LogAlertChannel(logger));
  for (const entry of config.channels) {
    let channel = deps.buildChannel?.(entry);
    if (!channel && entry.type === 'log') channel = new LogAlertChannel(logger);
    if (!channel && entry.type === 'webhook') {
      const webhook = entry as unknown as z.infer<ReturnType<typeof webhookChannelConfigSchema>>;
      channel = new WebhookChannel({ ...webhookChannelOptions(webhook), logger });
    }
    if (!channel) throw new MonitoringConfigError(`alert channel ${entry.name}: unknown type ${entry.type}`);
    add(
      entry.tiers,
      severityRank(entry.min_severity) > 0 ? new SeverityFilterChannel(channel, entry.min_severity) : channel,
    );
  }
  return new TierAwareDispatcher({
    channels,
    businessHours: new BusinessHours(config.business_hours),
    digestIntervalSeconds: config.digest_interval_seconds,
    maxHeld: config.max_held,
    maxDigest: config.max_digest,
    claimLeaseMs: config.claim_lease_seconds * 1000,
    logger,
    clock: deps.clock,
    timers: deps.timers,
    events: deps.events,
    ...(deps.heldStore ? { heldStore: deps.heldStore } : {}),
    ...(deps.owner ? { owner: deps.owner } : {}),
  });
}
