/**
 * The alerts area of the monitor, built from the `alerts` section: the tier-aware dispatcher with the
 * configured channels, the AlertHub every alert goes through, and CaptureException's counter. app.ts
 * registers it with the lifecycle (stop: held alerts sent, or kept when the database holds them; the
 * notification connections closed).
 */
import type { Registry } from 'prom-client';
import type { Logger } from '../../../shared/logging/logger';
import { type Clock, type Timers, type TimerHandle, systemTimers } from '../../../shared/runtime/clock';
import type { LifecyclePart } from '../../../shared/runtime/lifecycle';
import type { AlertBatch, AlertChannel } from '../../../shared/monitoring/alerts/channels';
import { WebhookChannel } from '../../../shared/monitoring/alerts/channels';
import { createAlertDispatcher, webhookChannelOptions } from '../../../shared/monitoring/alerts/config';
import type { HeldAlertStore } from '../../../shared/monitoring/alerts/held-store';
import type { ErrorTrackerProtocol } from '../../../shared/monitoring/errors/error-tracking';
import type { MonitoringEventBus } from '../../../shared/monitoring/events/event-bus';
import { AlertHub } from './alert-hub';
import type { AlertNotifierFactory } from './alert-notifier';
import { NotificationAlertChannel } from './channels';
import type { MonitorAlertChannelConfig, MonitorAlertsConfig } from './config';
import { ExceptionCapture } from './exception-capture';
import { parseMatcher } from './matchers';
import { InMemoryAlertStore } from './memory-store';
import type { AlertStore } from './store';
import type { SilenceReminder } from './lifecycle';
import type { Alert } from './alert';
import { resolveTier } from '../../../shared/monitoring/alerts/tiers';
import { severityRank } from '../../../shared/monitoring/alerts/dispatcher';

/** What the area needs from the composition root. */
export interface AlertsAreaDeps {
  logger: Logger;
  /** The service's registry (`/metrics`). */
  registry: Registry;
  /** The service's error tracker (startServiceMonitoring). */
  tracker: ErrorTrackerProtocol;
  /** Source service of alerts that name none. */
  serviceName: string;
  clock?: Clock;
  timers?: Timers;
  events?: MonitoringEventBus;
  /** The body of each webhook POST (the wire `Alert` as JSON: rpc/alert-wire.ts's `alertWebhookBodies`). */
  webhookBodies: (batch: AlertBatch) => string[];
  /** The client of the notification service for `notification` channels (../notification/). */
  notifier: AlertNotifierFactory;
  /** Where the alert lifecycle keeps its state; default: in memory (`max_alerts_kept`). */
  store?: AlertStore;
  /** This replica's name in the notification log and the held alerts' leases (default: a random id). */
  replica?: string;
  /**
   * Where the dispatcher keeps held P1 and pending P2 alerts; default: in memory (lost with the
   * process, sent at a clean stop). app.ts gives the database's when the monitor has one.
   */
  heldStore?: HeldAlertStore;
}

/** The built area. */
export interface AlertsArea {
  hub: AlertHub;
  exceptions: ExceptionCapture;
  /** Runs the lifecycle's time rules every `lifecycle_interval_seconds` (app.ts: a worker). */
  ticker: LifecyclePart;
  /**
   * Lifecycle stop: sends held alerts (memory store; a database store keeps them for the next run or
   * another replica), then closes the channels' connections.
   */
  stop(): Promise<void>;
}

/** Builds the alerts area (nothing is sent until an alert is raised). */
export function createAlertsArea(config: MonitorAlertsConfig, deps: AlertsAreaDeps): AlertsArea {
  const logger = deps.logger.child({ component: 'alerts' });
  const closers: Array<() => void> = [];
  const buildChannel = (entry: MonitorAlertChannelConfig): AlertChannel | undefined => {
    switch (entry.type) {
      case 'webhook':
        return new WebhookChannel({ ...webhookChannelOptions(entry), encode: deps.webhookBodies, logger });
      case 'notification': {
        const channel = new NotificationAlertChannel(entry, deps.notifier(entry.notification), { logger });
        closers.push(() => channel.close());
        return channel;
      }
      default:
        return undefined; // log: the library's
    }
  };
  const router = createAlertDispatcher(config, {
    logger,
    clock: deps.clock,
    timers: deps.timers,
    events: deps.events,
    buildChannel,
    ...(deps.heldStore ? { heldStore: deps.heldStore } : {}),
    ...(deps.replica ? { owner: deps.replica } : {}),
  });
  const remind = silenceReminders(config, deps, logger, closers);
  const hub = new AlertHub({
    router,
    recentSize: config.recent_size,
    maxWatchers: config.max_watchers,
    watchBufferSize: config.watch_buffer_size,
    maxPendingDispatches: config.max_pending_dispatches,
    defaultSource: deps.serviceName,
    clock: deps.clock,
    logger,
    lifecycle: {
      store: deps.store ?? new InMemoryAlertStore({ maxAlerts: config.max_alerts_kept, clock: deps.clock }),
      ...(deps.replica ? { owner: deps.replica } : {}),
      inhibitRules: config.inhibit_rules.map((r, i) => ({
        sourceMatchers: r.source_matchers.map((m) => parseMatcher(m, `inhibit_rules[${i}].source_matchers`)),
        targetMatchers: r.target_matchers.map((m) => parseMatcher(m, `inhibit_rules[${i}].target_matchers`)),
        equal: r.equal,
      })),
      ...(config.grouping.group_by.length > 0
        ? {
            grouping: {
              groupBy: config.grouping.group_by,
              groupWaitMs: config.grouping.group_wait_seconds * 1000,
              groupIntervalMs: config.grouping.group_interval_seconds * 1000,
              repeatIntervalMs: config.grouping.repeat_interval_seconds * 1000,
            },
          }
        : {}),
      reminders: {
        expiryLeadMs: config.silences.reminder_lead_seconds * 1000,
        longHiddenMs: config.silences.long_hidden_seconds * 1000,
      },
      remind,
      maxActiveSilences: config.silences.max_active,
      receivers: (alert) => receiversOf(config, alert),
      retentionMs: config.retention_days * 86_400_000,
    },
  });
  const timers = deps.timers ?? systemTimers;
  let timer: TimerHandle | undefined;
  let running = false;
  const ticker: LifecyclePart = {
    start() {
      timer = timers.setInterval(
        () => {
          if (running) return;
          running = true;
          hub.lifecycle
            .tick()
            .catch((err: unknown) => logger.error({ err }, 'alert lifecycle tick failed'))
            .finally(() => (running = false));
        },
        Math.max(100, config.lifecycle_interval_seconds * 1000),
      );
    },
    stop() {
      if (timer !== undefined) timers.clearInterval(timer);
      timer = undefined;
    },
  };
  const exceptions = new ExceptionCapture(
    deps.tracker,
    deps.registry,
    config.max_exception_series,
    logger,
    deps.clock,
  );
  return {
    hub,
    exceptions,
    ticker,
    async stop() {
      try {
        await hub.stop();
      } finally {
        for (const close of closers) close();
      }
    },
  };
}

/**
 * Reminders to a silence's creator: an email through the first `notification` channel's service when
 * the creator is an email address, else (a name, or no such channel) a log line naming the silence.
 * The address is never logged.
 */
function silenceReminders(
  config: MonitorAlertsConfig,
  deps: AlertsAreaDeps,
  logger: Logger,
  closers: Array<() => void>,
): (reminder: SilenceReminder) => Promise<void> {
  const channel = config.channels.find((c) => c.type === 'notification');
  let notifier: ReturnType<AlertNotifierFactory> | undefined;
  return async (reminder) => {
    const isEmail = /^[^\s@<>]+@[^\s@<>]+\.[^\s@<>]+$/.test(reminder.to);
    if (channel?.type === 'notification' && isEmail) {
      if (!notifier) {
        notifier = deps.notifier(channel.notification);
        const n = notifier;
        closers.push(() => n.close());
      }
      await notifier.sendEmail({
        to: reminder.to,
        subject: reminder.subject,
        text: reminder.text,
        ...(channel.notification.email_backend ? { backend: channel.notification.email_backend } : {}),
        idempotencyKey: `monitor-silence-reminder:${reminder.key}`,
      });
      return;
    }
    logger.warn({ event: 'silence_reminder', reminder: reminder.key }, reminder.subject);
  };
}

/**
 * The channels an alert's notification reaches (its tier and severity against each channel's `tiers`
 * and `min_severity`, the dispatcher's rule), named for the timeline: `hook (webhook)`,
 * `ops (notification: 2 email, 1 sms)`; with no channel configured, the service log.
 */
function receiversOf(config: MonitorAlertsConfig, alert: Alert): string[] {
  if (config.channels.length === 0) return ['service log'];
  const tier = resolveTier(alert.context.tier);
  return config.channels
    .filter(
      (c) =>
        (c.tiers.length === 0 || c.tiers.includes(tier)) &&
        severityRank(alert.severity) >= severityRank(c.min_severity),
    )
    .map((c) =>
      c.type === 'notification'
        ? `${c.name} (notification: ${c.notification.email_to.length} email, ${c.notification.sms_to.length} sms)`
        : `${c.name} (${c.type})`,
    );
}
