/**
 * The `notification.monitor` section: where the notification service reports to the monitor service
 * (delivery latency samples, SLO declarations, captured exceptions). Every key is optional; without
 * `grpc_address` nothing is reported and the service runs alone.
 */
import { z } from 'zod';
import {
  bool,
  duration,
  fraction,
  hostPort,
  httpUrl,
  nonEmptyString,
  positiveInt,
  positiveNumber,
  uniqueNames,
} from '../../../shared/config';

/** Most SLOs one service declares (each is one RegisterSlo call at start). */
export const MAX_DECLARED_SLOS = 100;

/**
 * One SLO declared by this service, with the monitor's SLO fields (svc.monitor.v1.Slo); registered
 * at start. Defaults are the monitor's, so what is registered is what the monitor would apply.
 */
export const DeclaredSloSchema = z.strictObject({
  /** Unique name on the monitor. */
  name: nonEmptyString(),
  /** The metric evaluated, e.g. `notification_delivery_latency_email_ms` (see the README). */
  metric: nonEmptyString(),
  /** Percentile as a fraction (0.99 is p99). */
  percentile: fraction().default(0.99),
  /** Largest acceptable value at the percentile, in milliseconds. */
  threshold_ms: positiveNumber(),
  /** Rolling window: seconds, or "5m", "1h". Normalised to seconds. */
  window: duration()
    .refine((s) => s > 0, { message: 'expected a window longer than 0 seconds' })
    .default(300),
  /** Alert routing tier on the monitor. */
  tier: nonEmptyString().default('P1_BUSINESS_HOURS'),
  /** Alert when measured / threshold is at or above this. */
  burn_rate_threshold: positiveNumber().default(1.0),
  description: z.string().default(''),
  /** Owning team. */
  owner: z.string().default(''),
  runbook_url: httpUrl().optional(),
});

/** Per channel, the latency objective of the `<prefix><channel>-latency` SLO (submit to SENT). */
const LatencyObjectivesSchema = z
  .strictObject({
    email: duration().default(60),
    sms: duration().default(30),
    push: duration().default(10),
  })
  .prefault({});

/**
 * The service's own ratio SLOs, registered at start (issue 31): per channel, deliveries that end
 * SENT among those that end, and SENT within the latency objective; inbox Send availability.
 */
export const DefaultSlosSchema = z
  .strictObject({
    /** Register them (with `grpc_address` set). */
    enabled: bool().default(true),
    /** Their names start with it: `notification-email-delivery`, `notification-inbox-send`. */
    name_prefix: nonEmptyString().default('notification-'),
    /** Error-budget period: a rolling duration ("30d"), or `{ calendar: month, time_zone }`. */
    period: z
      .union([
        duration(),
        z.strictObject({ calendar: z.literal('month'), time_zone: nonEmptyString().default('UTC') }),
      ])
      .default(30 * 86_400),
    /** Share of ended deliveries that must end SENT, per channel. */
    delivery_target: fraction().default(0.99),
    /** Share of SENT deliveries that must be sent within the latency objective, per channel. */
    latency_target: fraction().default(0.95),
    latency_objectives: LatencyObjectivesSchema,
    /**
     * Share of SENT deliveries the provider reports DELIVERED among those it reports on, per channel
     * whose receipts are configured (the `<prefix><channel>-receipts` SLO).
     */
    receipts_target: fraction().default(0.99),
    /** Share of inbox Send calls that must not fail on the service's side. */
    inbox_send_target: fraction().default(0.999),
    /** Events a rule's long window needs before it fires (the monitor's guard). */
    min_events: z.number().int().min(0).max(1_000_000_000).default(100),
    /** Tier of their page alerts on the monitor. */
    tier: nonEmptyString().default('P0_PAGE'),
    runbook_url: httpUrl().optional(),
  })
  .refine(
    (d) =>
      [d.delivery_target, d.latency_target, d.receipts_target, d.inbox_send_target].every(
        (t) => t > 0 && t < 1,
      ),
    {
      message: 'targets must be between 0 and 1 exclusive',
    },
  )
  .prefault({});

/** The `monitor` section of the notification config. */
export const MonitorReporterConfigSchema = z
  .strictObject({
    /** The monitor's gRPC address (host:port); unset: no reporting. */
    grpc_address: hostPort().optional(),
    /** Secret: sent as `authorization: Bearer <token>` on every call, never logged. */
    api_token: nonEmptyString().optional(),
    /** Use TLS (the system's trust store) to reach the monitor. */
    tls: bool().default(false),
    /** Deadline of each call to the monitor, and the bound of the final flush at stop. */
    timeout_ms: positiveInt().default(2000),
    /** How often buffered reports are sent (and unregistered SLOs retried). */
    flush_interval_ms: positiveInt().default(1000),
    /** Reports (latency samples and exceptions) buffered between flushes; beyond, new ones are dropped. */
    max_buffered: positiveInt().default(10000),
    /** The `source_service` the monitor files our reports under. */
    source_service: nonEmptyString().default('notification'),
    /** SLOs registered at start (ALREADY_EXISTS counts as registered). */
    slos: z
      .array(DeclaredSloSchema)
      .max(MAX_DECLARED_SLOS, { message: `at most ${MAX_DECLARED_SLOS} SLOs` })
      .default(() => [])
      .superRefine(uniqueNames('SLO')),
    /** The service's own ratio SLOs (see DefaultSlosSchema). */
    default_slos: DefaultSlosSchema,
  })
  .prefault({});

/** Validated `monitor` section. */
export type MonitorReporterConfig = z.infer<typeof MonitorReporterConfigSchema>;
/** The validated `default_slos`. */
export type DefaultSlosConfig = z.infer<typeof DefaultSlosSchema>;
/** One declared SLO, validated (window in seconds). */
export type DeclaredSlo = z.infer<typeof DeclaredSloSchema>;
