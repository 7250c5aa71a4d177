/**
 * The `alerts` config section: business hours, the P2 digest interval, buffer bounds and the
 * channels of each tier; and `createAlertDispatcher`, which builds the tier-aware dispatcher from it.
 */
import { z } from 'zod';

import { bool, duration, httpUrl, itemName, nonNegativeInt, positiveInt } from '../../config/fields';
import { type Logger, silentLogger } from '../../logging/logger';
import type { Clock, Timers } from '../clock';
import type { MonitoringEventBus } from '../events/event-bus';
import { type AlertChannel, LogAlertChannel, WebhookChannel } from './channels';
import { TierAwareDispatcher } from './tier-dispatcher';
import {
  ALERT_TIERS,
  type AlertTier,
  BusinessHours,
  isValidTimeZone,
  parseClockTime,
  WEEKDAYS,
} from './tiers';

function positiveDuration() {
  return duration().refine((s) => s > 0, { error: 'expected a duration greater than 0' });
}

function clockTime() {
  return z.string().refine((v) => parseClockTime(v) !== undefined, {
    error: 'expected a local time HH:MM (00:00 to 23:59)',
  });
}

/** The `alerts` section. */
export function alertsConfigSchema() {
  return z
    .strictObject({
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
            .default(() => ['mon' as const, 'tue' as const, 'wed' as const, 'thu' as const, 'fri' as const]),
          open: clockTime().default('09:00'),
          close: clockTime().default('17:00'),
        })
        .refine((b) => parseClockTime(b.close)! > parseClockTime(b.open)!, {
          error: 'expected close after open (hours spanning midnight are not supported)',
          path: ['close'],
        })
        .prefault({}),
      /** Seconds between P2_DIGEST digests. */
      digest_interval: positiveDuration().default(3600),
      /** Most P1 alerts held outside business hours; beyond it the oldest are dropped and counted. */
      max_held: positiveInt().default(1000),
      /** Most P2 alerts in one digest; beyond it the oldest are dropped and counted. */
      max_digest: positiveInt().default(1000),
      /** Also write every tier's alerts to the service log. */
      log_channel: bool().default(true),
      /** Webhook channels; each receives the tiers it lists. */
      webhooks: z
        .array(
          z.strictObject({
            name: itemName().default('webhook'),
            /** Secret-bearing: only its origin is logged. */
            url: httpUrl(),
            tiers: z
              .array(z.enum(ALERT_TIERS as [AlertTier, ...AlertTier[]]))
              .min(1)
              .default(() => [...ALERT_TIERS]),
            /** Extra headers, e.g. `authorization`; never logged. */
            headers: z.record(z.string(), z.string()).default(() => ({})),
            timeout: positiveDuration().default(5),
            max_retries: nonNegativeInt().max(10, { error: 'expected at most 10 retries' }).default(3),
            backoff: positiveDuration().default(0.5),
          }),
        )
        .max(20, { error: 'expected at most 20 webhooks' })
        .default(() => []),
    })
    .prefault({});
}

/** The validated `alerts` section. */
export type AlertsConfig = z.infer<ReturnType<typeof alertsConfigSchema>>;

/** The `alerts` section with every default. */
export const DEFAULT_ALERTS_CONFIG: AlertsConfig = alertsConfigSchema().parse(undefined);

/** Builds the tier-aware dispatcher of an `alerts` section. Call `shutdown()` on it at shutdown. */
export function createAlertDispatcher(
  config: AlertsConfig,
  deps: { logger?: Logger; clock?: Clock; timers?: Timers; events?: MonitoringEventBus } = {},
): TierAwareDispatcher {
  const logger = deps.logger ?? silentLogger();
  const channels: Partial<Record<AlertTier, AlertChannel[]>> = {};
  const add = (tier: AlertTier, channel: AlertChannel) => (channels[tier] ??= []).push(channel);
  if (config.log_channel) {
    const log = new LogAlertChannel(logger);
    for (const tier of ALERT_TIERS) add(tier, log);
  }
  for (const w of config.webhooks) {
    const channel = new WebhookChannel({
      name: w.name,
      url: w.url,
      headers: w.headers,
      timeoutSeconds: w.timeout,
      maxRetries: w.max_retries,
      backoffSeconds: w.backoff,
      logger,
    });
    for (const tier of w.tiers) add(tier, channel);
  }
  return new TierAwareDispatcher({
    channels,
    businessHours: new BusinessHours(config.business_hours),
    digestIntervalSeconds: config.digest_interval,
    maxHeld: config.max_held,
    maxDigest: config.max_digest,
    logger,
    clock: deps.clock,
    timers: deps.timers,
    events: deps.events,
  });
}
