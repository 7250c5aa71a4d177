/**
 * TierAwareDispatcher: an AlertDispatcherProtocol that routes each alert by its context's `tier`.
 *
 * - P0_PAGE: sent to the P0 channels at once.
 * - P1_BUSINESS_HOURS (also a missing or unknown tier): sent at once within business hours; outside
 *   them held, and the held alerts are sent as one batch when business hours open.
 * - P2_DIGEST: accumulated and sent as one digest every `digestIntervalSeconds`.
 *
 * Held and accumulated alerts live in bounded buffers: at the bound the oldest alert is dropped and
 * counted, and the count travels with the next batch (`dropped`), so a reader knows alerts were lost.
 * `shutdown()` sends whatever is held or accumulated (reason `shutdown`), because an alert seen early
 * is better than one lost with the process.
 *
 * Every alert is emitted as "alert triggered" on the event bus when it is raised (before routing), so
 * a held or accumulated alert is seen by listeners at once, whatever its channels (webhook, log).
 */
import { type Logger, silentLogger } from '../../logging/logger';
import { emitAlertTriggered, type MonitoringEventBus } from '../events/event-bus';
import { type Clock, systemClock, type TimerHandle, type Timers, systemTimers } from '../../runtime/clock';
import type { AlertChannel, AlertBatch, AlertBatchReason, AlertRecord } from './channels';
import type { AlertContext, AlertDispatcherProtocol, AlertSeverity } from './dispatcher';
import { metricAlertLogLevel } from './dispatcher';
import { AlertTier, type BusinessHours, resolveTier } from './tiers';

/** Options of TierAwareDispatcher. */
export interface TierAwareDispatcherOptions {
  /** Channels per tier; a tier without channels drops its alerts (logged once per batch). */
  channels: Partial<Record<AlertTier, readonly AlertChannel[]>>;
  /** When P1 alerts go out at once; without it every time counts as business hours. */
  businessHours?: BusinessHours;
  /** Seconds between P2 digests (default 3600). */
  digestIntervalSeconds?: number;
  /** Most P1 alerts held outside business hours (default 1000). */
  maxHeld?: number;
  /** Most P2 alerts in one digest (default 1000). */
  maxDigest?: number;
  clock?: Clock;
  timers?: Timers;
  logger?: Logger;
  /** Where "alert triggered" is emitted (default: the process bus, `monitoringEvents`). */
  events?: MonitoringEventBus;
}

/** A bounded queue that drops its oldest entry when full and counts the drops. */
class DropOldestBuffer<T> {
  private items: T[] = [];
  dropped = 0;
  constructor(readonly capacity: number) {}
  push(item: T): void {
    if (this.items.length >= this.capacity) {
      this.items.shift();
      this.dropped++;
    }
    this.items.push(item);
  }
  get size(): number {
    return this.items.length;
  }
  /** Empties the buffer, returning its items and drop count. */
  take(): { items: T[]; dropped: number } {
    const out = { items: this.items, dropped: this.dropped };
    this.items = [];
    this.dropped = 0;
    return out;
  }
}

/** Routes alerts to channels by tier. */
export class TierAwareDispatcher implements AlertDispatcherProtocol {
  private readonly channels: Partial<Record<AlertTier, readonly AlertChannel[]>>;
  private readonly businessHours: BusinessHours | undefined;
  private readonly clock: Clock;
  private readonly timers: Timers;
  private readonly logger: Logger;
  private readonly events: MonitoringEventBus | undefined;
  private readonly held: DropOldestBuffer<AlertRecord>;
  private readonly digest: DropOldestBuffer<AlertRecord>;
  private readonly digestTimer: TimerHandle;
  private openingTimer: TimerHandle | undefined;
  private closed = false;

  constructor(options: TierAwareDispatcherOptions) {
    this.channels = options.channels;
    this.businessHours = options.businessHours;
    this.clock = options.clock ?? systemClock;
    this.timers = options.timers ?? systemTimers;
    this.logger = options.logger ?? silentLogger();
    this.events = options.events;
    this.held = new DropOldestBuffer(options.maxHeld ?? 1000);
    this.digest = new DropOldestBuffer(options.maxDigest ?? 1000);
    this.digestTimer = this.timers.setInterval(
      () => void this.flushDigest('digest'),
      (options.digestIntervalSeconds ?? 3600) * 1000,
    );
  }

  /** Number of P1 alerts held until business hours open. */
  get heldCount(): number {
    return this.held.size;
  }

  /** Number of P2 alerts waiting for the next digest. */
  get pendingDigestCount(): number {
    return this.digest.size;
  }

  async sendAlert(
    title: string,
    message: string,
    severity: AlertSeverity,
    context?: AlertContext | null,
  ): Promise<void> {
    const ctx = context ?? {};
    await this.route({
      kind: 'alert',
      title,
      message,
      severity,
      context: ctx,
      tier: resolveTier(ctx.tier),
      raisedAt: this.clock.now(),
    });
  }

  async sendMetricAlert(
    metricName: string,
    currentValue: number,
    threshold: number,
    context?: AlertContext | null,
  ): Promise<void> {
    const ctx = context ?? {};
    await this.route({
      kind: 'metric',
      title: `metric ${metricName} over threshold`,
      message: `metric ${metricName} at ${currentValue}, threshold ${threshold}`,
      severity: metricAlertLogLevel(currentValue, threshold) === 'error' ? 'critical' : 'medium',
      context: ctx,
      tier: resolveTier(ctx.tier),
      raisedAt: this.clock.now(),
      metric: { name: metricName, currentValue, threshold },
    });
  }

  /**
   * Routes an alert record built by the caller (the monitor's AlertHub gives each one its id and
   * source service first); `sendAlert` and `sendMetricAlert` build theirs and come here.
   */
  async dispatch(alert: AlertRecord): Promise<void> {
    return this.route(alert);
  }

  private async route(alert: AlertRecord): Promise<void> {
    emitAlertTriggered(
      { alert_name: alert.metric?.name ?? alert.title, severity: alert.severity },
      this.events,
    );
    // After shutdown nothing would ever flush a buffer, so every tier goes out at once.
    if (this.closed) return this.deliver(alert.tier, 'shutdown', [alert], 0);
    switch (alert.tier) {
      case AlertTier.P0_PAGE:
        return this.deliver(alert.tier, 'immediate', [alert], 0);
      case AlertTier.P2_DIGEST:
        this.digest.push(alert);
        return;
      default:
        if (!this.businessHours || this.businessHours.isOpen(this.clock.now())) {
          // Held alerts (a timer that has not fired yet) go first, in order.
          if (this.held.size > 0) await this.releaseHeld('business_hours_opened');
          return this.deliver(alert.tier, 'immediate', [alert], 0);
        }
        this.held.push(alert);
        this.scheduleOpening();
    }
  }

  private scheduleOpening(): void {
    if (this.openingTimer !== undefined || !this.businessHours) return;
    const now = this.clock.now();
    const delay = Math.max(0, this.businessHours.nextOpening(now) - now);
    this.openingTimer = this.timers.setTimeout(() => {
      this.openingTimer = undefined;
      void this.releaseHeld('business_hours_opened');
    }, delay);
  }

  /** Sends the held P1 alerts now, as one batch. */
  async releaseHeld(reason: AlertBatchReason): Promise<void> {
    const { items, dropped } = this.held.take();
    if (items.length > 0 || dropped > 0)
      await this.deliver(AlertTier.P1_BUSINESS_HOURS, reason, items, dropped);
  }

  /** Sends the accumulated P2 alerts now, as one digest. Nothing is sent when there is none. */
  async flushDigest(reason: AlertBatchReason = 'digest'): Promise<void> {
    const { items, dropped } = this.digest.take();
    if (items.length > 0 || dropped > 0) await this.deliver(AlertTier.P2_DIGEST, reason, items, dropped);
  }

  /**
   * Clean shutdown: stops the timers and sends what is held or accumulated (reason `shutdown`).
   * Alerts raised afterwards go out at once. Safe to call more than once.
   */
  async shutdown(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.timers.clearInterval(this.digestTimer);
    if (this.openingTimer !== undefined) this.timers.clearTimeout(this.openingTimer);
    this.openingTimer = undefined;
    await Promise.all([this.releaseHeld('shutdown'), this.flushDigest('shutdown')]);
  }

  /** Hands a batch to every channel of its tier; a failing channel is logged and does not stop the others. */
  private async deliver(
    tier: AlertTier,
    reason: AlertBatchReason,
    alerts: AlertRecord[],
    dropped: number,
  ): Promise<void> {
    const channels = this.channels[tier] ?? [];
    if (channels.length === 0) {
      this.logger.warn({ tier, count: alerts.length }, 'no alert channel for tier; alerts dropped');
      return;
    }
    if (dropped > 0) this.logger.warn({ tier, dropped }, 'alert buffer full; oldest alerts dropped');
    const batch: AlertBatch = { tier, reason, alerts, dropped };
    await Promise.all(
      channels.map(async (channel) => {
        try {
          await channel.send(batch);
        } catch (err) {
          this.logger.error(
            {
              tier,
              channel: channel.name,
              count: alerts.length,
              err: err instanceof Error ? err.message : String(err),
            },
            'alert channel failed',
          );
        }
      }),
    );
  }
}
