/**
 * TierAwareDispatcher: an AlertDispatcherProtocol that routes each alert by its context's `tier`.
 *
 * - P0_PAGE: sent to the P0 channels at once.
 * - P1_BUSINESS_HOURS (also a missing or unknown tier): sent at once within business hours; outside
 *   them held, and the held alerts are sent as one batch when business hours open.
 * - P2_DIGEST: accumulated and sent as one digest every `digestIntervalSeconds`.
 *
 * Held and accumulated alerts live in a HeldAlertStore (held-store.ts; in memory by default, a
 * database for a service that has one), bounded per tier: at the bound the oldest alert is dropped and
 * counted, and the count travels with the next batch (`dropped`), so a reader knows alerts were lost.
 * `route` resolves once a held alert is kept in the store. A batch is claimed (leased to this
 * dispatcher), sent, then deleted, so replicas sharing a durable store send each held alert once (at
 * least once when a replica dies between the send and the delete) and one digest per interval.
 * With a durable store an alert sent at once is kept too, in the store's outbox, leased to this
 * dispatcher until every channel is through with it (sent, or given up after its attempts): one whose
 * dispatcher dies meanwhile is sent by the next dispatcher to claim the outbox once the lease has run
 * out (every dispatcher on a durable store looks every half lease). `accept` tells a caller when the
 * alert is kept apart from when it is through.
 * `shutdown()` with the memory store sends whatever is held or accumulated (reason `shutdown`),
 * because an alert seen early is better than one lost with the process; a durable store keeps them.
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
import {
  type DeferredTier,
  type HeldAlertStore,
  type HeldClaim,
  type HeldTier,
  MemoryHeldAlertStore,
  OUTBOX,
  randomHeldOwner,
} from './held-store';
import { AlertTier, type BusinessHours, resolveTier } from './tiers';

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

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
  /**
   * Where held P1 and pending P2 alerts are kept (default: in memory, lost with the process). A
   * durable store keeps them across a crash and shares them between replicas.
   */
  heldStore?: HeldAlertStore;
  /** This dispatcher's name in the held store's leases (default: a random id). */
  owner?: string;
  /**
   * How long a claimed batch (or an alert in the outbox) is this dispatcher's before another may claim
   * it (default 5 min); renewed every half lease while it is on its way.
   */
  claimLeaseMs?: number;
}

/** What `accept` answers: the alert is kept; `delivered` settles once its channels are through. */
export interface AcceptedAlert {
  /** Settles (never rejects) when the channels are through with the alert; at once for a held one. */
  delivered: Promise<void>;
  /**
   * True when the alert is kept in a durable store until its channels are through (a crash of this
   * process does not lose it); false when only this process has it.
   */
  durable: boolean;
}

/** Outbox alerts one claim takes from dispatchers that died. */
const OUTBOX_CLAIM_LIMIT = 100;

/** Default lease of a claimed batch: longer than a webhook channel's attempts and backoffs. */
export const DEFAULT_HELD_CLAIM_LEASE_MS = 300_000;

/** Routes alerts to channels by tier. */
export class TierAwareDispatcher implements AlertDispatcherProtocol {
  private readonly channels: Partial<Record<AlertTier, readonly AlertChannel[]>>;
  private readonly businessHours: BusinessHours | undefined;
  private readonly clock: Clock;
  private readonly timers: Timers;
  private readonly logger: Logger;
  private readonly events: MonitoringEventBus | undefined;
  private readonly store: HeldAlertStore;
  private readonly owner: string;
  private readonly claimLeaseMs: number;
  private readonly maxHeld: number;
  private readonly maxDigest: number;
  private readonly digestIntervalMs: number;
  private readonly digestTimer: TimerHandle;
  private openingTimer: TimerHandle | undefined;
  /** Looks for outbox alerts whose sender died (durable store only). */
  private outboxTimers: { first: TimerHandle; every: TimerHandle } | undefined;
  private closed = false;
  /** The batch of each tier on its way (see `sendHeld`). */
  private readonly sending: Record<HeldTier, Promise<void>> = {
    [AlertTier.P1_BUSINESS_HOURS]: Promise.resolve(),
    [AlertTier.P2_DIGEST]: Promise.resolve(),
    [OUTBOX]: Promise.resolve(),
  };
  /** Releases and digests started by the timers, not yet through (see `settled`). */
  private readonly background = new Set<Promise<void>>();

  constructor(options: TierAwareDispatcherOptions) {
    this.channels = options.channels;
    this.businessHours = options.businessHours;
    this.clock = options.clock ?? systemClock;
    this.timers = options.timers ?? systemTimers;
    this.logger = options.logger ?? silentLogger();
    this.events = options.events;
    this.store = options.heldStore ?? new MemoryHeldAlertStore(this.clock);
    this.owner = options.owner ?? randomHeldOwner();
    this.claimLeaseMs = options.claimLeaseMs ?? DEFAULT_HELD_CLAIM_LEASE_MS;
    this.maxHeld = options.maxHeld ?? 1000;
    this.maxDigest = options.maxDigest ?? 1000;
    this.digestIntervalMs = (options.digestIntervalSeconds ?? 3600) * 1000;
    this.digestTimer = this.timers.setInterval(
      () => this.inBackground(this.digestTick()),
      this.digestIntervalMs,
    );
    // A durable store may hold alerts of an earlier run (a crash, a restart) or of another replica:
    // release them at the next opening (at once when business hours are open now).
    if (this.store.durable) this.scheduleOpening();
    // Alerts a dead dispatcher left in the outbox are claimable once its lease has run out: look now
    // (a restart after a long stop) and every half lease.
    if (this.store.durable) {
      const look = () => this.inBackground(this.resendOutbox());
      this.outboxTimers = {
        first: this.timers.setTimeout(look, 0),
        every: this.timers.setInterval(look, Math.max(1000, this.claimLeaseMs / 2)),
      };
    }
  }

  /** Number of P1 alerts held until business hours open (in the store: every replica's, when shared). */
  heldCount(): Promise<number> {
    return this.store.count(AlertTier.P1_BUSINESS_HOURS);
  }

  /** Number of P2 alerts waiting for the next digest (in the store: every replica's, when shared). */
  pendingDigestCount(): Promise<number> {
    return this.store.count(AlertTier.P2_DIGEST);
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

  /**
   * Routes one alert and resolves once it is kept: held in the store (P1 outside business hours, P2),
   * in the store's outbox (sent at once, durable store), or, sent at once with the memory store, at
   * once (only this process has it). `delivered` settles when its channels are through. The monitor's
   * SendAlert answers at `accept`, so an answered alert survives a crash when the store is durable.
   */
  async accept(alert: AlertRecord): Promise<AcceptedAlert> {
    emitAlertTriggered(
      { alert_name: alert.metric?.name ?? alert.title, severity: alert.severity },
      this.events,
    );
    const kept: AcceptedAlert = { delivered: Promise.resolve(), durable: this.store.durable };
    // After shutdown nothing here would flush a memory store, so every tier goes out at once. A
    // durable store keeps them for the next run or another replica (shutdown() says why).
    if (this.closed && !this.store.durable) return this.atOnce(alert, 'shutdown', false);
    switch (alert.tier) {
      case AlertTier.P0_PAGE:
        return this.atOnce(alert, 'immediate', false);
      case AlertTier.P2_DIGEST:
        await this.store.hold(AlertTier.P2_DIGEST, alert, this.maxDigest);
        return kept;
      default:
        if (!this.businessHours || this.businessHours.isOpen(this.clock.now()))
          return this.atOnce(alert, 'immediate', true);
        await this.store.hold(AlertTier.P1_BUSINESS_HOURS, alert, this.maxHeld);
        if (!this.closed) this.scheduleOpening();
        return kept;
    }
  }

  /**
   * Routes one alert; resolves once it is sent (P0, P1 within business hours) or kept in the held
   * store (P1 outside business hours, P2).
   */
  private async route(alert: AlertRecord): Promise<void> {
    const accepted = await this.accept(alert);
    await accepted.delivered;
  }

  /**
   * Sends one alert at once (after the held P1 alerts when `heldFirst`: a timer that has not fired
   * yet, or a batch whose sender died, go first, in order). With a durable store the alert is first
   * kept in the outbox, leased to this dispatcher, and deleted once its channels are through.
   */
  private async atOnce(
    alert: AlertRecord,
    reason: AlertBatchReason,
    heldFirst: boolean,
  ): Promise<AcceptedAlert> {
    const send = async () => {
      if (heldFirst)
        await this.releaseHeld('business_hours_opened').catch((err: unknown) =>
          this.logger.error({ err: errorText(err) }, 'held alerts release failed'),
        );
      await this.deliver(alert.tier, reason, [alert], 0);
    };
    if (!this.store.durable) return { delivered: send(), durable: false };
    let claim: HeldClaim;
    try {
      claim = await this.store.holdClaimed(OUTBOX, alert, this.owner, this.claimLeaseMs);
    } catch (err) {
      // The store is down: a page sent without its safety net beats a page not sent.
      this.logger.error(
        { err: errorText(err), alertId: alert.id },
        'alert outbox write failed; sending unkept',
      );
      return { delivered: send(), durable: false };
    }
    const delivered = this.sendClaimed(claim, send).catch((err: unknown) =>
      // The row stays (its lease runs out): another claim sends the alert again.
      this.logger.error({ err: errorText(err), alertId: alert.id }, 'alert outbox completion failed'),
    );
    return { delivered, durable: true };
  }

  /**
   * Outbox alerts whose sender died (their lease ran out): claimed, each sent on its own as it would
   * have been (the same record, so the notification channel's idempotency key is the same), then
   * deleted. One look at a time in this dispatcher.
   */
  private resendOutbox(): Promise<void> {
    const run = this.sending[OUTBOX].then(async () => {
      for (;;) {
        const claim = await this.store.claim(OUTBOX, this.owner, this.claimLeaseMs, OUTBOX_CLAIM_LIMIT);
        if (claim.alerts.length === 0) return;
        this.logger.warn(
          { count: claim.alerts.length },
          'sending alerts whose sender stopped before its channels were through',
        );
        await this.sendClaimed(claim, async () => {
          await Promise.all(claim.alerts.map((a) => this.deliver(a.tier, 'immediate', [a], 0)));
        });
        if (claim.alerts.length < OUTBOX_CLAIM_LIMIT) return;
      }
    });
    this.sending[OUTBOX] = run.catch((err: unknown) =>
      this.logger.error({ err: errorText(err) }, 'alert outbox look failed'),
    );
    return this.sending[OUTBOX];
  }

  /**
   * Runs `send` for a claim, renewing its lease meanwhile (a webhook's attempts, one POST per alert of
   * a large batch, can outlast it; another replica must not claim and send it as well), then deletes
   * the claimed records.
   */
  private async sendClaimed(claim: HeldClaim, send: () => Promise<void>): Promise<void> {
    const renewal = this.timers.setInterval(
      () =>
        void this.store
          .renew(claim, this.claimLeaseMs)
          .catch((err: unknown) =>
            this.logger.warn({ err: errorText(err), tier: claim.tier }, 'alert lease renewal failed'),
          ),
      Math.max(1000, this.claimLeaseMs / 2),
    );
    try {
      await send();
    } finally {
      this.timers.clearInterval(renewal);
    }
    await this.store.complete(claim);
  }

  /**
   * Schedules the release of held P1 alerts at the next opening (now when open or without hours;
   * with `afterWindow`, the opening after the current window). With a durable store the timer is
   * always armed, at every opening: the store may hold alerts another replica (since gone) held.
   */
  private scheduleOpening(afterWindow = false): void {
    if (this.openingTimer !== undefined) return;
    const now = this.clock.now();
    const hours = this.businessHours;
    const at = hours ? (afterWindow ? hours.openingAfter(now) : hours.nextOpening(now)) : now;
    this.openingTimer = this.timers.setTimeout(
      () => {
        this.openingTimer = undefined;
        this.inBackground(
          this.releaseHeld('business_hours_opened').catch((err: unknown) =>
            this.logger.error({ err: errorText(err) }, 'held alerts release failed'),
          ),
        );
        if (this.store.durable && !this.closed && hours) this.scheduleOpening(true);
      },
      Math.max(0, at - now),
    );
  }

  private inBackground(work: Promise<void>): void {
    this.background.add(work);
    void work.finally(() => this.background.delete(work));
  }

  /** Resolves once the releases and digests its timers started are through (tests, shutdown). */
  async settled(): Promise<void> {
    while (this.background.size > 0) await Promise.allSettled([...this.background]);
  }

  /** The digest timer: one digest per interval between the replicas sharing the store. */
  private async digestTick(): Promise<void> {
    try {
      // A little slack, so a replica whose timer fires a moment early still takes its turn.
      if (await this.store.takeFlushTurn(AlertTier.P2_DIGEST, this.digestIntervalMs * 0.9))
        await this.flushDigest('digest');
      // P1 alerts whose sender died after its claim are claimable again once the lease runs out;
      // within business hours nothing else would release them before the next P1 alert.
      if (this.store.durable && (!this.businessHours || this.businessHours.isOpen(this.clock.now())))
        await this.releaseHeld('business_hours_opened');
    } catch (err) {
      this.logger.error({ err: errorText(err) }, 'alert digest failed');
    }
  }

  /** Sends the held P1 alerts now, as one batch (one per `maxHeld` alerts). */
  async releaseHeld(reason: AlertBatchReason): Promise<void> {
    await this.sendHeld(AlertTier.P1_BUSINESS_HOURS, reason, this.maxHeld);
  }

  /** Sends the accumulated P2 alerts now, as one digest. Nothing is sent when there is none. */
  async flushDigest(reason: AlertBatchReason = 'digest'): Promise<void> {
    await this.sendHeld(AlertTier.P2_DIGEST, reason, this.maxDigest);
  }

  /**
   * Claims the tier's held alerts, sends them, then deletes them from the store. One batch of a tier
   * at a time in this dispatcher: a later release or digest waits for the one on its way, so it
   * never claims that batch again (and held alerts keep their order).
   */
  private sendHeld(tier: DeferredTier, reason: AlertBatchReason, limit: number): Promise<void> {
    const run = this.sending[tier].then(() => this.sendHeldNow(tier, reason, limit));
    this.sending[tier] = run.catch(() => undefined);
    return run;
  }

  private async sendHeldNow(tier: DeferredTier, reason: AlertBatchReason, limit: number): Promise<void> {
    for (;;) {
      const claim = await this.store.claim(tier, this.owner, this.claimLeaseMs, limit);
      if (claim.alerts.length === 0 && claim.dropped === 0) return;
      await this.sendClaimed(claim, () => this.deliver(tier, reason, claim.alerts, claim.dropped));
      // Fewer than a full batch: the tier was emptied (what others hold under lease is theirs).
      if (claim.alerts.length < limit) return;
    }
  }

  /**
   * Clean shutdown: stops the timers. With the memory store it sends what is held or accumulated
   * (reason `shutdown`), because an alert seen early is better than one lost with the process, and
   * alerts raised afterwards go out at once. With a durable store it sends nothing: the held alerts
   * are kept, and the next run (or another replica on the same database) sends them at opening or
   * with its digest; sending them here would page outside business hours, and send a replica pair's
   * digest early, whenever one replica of several stops. Safe to call more than once.
   */
  async shutdown(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.timers.clearInterval(this.digestTimer);
    if (this.openingTimer !== undefined) this.timers.clearTimeout(this.openingTimer);
    this.openingTimer = undefined;
    if (this.outboxTimers) {
      this.timers.clearTimeout(this.outboxTimers.first);
      this.timers.clearInterval(this.outboxTimers.every);
    }
    // A batch being sent finishes (and is deleted) before the process goes.
    await this.settled();
    if (this.store.durable) return;
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
              err: errorText(err),
            },
            'alert channel failed',
          );
        }
      }),
    );
  }
}
