/**
 * Config of the provider receipt webhooks (`notification.webhooks`): the routes
 * `POST /webhooks/sms/{backend}/status`, `/webhooks/sms/{backend}/inbound` and
 * `/webhooks/email/{backend}/events` on the HTTP port. The keys that verify them are each backend's
 * (`sms_backends[].sms_gateway.auth_token`, `mailer.backends[].http_api.event_webhook_public_key`).
 */
import { z } from 'zod';

import { httpUrl, positiveInt } from '../../../shared/config';
import { DEFAULT_REPLAY_MEMORY_MAX_ENTRIES, DEFAULT_REPLAY_RETENTION_HOURS } from './inbound-replay';

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
  })
  .prefault({});

/** Validated `notification.webhooks`. */
export type WebhooksConfig = z.infer<typeof WebhooksConfigSchema>;
