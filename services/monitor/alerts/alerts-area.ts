/**
 * The alerts area of the monitor, built from the `alerts` section: the tier-aware dispatcher with the
 * configured channels, the AlertHub every alert goes through, and CaptureException's counter. app.ts
 * registers it with the lifecycle (stop: held alerts flushed, the notification connections closed).
 */
import type { Registry } from 'prom-client';
import type { Logger } from '../../../shared/logging/logger';
import type { Clock, Timers } from '../../../shared/runtime/clock';
import type { AlertBatch, AlertChannel } from '../../../shared/monitoring/alerts/channels';
import { WebhookChannel } from '../../../shared/monitoring/alerts/channels';
import { createAlertDispatcher, webhookChannelOptions } from '../../../shared/monitoring/alerts/config';
import type { ErrorTrackerProtocol } from '../../../shared/monitoring/errors/error-tracking';
import type { MonitoringEventBus } from '../../../shared/monitoring/events/event-bus';
import { AlertHub } from './alert-hub';
import type { AlertNotifierFactory } from './alert-notifier';
import { NotificationAlertChannel } from './channels';
import type { MonitorAlertChannelConfig, MonitorAlertsConfig } from './config';
import { ExceptionCapture } from './exception-capture';

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
}

/** The built area. */
export interface AlertsArea {
  hub: AlertHub;
  exceptions: ExceptionCapture;
  /** Lifecycle stop: flushes held alerts, then closes the channels' connections. */
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
  });
  const hub = new AlertHub({
    router,
    recentSize: config.recent_size,
    maxWatchers: config.max_watchers,
    watchBufferSize: config.watch_buffer_size,
    maxPendingDispatches: config.max_pending_dispatches,
    defaultSource: deps.serviceName,
    clock: deps.clock,
    logger,
  });
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
    async stop() {
      try {
        await hub.stop();
      } finally {
        for (const close of closers) close();
      }
    },
  };
}
