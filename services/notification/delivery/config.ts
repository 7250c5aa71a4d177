/**
 * The delivery pipeline's config section (`notification.delivery`): retries, leases, worker
 * concurrency, attempt timeout and retention. Its one definition; the service config (../config.ts)
 * composes it, and the pipeline takes the validated object as it is.
 */
import { z } from 'zod';

import { itemName, nonNegativeInt, positiveInt } from '../../../shared/config';
import { CHANNELS, type Channel } from './driver';
import { DEFAULT_SUPPRESSION_LOOKUP_TIMEOUT_MS } from './suppression';

/** How a channel routes deliveries over its backends. */
export const ROUTING_MODE = z.enum(['primary', 'fallback', 'round_robin']);

/** A channel's routing mode. */
export type RoutingMode = z.infer<typeof ROUTING_MODE>;

/** One routing key per channel of CHANNELS, each `primary` unless set. */
const routingShape = Object.fromEntries(CHANNELS.map((c) => [c, ROUTING_MODE.default('primary')])) as Record<
  Channel,
  z.ZodDefault<typeof ROUTING_MODE>
>;

/** The delivery section of the notification config. */
export const DeliveryConfigSchema = z
  .strictObject({
    /** `database` (PostgreSQL / PGlite: survives restarts) or `memory` (tests, throwaway runs). */
    store_backend: z.enum(['database', 'memory']).default('database'),
    /** Attempts per delivery, the first included; the last failure ends it FAILED. */
    max_attempts: positiveInt(100).default(5),
    /** Backoff before retry n is a random delay in [0, min(max_delay_ms, base_delay_ms * 2^(n-1))]. */
    base_delay_ms: nonNegativeInt().default(500),
    /** Longest delay between attempts, also the cap on a provider's Retry-After. */
    max_delay_ms: nonNegativeInt().default(60000),
    /** How long a worker owns a claimed delivery; a dead worker's claims are retaken after it. */
    lease_seconds: positiveInt().default(60),
    /** How often a worker looks for due deliveries (a local submit also wakes it at once). */
    poll_interval_ms: positiveInt().default(1000),
    /** Attempts in flight per backend and process. */
    concurrency: positiveInt().default(8),
    /** Per-backend override of `concurrency`, by backend name. */
    backend_concurrency: z.record(itemName(), positiveInt()).default(() => ({})),
    /** One attempt is aborted (and retried) after this long. */
    attempt_timeout_ms: positiveInt().default(30000),
    /** Largest payload accepted, as UTF-8 JSON bytes (an email with 25 MB of base64 attachments fits). */
    max_payload_bytes: positiveInt().default(40 * 1024 * 1024),
    /** Most messages one batch request (SendPushBatch) may carry; more is INVALID_ARGUMENT. */
    max_batch_size: positiveInt(100000).default(10000),
    /**
     * Most submits waiting for the database at once (the group-commit queue, per process); one more is
     * RESOURCE_EXHAUSTED, so a slow database cannot pile payloads up in memory.
     */
    max_pending_submits: positiveInt().default(10000),
    /**
     * The queue gauges (depth, oldest due age) count the queued rows at most this often; a scrape in
     * between answers the last counts, so scrapes of many replicas cost one count per interval each.
     */
    queue_stats_max_age_seconds: nonNegativeInt().default(5),
    /** A final delivery keeps what was sent (payload, full recipient) this long, then only the record. */
    content_retention_hours: positiveInt().default(24),
    /** Final deliveries are deleted this many days after they ended (idempotency keys go with them). */
    retention_days: positiveInt().default(30),
    /** How often the retention job runs. */
    purge_interval_seconds: positiveInt().default(3600),
    /** Rows erased or deleted per statement. */
    purge_batch_size: positiveInt().default(1000),
    /**
     * How each channel spreads deliveries over its backends (in the channel's configured list order):
     * `primary` (all to the first), `fallback` (the next backend on a retryable failure or an open
     * circuit) or `round_robin` (new deliveries in turn). A request naming a backend uses only it.
     */
    routing: z.strictObject(routingShape).prefault({}),
    /** One circuit breaker per backend, per process (delivery/README.md). */
    circuit_breaker: z
      .strictObject({
        /** Consecutive retryable failures that open the circuit. */
        failure_threshold: positiveInt(1000).default(5),
        /** How long an open circuit stays open before one trial attempt (half-open). */
        cooldown_seconds: positiveInt(86400).default(30),
      })
      .prefault({}),
    /** WatchDeliveries, the live stream of delivery status changes (delivery/README.md, "WatchDeliveries"). */
    watch: z
      .strictObject({
        /** Events buffered per open watch; a reader that falls further behind catches up from the store. */
        buffer_size: positiveInt(100_000).default(256),
        /** Events read from the log per query (catch-up and live fan-out); never more than `buffer_size`. */
        read_page_size: positiveInt(10_000).default(500),
        /** Open watches in one process, all callers together; more is RESOURCE_EXHAUSTED. */
        max_watchers: positiveInt(1_000_000).default(10_000),
        /** Open watches of one caller in one process; more is RESOURCE_EXHAUSTED. */
        max_watchers_per_caller: positiveInt(10_000).default(16),
        /**
         * A watch whose reader has not asked for an event this long while events wait for it is closed
         * with RESOURCE_EXHAUSTED (it resumes with its last cursor). An idle stream is never closed.
         */
        stall_seconds: positiveInt(3600).default(10),
        /** Events the sequencer numbers per transaction. */
        sequencer_batch_size: positiveInt(100_000).default(1000),
        /**
         * Safety sweep: number events a replica committed but did not get to number (it died), and
         * re-read the log in case a notification was lost. Commits and NOTIFY trigger both at once.
         */
        sweep_interval_seconds: positiveInt(3600).default(5),
      })
      .prefault({}),
    /** The suppression list (delivery/README.md, "Suppression list"). */
    suppression: z
      .strictObject({
        /**
         * Most entries the `memory` store holds; a new entry beyond it is refused (RESOURCE_EXHAUSTED),
         * never an old one evicted. The database store has no cap.
         */
        memory_max_entries: positiveInt(10_000_000).default(100_000),
        /**
         * Longest wait of one call of the suppression list: a lookup at submit and before an attempt
         * (queueing included), and every other call (add, remove, reasons: the RPCs, receipts, inbound
         * STOP, provider errors); on PostgreSQL the statement is cancelled after it. Past it a submit is
         * accepted unchecked (its claim checks it), a claimed delivery is deferred, never sent
         * unchecked, and any other call answers UNAVAILABLE (a webhook 503, so the provider retries)
         * (delivery/README.md, "Suppression lookup bound", "Every suppression list call bounded").
         * From 10 ms to 60 s.
         */
        lookup_timeout_ms: positiveInt(60_000)
          .min(10, { error: 'expected at least 10' })
          .default(DEFAULT_SUPPRESSION_LOOKUP_TIMEOUT_MS),
      })
      .prefault({}),
  })
  .prefault({})
  .superRefine((d, ctx) => {
    if (d.base_delay_ms > d.max_delay_ms) {
      ctx.addIssue({ code: 'custom', path: ['max_delay_ms'], message: 'must be at least base_delay_ms' });
    }
    // A lease that can expire while its attempt is still running lets a second worker send the same
    // delivery: the lease must outlive the longest attempt.
    if (d.lease_seconds * 1000 <= d.attempt_timeout_ms) {
      ctx.addIssue({
        code: 'custom',
        path: ['lease_seconds'],
        message: 'must be longer than attempt_timeout_ms',
      });
    }
  });

/** Validated delivery config. */
export type DeliveryConfig = z.infer<typeof DeliveryConfigSchema>;

/** The defaults, as the schema fills them. */
export const DEFAULT_DELIVERY_CONFIG: Readonly<DeliveryConfig> = Object.freeze(
  DeliveryConfigSchema.parse({}),
);
