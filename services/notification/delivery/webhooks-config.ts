/**
 * Config of the provider receipt webhooks (`notification.webhooks`): the routes
 * `POST /webhooks/sms/{backend}/status`, `/webhooks/sms/{backend}/inbound` and
 * `/webhooks/email/{backend}/events` on the HTTP port. The keys that verify them are each backend's
 * (`sms_backends[].sms_gateway.auth_token`, `mailer.backends[].http_api.event_webhook_public_key`).
 */
import { z } from 'zod';

import { httpUrl, positiveInt } from '../../../shared/config';
import { DEFAULT_REPLAY_MEMORY_MAX_ENTRIES, DEFAULT_REPLAY_RETENTION_HOURS } from './inbound-replay';
import {
  DEFAULT_INBOUND_SMS_MAX_MESSAGES,
  DEFAULT_INBOUND_SMS_RETENTION_HOURS,
} from '../channels/sms/inbound-log';

/** The largest receipt body by default: 1 MiB (SendGrid posts events in batches). */
export const DEFAULT_WEBHOOK_MAX_BODY_BYTES = 1024 * 1024;

/** `notification.webhooks`. */
export const WebhooksConfigSchema = z
  .strictObject({
    /**
     * The address providers reach this service's HTTP port at (`https://notify.example.com`), without
     * a trailing path. When set, the sms_gateway driver asks for status callbacks at
     * `{public_base_url}/webhooks/sms/{backend}/status`, and SMS signatures are checked against that
     * URL (behind a proxy the Host header is not what the provider signed). Unset: no StatusCallback,
     * and signatures are checked against `http://{Host}{path}`.
     */
    public_base_url: httpUrl().optional(),
    /** Email event batches whose signed timestamp is older (or this far in the future) are refused (403). */
    max_age_seconds: positiveInt().default(300),
    /** The largest receipt body accepted; larger is 413 and is not read. */
    max_body_bytes: positiveInt().default(DEFAULT_WEBHOOK_MAX_BODY_BYTES),
    /**
     * How long the id of a taken callback (an inbound Twilio MessageSid, a status callback's
     * MessageSid and MessageStatus, a suppressing SendGrid event's sg_event_id) is kept, so the same
     * signed callback posted again is refused as a replay (inbound-replay.ts). At least the provider's
     * retry window; a replay older than this is taken as new.
     */
    replay_retention_hours: positiveInt(24 * 366).default(DEFAULT_REPLAY_RETENTION_HOURS),
    /**
     * Most ids the `memory` store keeps (`delivery.store_backend: memory`); beyond it the oldest are
     * forgotten early. The database store is bounded by the retention alone.
     */
    replay_memory_max_entries: positiveInt(10_000_000).default(DEFAULT_REPLAY_MEMORY_MAX_ENTRIES),
    /**
     * How long inbound SMS (replies other than STOP / START, channels/sms/inbound-log.ts) are kept for
     * WatchInboundSms; a consumer away longer than this gets a reset. Purged every ten minutes.
     */
    inbound_sms_retention_hours: positiveInt(24 * 366).default(DEFAULT_INBOUND_SMS_RETENTION_HOURS),
    /** Most inbound SMS kept (both stores); a new one beyond it pushes out the oldest. */
    inbound_sms_max_messages: positiveInt(10_000_000).default(DEFAULT_INBOUND_SMS_MAX_MESSAGES),
    /** WatchInboundSms streams (the one live-stream hub's numbers). */
    inbound_sms_watch: z
      .strictObject({
        /** Messages buffered per open stream; a reader further behind catches up from the log. */
        buffer_size: positiveInt(100_000).default(256),
        /** Open streams in one process, all callers together; more is RESOURCE_EXHAUSTED. */
        max_watchers: positiveInt(100_000).default(64),
        /** Open streams of one caller in one process; more is RESOURCE_EXHAUSTED. */
        max_watchers_per_caller: positiveInt(10_000).default(8),
        /**
         * A stream whose reader has not asked for a message this long while messages wait is closed
         * with RESOURCE_EXHAUSTED (it resumes after its last id). An idle stream is never closed.
         */
        stall_seconds: positiveInt(3600).default(30),
      })
      .prefault({}),
  })
  .prefault({});

/** Validated `notification.webhooks`. */
export type WebhooksConfig = z.infer<typeof WebhooksConfigSchema>;
