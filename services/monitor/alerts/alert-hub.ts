/**
 * AlertHub: the one place every monitor alert goes through. SendAlert and SendMetricAlert, the SLO
 * area's SLOMonitor and the targets area (through the library's AlertDispatcherProtocol) all raise
 * here; the hub gives each alert its identity (a UUID, its kind, its source service, when it fired),
 * keeps the latest in a bounded ring for the status page, fans it out to WatchAlerts watchers and
 * in-process listeners, and hands it to the tier-aware dispatcher, which routes it to the configured
 * channels (P0 at once, P1 within business hours, P2 in the digest).
 *
 * Raising never waits for a channel: a webhook that hangs or fails holds its alert for attempts x
 * timeout, and a caller of SendAlert must not wait for that (its deadline would pass while the alert
 * was long kept and shown). The hub answers once the alert is kept (by the router: held, or in its
 * outbox with the database, or in memory only without one) and fanned out; the channels get it in the
 * background; failures are logged by the dispatcher.
 *
 * WatchAlerts is the one live-stream hub (shared/streams/live-hub.ts) over an in-memory event log of
 * this replica (the alerts themselves are in the lifecycle's store): every alert is appended with its
 * seq, the watch's cursor; a watch after a cursor replays the kept alerts, then goes live; a cursor
 * older than what is kept, or past the newest alert (from before a restart, which numbers the log
 * afresh), gets a `reset` frame.
 *
 * Every buffer is bounded: the kept alerts (`recentSize`), each watcher's buffer (`watchBufferSize`; a
 * watcher that falls that far behind is closed with ResourceExhaustedError), the number of watchers
 * (`maxWatchers`), of listeners (`maxListeners`) and of alerts on their way to the channels
 * (`maxPendingDispatches`; beyond it a raise is ResourceExhaustedError, so an alert is refused, never
 * accepted and dropped).
 */
import { newId } from '../../../shared/runtime/ids';
import { requireStorableText } from '../../../shared/text/cut';
import { checkText, longerThan } from '../../../shared/text/check';
import { InvalidArgumentError, ResourceExhaustedError, UnavailableError } from '../../../shared/errors';
import { type Logger, silentLogger } from '../../../shared/logging/logger';
import type { AlertRecord } from '../../../shared/monitoring/alerts/channels';
import {
  type AlertContext,
  type AlertDispatcherProtocol,
  type AlertSeverity,
  metricAlertLogLevel,
} from '../../../shared/monitoring/alerts/dispatcher';
import type { AcceptedAlert } from '../../../shared/monitoring/alerts/tier-dispatcher';
import { resolveTier } from '../../../shared/monitoring/alerts/tiers';
import { LiveHub, type LiveFrame } from '../../../shared/streams/live-hub';
import { epochFirstSeq, MemoryEventLog, type MemoryLogEvent } from '../../../shared/streams/memory-event-log';
import type { Alert, AlertKind } from './alert';
import { AlertLifecycle, type AlertLifecycleOptions, type ResolutionNotice } from './lifecycle';
import { InMemoryAlertStore } from './memory-store';
import { type Clock, systemClock } from '../../../shared/runtime/clock';

/** Bounds of what one alert may carry (checked before anything is kept or sent). */
export const ALERT_LIMITS = {
  titleChars: 256,
  messageChars: 4096,
  severityChars: 32,
  contextEntries: 32,
  contextKeyChars: 64,
  contextValueChars: 1024,
  sourceServiceChars: 128,
  /** Severities one WatchAlerts filter may list. */
  watchSeverities: 16,
} as const;

/** Default of AlertHubOptions.maxListeners. */
export const DEFAULT_MAX_LISTENERS = 64;

/** What routes an alert record onward (the library's TierAwareDispatcher). */
export interface AlertRouter {
  /** Routes a record; settles once its channels are through with it (or it is held for later). */
  dispatch(record: AlertRecord): Promise<void>;
  /**
   * Routes a record and resolves once it is kept (held for later, or in a durable outbox until its
   * channels are through), with `delivered` for the rest: `raise` answers at this point. A router
   * without it is taken to keep nothing (`dispatch` in the background, not durable).
   */
  accept?(record: AlertRecord): Promise<AcceptedAlert>;
  /** Sends what is held or accumulated; later alerts go out at once. */
  shutdown(): Promise<void>;
}

/** Options of AlertHub. */
export interface AlertHubOptions {
  router: AlertRouter;
  /** Alerts kept for `recent()`. */
  recentSize: number;
  /** Open watches; beyond it `watch` is ResourceExhaustedError. */
  maxWatchers: number;
  /** Alerts buffered per watcher; one more and the watcher is closed with ResourceExhaustedError. */
  watchBufferSize: number;
  /** In-process listeners (`subscribe`); default {@link DEFAULT_MAX_LISTENERS}. */
  maxListeners?: number;
  /** Alerts being routed at once; beyond it `raise` is ResourceExhaustedError. Default 1000. */
  maxPendingDispatches?: number;
  /** Source service of alerts that name none (the monitor's own name). */
  defaultSource: string;
  /** The clock whose wall time stamps alerts (tests inject one). */
  clock?: Clock;
  logger?: Logger;
  /**
   * The lifecycle's store and rules (dedup keys, silences, inhibition, grouping: lifecycle.ts);
   * default: an in-memory store, no rules, every alert notified on its own.
   */
  lifecycle?: Omit<AlertLifecycleOptions, 'deliver' | 'clock' | 'logger' | 'onStateChanged'>;
}

/** One alert to raise, already in the hub's terms. */
export interface RaiseInput {
  kind: AlertKind;
  title: string;
  message?: string;
  severity: string;
  /** Context values are kept as strings (numbers and booleans as written, the rest as JSON). */
  context?: AlertContext | null;
  sourceService?: string;
  /** Name of the alert rule; the title when unset. */
  alertName?: string;
  metric?: { name: string; currentValue: number; threshold: number };
  /** PagerDuty's dedup key: a trigger with the key of an open alert updates it. */
  dedupKey?: string;
}

/** Options of a watch. */
export interface AlertWatchOptions {
  /** Only alerts of these severities (any case); empty for all. */
  severities?: readonly string[];
  /** Resume after this cursor (a previous frame's); absent or empty: alerts raised from now on. */
  after?: string;
  /** Ends the watch (the iterator finishes) when aborted. */
  signal?: AbortSignal;
}

/**
 * One frame of an alert watch: an alert with its cursor, `live` (the watch's start, with the current
 * cursor) or `reset` (the resume cursor was older than the kept alerts).
 */
export type AlertFrame =
  { type: 'alert'; cursor: string; alert: Alert } | { type: 'live' | 'reset'; cursor: string };

/** The alert log has one channel. */
const ALERT_LOG = '';

/** What one watcher wants: the severities of its filter (lower case), or all. */
type SeverityFilter = ReadonlySet<string> | null;

function wants(filter: SeverityFilter, alert: Alert): boolean {
  return filter === null || filter.has(alert.severity.toLowerCase());
}

/** The kept alerts as the hub's event log: the watcher's severity filter applies to catch-up reads too. */
class AlertLog extends MemoryEventLog<Alert> {
  matches(filter: SeverityFilter, event: MemoryLogEvent<Alert>): boolean {
    return wants(filter, event.value);
  }

  override async readWatch(
    channel: string,
    filter: SeverityFilter,
    after: number,
    limit: number,
  ): Promise<MemoryLogEvent<Alert>[]> {
    const out: MemoryLogEvent<Alert>[] = [];
    let from = after;
    for (;;) {
      const page = await super.readWatch(channel, filter, from, limit);
      for (const event of page) if (wants(filter, event.value) && out.length < limit) out.push(event);
      if (page.length < limit || out.length >= limit) return out;
      from = page[page.length - 1]!.seq;
    }
  }
}

// The Alert of each record the hub routed: channels (webhook, notification) send the same alert,
// id included, that watchers and the status page saw. Weak, so routed records are not kept.
const ALERTS = new WeakMap<AlertRecord, Alert>();

/** The record id of a resolved notification: `<alert id>:resolved` (see `recordOf`). */
const RESOLVED_SUFFIX = ':resolved';

/**
 * The Alert of a record routed by an AlertHub; for a record read back from a store (a held alert, an
 * outbox alert resent after a crash) or raised elsewhere (straight on the library's dispatcher), one
 * built from its fields: a resolved notification gets back its alert's id and `state: resolved`, an
 * SLO's alert its kind and name.
 */
export function alertOf(record: AlertRecord): Alert {
  const kept = ALERTS.get(record);
  if (kept) return kept;
  const resolved = record.context.alert_state === 'resolved' && record.id?.endsWith(RESOLVED_SUFFIX);
  const slo = typeof record.context.slo === 'string' && record.context.slo !== '' ? record.context.slo : '';
  return {
    id: resolved ? record.id!.slice(0, -RESOLVED_SUFFIX.length) : (record.id ?? ''),
    ...(resolved ? { state: 'resolved' as const } : {}),
    alertName: slo || record.metric?.name || record.title,
    kind: slo ? 'slo' : record.kind === 'metric' ? 'metric' : 'generic',
    title: record.title,
    message: record.message,
    severity: record.severity,
    context: Object.fromEntries(
      Object.entries(record.context).flatMap(([k, v]) => {
        const value = contextValue(v);
        return value === undefined ? [] : [[k, value]];
      }),
    ),
    sourceService: record.sourceService ?? '',
    firedAt: record.raisedAt,
  };
}

/** Severity of a metric alert: `critical` above twice the threshold (more than 100% over), else `warning`. */
export function metricAlertSeverity(currentValue: number, threshold: number): 'critical' | 'warning' {
  return metricAlertLogLevel(currentValue, threshold) === 'error' ? 'critical' : 'warning';
}

/** An alert's text: free text (line breaks allowed), at most `max` code points, storable. */
function alertText(value: string, field: string, max: number, required: boolean): string {
  return checkText(value, field, { max, required: required ? 'non_blank' : undefined, controls: 'allow' });
}

function contextValue(value: unknown): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint')
    return String(value);
  if (value instanceof Date) return value.toISOString();
  try {
    return JSON.stringify(value);
  } catch {
    return String(value);
  }
}

/** The context as strings, checked against the bounds. */
function stringContext(context: AlertContext | null | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  const entries = Object.entries(context ?? {});
  if (entries.length > ALERT_LIMITS.contextEntries)
    throw new InvalidArgumentError(
      `context has ${entries.length} entries, more than ${ALERT_LIMITS.contextEntries}`,
      'context',
    );
  for (const [key, raw] of entries) {
    const value = contextValue(raw);
    if (value === undefined) continue;
    if (key === '' || longerThan(key, ALERT_LIMITS.contextKeyChars))
      throw new InvalidArgumentError(
        `context keys must have 1 to ${ALERT_LIMITS.contextKeyChars} characters`,
        'context',
      );
    if (longerThan(value, ALERT_LIMITS.contextValueChars))
      throw new InvalidArgumentError(
        `context value of ${JSON.stringify(key)} is longer than ${ALERT_LIMITS.contextValueChars} characters`,
        'context',
      );
    requireStorableText(key, 'context');
    requireStorableText(value, 'context');
    out[key] = value;
  }
  return out;
}

/** The monitor's alert hub (see the file comment). */
export class AlertHub implements AlertDispatcherProtocol {
  /** The kept alerts (`recentSize`): `recent()` and the watches' replay. */
  private readonly log: AlertLog;
  private readonly live: LiveHub<MemoryLogEvent<Alert>, SeverityFilter>;
  private readonly listeners = new Set<(alert: Alert) => void>();
  private readonly maxListeners: number;
  private readonly maxPendingDispatches: number;
  /** Routings under way (see the file comment). */
  private readonly pending = new Set<Promise<void>>();
  private readonly now: () => number;
  private readonly logger: Logger;
  private stopped = false;
  /** Dedup keys, states, timeline, silences, inhibition, grouping (lifecycle.ts). */
  readonly lifecycle: AlertLifecycle;

  constructor(private readonly options: AlertHubOptions) {
    this.maxListeners = options.maxListeners ?? DEFAULT_MAX_LISTENERS;
    this.maxPendingDispatches = options.maxPendingDispatches ?? 1000;
    const clock = options.clock ?? systemClock;
    this.now = () => clock.now();
    this.logger = (options.logger ?? silentLogger()).child({ component: 'alert-hub' });
    // Cursors outlive this replica's log (a client resumes after a restart or on another replica):
    // the log starts past every seq an earlier one handed out, so such a cursor gets a reset.
    this.log = new AlertLog(options.recentSize, { firstSeq: epochFirstSeq(clock.now()) });
    this.live = new LiveHub(this.log, {
      bufferSize: options.watchBufferSize,
      maxWatchers: options.maxWatchers,
      // One cap for all: watches are not told apart by caller.
      maxWatchersPerKey: options.maxWatchers,
      // A full buffer closes its watcher (it resumes by cursor); no stall clock.
      overflow: 'close',
      stallMs: 0,
      clock,
      logger: options.logger,
      component: 'alert-hub',
      cursor: { field: 'after_cursor', message: 'after_cursor is not a valid alert watch cursor' },
      messages: {
        tooManyWatches: `too many open alert watches (at most ${options.maxWatchers}); retry later`,
        tooManyForKey: `too many open alert watches (at most ${options.maxWatchers}); retry later`,
        stalled: `alert watcher fell ${options.watchBufferSize} alerts behind and was closed; reconnect and read faster`,
      },
    });
    this.live.start();
    this.lifecycle = new AlertLifecycle({
      store: new InMemoryAlertStore({ clock }),
      ...options.lifecycle,
      clock,
      logger: options.logger,
      // Settles when the notification is safe: kept until its channels are through (the database's
      // outbox or held alerts), else once they are through (memory: nothing would survive anyway).
      deliver: async (alert) => {
        const routed = await this.route(recordOf(alert));
        if (!routed.durable) await routed.delivered;
      },
      // An acknowledgement or a resolution is news on the stream: watchers and the page see the
      // alert again, in its new state (the page shows it anew on top, `recent` once).
      onStateChanged: (alert) => {
        this.log.append(ALERT_LOG, alert);
        this.tellListeners(alert);
      },
    });
  }

  /**
   * Raises one alert: checks it (InvalidArgumentError with the field), keeps it, tells the watchers
   * and listeners at once, and hands it to the channels of its tier in the background (`settled()`
   * waits for that). ResourceExhaustedError when `maxPendingDispatches` alerts are still on their way.
   */
  async raise(input: RaiseInput): Promise<Alert> {
    return (await this.trigger(input)).alert;
  }

  /**
   * `raise`, telling also whether the trigger opened a new alert (false: it updated the open alert of
   * its dedup key, whose id the alert carries).
   */
  async trigger(input: RaiseInput): Promise<{ alert: Alert; opened: boolean }> {
    const title = alertText(input.title, 'title', ALERT_LIMITS.titleChars, true);
    const message = alertText(input.message ?? '', 'message', ALERT_LIMITS.messageChars, false);
    const severity = alertText(input.severity, 'severity', ALERT_LIMITS.severityChars, true).trim();
    const source = alertText(
      input.sourceService ?? '',
      'source_service',
      ALERT_LIMITS.sourceServiceChars,
      false,
    );
    const context = stringContext(input.context);
    const dedupKey = AlertLifecycle.checkDedupKey(input.dedupKey);
    if (this.pending.size >= this.maxPendingDispatches)
      throw new ResourceExhaustedError(
        `${this.pending.size} alerts are still on their way to the channels; retry later`,
      );
    const firedAt = this.now();
    const alert: Alert = {
      id: newId(),
      alertName: input.alertName || title,
      kind: input.kind,
      title,
      message,
      severity,
      context,
      sourceService: source.trim() || this.options.defaultSource,
      firedAt,
      ...(dedupKey ? { dedupKey } : {}),
    };
    const triggered = await this.lifecycle.trigger(alert, dedupKey);
    // A trigger with the key of an open alert updates that alert: watchers see it under its id.
    const kept: Alert = { ...triggered.entry.alert, state: triggered.entry.state };
    this.log.append(ALERT_LOG, kept);
    this.tellListeners(kept);
    if (!triggered.notifyNow) {
      await this.live.flushed(ALERT_LOG);
      return { alert: kept, opened: triggered.opened };
    }
    const record: AlertRecord = {
      kind: input.kind === 'metric' ? 'metric' : 'alert',
      title,
      message,
      severity,
      // The library routes by `tier` and channels read the original values.
      context: input.context ?? {},
      tier: resolveTier(input.context?.tier),
      raisedAt: firedAt,
      ...(input.metric ? { metric: input.metric } : {}),
      id: alert.id,
      sourceService: alert.sourceService,
    };
    ALERTS.set(record, kept);
    // Answered once the router keeps it (held, or in the outbox until its channels are through, in
    // the database when the monitor has one), so an answered alert survives a crash; the channels
    // (their retries) are not waited for.
    await this.route(record);
    await this.lifecycle.firingRouted(triggered.entry);
    // Answered once the watchers have it (the in-memory log's fan-out takes no I/O).
    await this.live.flushed(ALERT_LOG);
    return { alert: kept, opened: triggered.opened };
  }

  /**
   * The source's own resolution (an SLO back within budget, a target up again): resolves the open
   * alert of `dedupKey`, if any, and sends its one resolved notification.
   */
  async resolve(
    dedupKey: string,
    by = 'source',
    notice?: Omit<ResolutionNotice, 'context'> & { context?: AlertContext | null },
  ): Promise<void> {
    await this.lifecycle.resolveByKey(
      dedupKey,
      by,
      notice && { ...notice, context: stringContext(notice.context) },
    );
  }

  /** Alerts handed to the channels and not yet through. */
  get pendingDispatches(): number {
    return this.pending.size;
  }

  /** Resolves once every alert raised so far has been handed on by the channels of its tier. */
  async settled(): Promise<void> {
    do {
      while (this.pending.size > 0) await Promise.allSettled([...this.pending]);
      await this.lifecycle.settled();
    } while (this.pending.size > 0);
  }

  /**
   * Hands a record to the router; resolves once the router keeps it, with `delivered` settling when
   * its channels are through (counted in `pendingDispatches` until then). Never rejects: a failure is
   * logged (the alert stays marked notified).
   */
  private route(record: AlertRecord): Promise<AcceptedAlert> {
    const router = this.options.router;
    const failed = (err: unknown) => this.logger.error({ err, alertId: record.id }, 'alert routing failed');
    let done!: () => void;
    const routing = new Promise<void>((resolve) => (done = resolve)).finally(() =>
      this.pending.delete(routing),
    );
    this.pending.add(routing);
    const accepted: Promise<AcceptedAlert> = router.accept
      ? router.accept(record)
      : Promise.resolve({ delivered: router.dispatch(record), durable: false });
    return accepted.then(
      (a) => {
        const delivered = a.delivered.catch(failed).finally(done);
        return { delivered, durable: a.durable };
      },
      (err: unknown) => {
        failed(err);
        done();
        return { delivered: Promise.resolve(), durable: false };
      },
    );
  }

  /** AlertDispatcherProtocol: an alert whose context names an `slo` is kind SLO, named after it. */
  async sendAlert(
    title: string,
    message: string,
    severity: AlertSeverity,
    context?: AlertContext | null,
  ): Promise<void> {
    const slo = typeof context?.slo === 'string' && context.slo !== '' ? context.slo : undefined;
    // An SLO's violations are one alert while it burns (key `slo:<name>`), resolved when it is back
    // within budget (SloArea calls `resolve`); other sources may name their key in `dedup_key`.
    const dedupKey =
      typeof context?.dedup_key === 'string' ? context.dedup_key : slo ? `slo:${slo}` : undefined;
    await this.raise({
      dedupKey,
      kind: slo ? 'slo' : 'generic',
      title,
      message,
      severity,
      context,
      alertName: slo ?? title,
      sourceService: typeof context?.source_service === 'string' ? context.source_service : undefined,
    });
  }

  /** AlertDispatcherProtocol: a metric alert, `critical` above twice the threshold, else `warning`. */
  async sendMetricAlert(
    metricName: string,
    currentValue: number,
    threshold: number,
    context?: AlertContext | null,
  ): Promise<void> {
    await this.raiseMetric({ metricName, currentValue, threshold, context });
  }

  /** A metric alert (SendMetricAlert): checks the name and the numbers, picks the severity. */
  async raiseMetric(input: {
    metricName: string;
    currentValue: number;
    threshold: number;
    context?: AlertContext | null;
    sourceService?: string;
  }): Promise<Alert> {
    const name = alertText(input.metricName, 'metric_name', ALERT_LIMITS.titleChars, true);
    if (!Number.isFinite(input.currentValue))
      throw new InvalidArgumentError('current_value must be a finite number', 'current_value');
    if (!Number.isFinite(input.threshold))
      throw new InvalidArgumentError('threshold must be a finite number', 'threshold');
    const slo =
      typeof input.context?.slo === 'string' && input.context.slo !== '' ? input.context.slo : undefined;
    return this.raise({
      kind: slo ? 'slo' : 'metric',
      title: `metric ${name} over threshold`,
      message: `metric ${name} at ${input.currentValue}, threshold ${input.threshold}`,
      severity: metricAlertSeverity(input.currentValue, input.threshold),
      context: input.context,
      alertName: slo ?? name,
      sourceService: input.sourceService,
      metric: { name, currentValue: input.currentValue, threshold: input.threshold },
    });
  }

  /**
   * The latest alerts, newest first, at most `limit` (and at most the ring's size). An alert that
   * came again (another trigger of its key, its acknowledgement, its resolution) is listed once, as
   * it was last: the ring holds each of those as an entry, so fewer than `limit` may come back.
   */
  recent(limit: number = this.options.recentSize): Alert[] {
    const n = Math.max(0, Math.floor(limit));
    if (n === 0) return [];
    const seen = new Set<string>();
    const latest: Alert[] = [];
    for (const { value } of this.log.recent(ALERT_LOG, n).reverse()) {
      if (seen.has(value.id)) continue;
      seen.add(value.id);
      latest.push(value);
    }
    return latest;
  }

  /**
   * Calls `listener` with every alert raised from now on (the status page); returns the function
   * that removes it. ResourceExhaustedError beyond `maxListeners`. A listener that throws is logged.
   */
  subscribe(listener: (alert: Alert) => void): () => void {
    if (this.listeners.size >= this.maxListeners)
      throw new ResourceExhaustedError(`too many alert listeners (at most ${this.maxListeners})`);
    // A wrapper, so the same function subscribed twice is two subscriptions, each removed once.
    const entry = (alert: Alert) => listener(alert);
    this.listeners.add(entry);
    return () => void this.listeners.delete(entry);
  }

  /** Open watches. */
  get watcherCount(): number {
    return this.live.watcherCount;
  }

  /** In-process listeners. */
  get listenerCount(): number {
    return this.listeners.size;
  }

  /**
   * Alerts raised from now on, filtered by severity (any case). The filter and the watcher cap are
   * checked now (InvalidArgumentError, ResourceExhaustedError); the place is taken when iteration
   * starts and given back when it ends, however it ends.
   */
  watch(options: AlertWatchOptions = {}): AsyncIterable<Alert> {
    return onlyAlerts(this.watchFrames(options));
  }

  /**
   * The watch as frames with cursors (WatchAlerts): after `options.after`, the kept alerts are
   * replayed first, then live ones; a cursor older than what is kept gets a `reset`. Checked as
   * `watch` is, the cursor too.
   */
  watchFrames(options: AlertWatchOptions = {}): AsyncIterable<AlertFrame> {
    const severities = options.severities ?? [];
    if (severities.length > ALERT_LIMITS.watchSeverities)
      throw new InvalidArgumentError(
        `severities lists ${severities.length} values, more than ${ALERT_LIMITS.watchSeverities}`,
        'severities',
      );
    for (const s of severities) alertText(s, 'severities', ALERT_LIMITS.severityChars, true);
    const filter = severities.length === 0 ? null : new Set(severities.map((s) => s.trim().toLowerCase()));
    if (this.stopped) throw new UnavailableError('the monitor is shutting down');
    const frames = this.live.watch({
      channel: ALERT_LOG,
      watch: filter,
      capKey: ALERT_LOG,
      after: options.after,
      signal: options.signal,
    });
    return toAlertFrames(frames);
  }

  private tellListeners(alert: Alert): void {
    for (const listener of this.listeners) {
      try {
        listener(alert);
      } catch (err) {
        this.logger.error({ err }, 'alert listener failed');
      }
    }
  }

  /**
   * Clean shutdown (lifecycle area stop): open watches end with UnavailableError (clients reconnect
   * elsewhere), listeners are dropped, and once the alerts on their way are through (the lifecycle's
   * shutdown deadline bounds the wait) the dispatcher sends what it holds (held P1 alerts and the
   * pending P2 digest) or, when they are in the database, keeps them for the next run or another
   * replica. Safe to call more than once.
   */
  async stop(): Promise<void> {
    this.stopped = true;
    this.live.stop(new UnavailableError('the monitor is shutting down'));
    this.listeners.clear();
    await this.settled();
    await this.options.router.shutdown();
  }
}

/** The record a notification made by the lifecycle (resolved, group, unmuted) is routed as. */
function recordOf(alert: Alert): AlertRecord {
  const record: AlertRecord = {
    kind: alert.kind === 'metric' ? 'metric' : 'alert',
    title: alert.title,
    message: alert.message,
    severity: alert.severity,
    context: alert.context,
    tier: resolveTier(alert.context.tier),
    raisedAt: alert.firedAt,
    // A resolved notification is its own message for channels that key messages by the record id
    // (the notification channel's idempotency key): else it would pass for a retry of the firing one.
    id: alert.state === 'resolved' ? `${alert.id}${RESOLVED_SUFFIX}` : alert.id,
    sourceService: alert.sourceService,
  };
  ALERTS.set(record, alert);
  return record;
}

async function* toAlertFrames(
  frames: AsyncIterable<LiveFrame<MemoryLogEvent<Alert>>>,
): AsyncGenerator<AlertFrame> {
  for await (const frame of frames) {
    if (frame.type === 'event') yield { type: 'alert', cursor: String(frame.seq), alert: frame.event.value };
    else yield { type: frame.type, cursor: String(frame.seq) };
  }
}

async function* onlyAlerts(frames: AsyncIterable<AlertFrame>): AsyncGenerator<Alert> {
  for await (const frame of frames) if (frame.type === 'alert') yield frame.alert;
}
