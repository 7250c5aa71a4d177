/**
 * The monitor's `alerts` section: the monitoring library's schema (business hours, digest interval,
 * buffer bounds, `log` and `webhook` channels) plus the monitor's own channel type, `notification`
 * (email and SMS through the notification service over gRPC), and the bounds of the alert RPCs.
 */
import { z } from 'zod';

import { e164, emailAddress, hostPort, itemName, positiveInt } from '../../../shared/config';
import { alertChannelCommonShape, alertsConfigSchema } from '../../../shared/monitoring/alerts/config';

/** Most recipients of one kind in a notification channel. */
export const MAX_RECIPIENTS = 50;

/** A `notification` channel: each alert as email and/or SMS through svc.notification.v1.NotificationService. */
export function notificationChannelConfigSchema() {
  return z.strictObject({
    ...alertChannelCommonShape(),
    type: z.literal('notification'),
    notification: z
      .strictObject({
        /** `host:port` of the notification service's gRPC port (plaintext, as inside a cluster). */
        grpc_address: hostPort(),
        /** Sent as `authorization: Bearer <token>`; a secret, never logged or returned. */
        api_token: z.string().default(''),
        /** Email recipients; each gets their own email. */
        email_to: z
          .array(emailAddress())
          .max(MAX_RECIPIENTS, { error: `expected at most ${MAX_RECIPIENTS} addresses` })
          .default(() => []),
        /** SMS recipients (E.164); each gets their own text. */
        sms_to: z
          .array(e164())
          .max(MAX_RECIPIENTS, { error: `expected at most ${MAX_RECIPIENTS} numbers` })
          .default(() => []),
        /** Mailer backend name; unset for the notification service's primary. */
        email_backend: itemName().optional(),
        /** SMS backend name; unset for the primary. */
        sms_backend: itemName().optional(),
        /** Milliseconds one SendEmail / SendSms call may take. */
        timeout_ms: positiveInt().max(60_000, { error: 'expected at most 60000 ms' }).default(5000),
        /** Attempts per message (the first included); a retry reuses the idempotency key. */
        max_attempts: positiveInt().max(10, { error: 'expected at most 10 attempts' }).default(3),
      })
      .refine((n) => n.email_to.length + n.sms_to.length > 0, {
        error: 'expected at least one recipient in email_to or sms_to',
        path: ['email_to'],
      }),
  });
}

/** The monitor's `alerts` section. */
export function monitorAlertsConfigSchema() {
  return alertsConfigSchema([notificationChannelConfigSchema()], {
    /** Alerts kept for the status page and `recent()`; the oldest leave first. */
    recent_size: positiveInt().max(10_000, { error: 'expected at most 10000' }).default(200),
    /** Open WatchAlerts streams; beyond: RESOURCE_EXHAUSTED. */
    max_watchers: positiveInt().default(1000),
    /** Alerts buffered per watcher; one that falls this far behind is closed with RESOURCE_EXHAUSTED. */
    watch_buffer_size: positiveInt().max(100_000, { error: 'expected at most 100000' }).default(256),
    /**
     * Alerts handed to their channels and not yet through (a slow or failing webhook holds one for its
     * attempts x timeout); beyond it SendAlert answers RESOURCE_EXHAUSTED instead of queueing more.
     */
    max_pending_dispatches: positiveInt().max(100_000, { error: 'expected at most 100000' }).default(1000),
    /** Distinct (service, type) pairs CaptureException counts on their own; the rest count as `other`. */
    max_exception_series: positiveInt().max(100_000, { error: 'expected at most 100000' }).default(500),
  });
}

/** The validated monitor `alerts` section. */
export type MonitorAlertsConfig = z.infer<ReturnType<typeof monitorAlertsConfigSchema>>;
/** One configured channel (log, webhook or notification). */
export type MonitorAlertChannelConfig = MonitorAlertsConfig['channels'][number];
/** A `notification` channel entry. */
export type NotificationChannelConfig = z.infer<ReturnType<typeof notificationChannelConfigSchema>>;
