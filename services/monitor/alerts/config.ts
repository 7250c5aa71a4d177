/**
 * The monitor's `alerts` section: the monitoring library's schema (business hours, digest interval,
 * buffer bounds, `log` and `webhook` channels) plus the monitor's own channel type, `notification`
 * (email and SMS through the notification service over gRPC), and the bounds of the alert RPCs.
 */
import { z } from 'zod';

import { duration, e164, emailAddress, hostPort, itemName, positiveInt } from '../../../shared/config';
import { parseMatcher, compileMatcher } from './matchers';
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

/** A matcher in Alertmanager's text form (`name="value"`, `name=~"re"`), checked when the config loads. */
function matcherText() {
  return z.string().superRefine((text, ctx) => {
    try {
      compileMatcher(parseMatcher(text, 'matcher'), 'matcher');
    } catch (err) {
      ctx.addIssue({ code: 'custom', message: (err as Error).message });
    }
  });
}

/** Most inhibition rules. */
export const MAX_INHIBIT_RULES = 100;

/** The alert lifecycle's keys (lifecycle.ts; README "Lifecycle"). */
function lifecycleShape() {
  return {
    /**
     * Grouping (Alertmanager's semantics), one for every channel: alerts sharing the values of
     * `group_by` make one notification listing them. Empty `group_by`: no grouping, each alert is
     * notified on its own at once.
     */
    grouping: z
      .strictObject({
        /** Labels that make a group (context keys, `alertname`, `severity`, `source_service`). */
        group_by: z
          .array(z.string().min(1).max(64))
          .max(16)
          .default(() => []),
        /** How long a new group waits for more alerts before its first notification. */
        group_wait_seconds: duration().default(30),
        /** How long a group waits before notifying alerts added since its last notification. */
        group_interval_seconds: duration().default(300),
        /** How long before an unchanged group's notification is sent again (acknowledged alerts never). */
        repeat_interval_seconds: duration().default(14_400),
      })
      .prefault({}),
    /**
     * Inhibition rules: a firing alert matching `source_matchers` mutes alerts matching
     * `target_matchers` whose `equal` labels have the same values (never itself).
     */
    inhibit_rules: z
      .array(
        z.strictObject({
          source_matchers: z.array(matcherText()).min(1).max(16),
          target_matchers: z.array(matcherText()).min(1).max(16),
          equal: z
            .array(z.string().min(1).max(64))
            .max(16)
            .default(() => []),
        }),
      )
      .max(MAX_INHIBIT_RULES, { error: `expected at most ${MAX_INHIBIT_RULES} rules` })
      .default(() => []),
    /** Silences: bounds and reminders to their creator. */
    silences: z
      .strictObject({
        /** Active (not ended) silences at once; beyond: RESOURCE_EXHAUSTED. */
        max_active: positiveInt().max(10_000, { error: 'expected at most 10000' }).default(1000),
        /** Remind the creator this long before a silence ends (0: never). */
        reminder_lead_seconds: duration().default(3600),
        /** Remind the creator when a silence has hidden a firing alert this long (0: never). */
        long_hidden_seconds: duration().default(86_400),
      })
      .prefault({}),
    /** Alerts the in-memory store keeps (the oldest resolved leave first). */
    max_alerts_kept: positiveInt().max(1_000_000, { error: 'expected at most 1000000' }).default(10_000),
    /** Days resolved alerts, ended silences and notification-log rows are kept in the database. */
    retention_days: positiveInt().max(3650, { error: 'expected at most 3650 days' }).default(30),
    /** How often the time rules run (silences ending, group notifications, reminders). */
    lifecycle_interval_seconds: duration().default(1),
  };
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
    ...lifecycleShape(),
  });
}

/** The validated monitor `alerts` section. */
export type MonitorAlertsConfig = z.infer<ReturnType<typeof monitorAlertsConfigSchema>>;
/** One configured channel (log, webhook or notification). */
export type MonitorAlertChannelConfig = MonitorAlertsConfig['channels'][number];
/** A `notification` channel entry. */
export type NotificationChannelConfig = z.infer<ReturnType<typeof notificationChannelConfigSchema>>;
