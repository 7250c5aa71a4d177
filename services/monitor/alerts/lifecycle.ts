/**
 * The alert lifecycle (issue 27): dedup keys, TRIGGERED -> ACKNOWLEDGED -> RESOLVED, the timeline,
 * silences, inhibition, grouping and the notification log. The AlertHub hands every raised alert to
 * `trigger()`; the RPCs (AlertService) call the rest. State lives in an {@link AlertStore}; what is
 * only this replica's is the grouping timers (a group's members are read back from the store when it
 * is flushed, so two replicas flushing one group compute the same notification and the notification
 * log lets one of them send it).
 *
 * Notifications go out through `deliver` (the hub's routing to the configured channels). Each one is
 * first claimed in the notification log (a unique row per group key, receiver and step, written
 * before the send); only the claimer sends. See README.md, "Lifecycle".
 */
import { checkText } from '../../../shared/text/check';
import { createHash } from 'node:crypto';
import {
  FailedPreconditionError,
  InvalidArgumentError,
  NotFoundError,
  ResourceExhaustedError,
} from '../../../shared/errors';
import { type Logger, silentLogger } from '../../../shared/logging/logger';
import { type Clock, inTimeRange, systemClock } from '../../../shared/runtime/clock';
import { isUuid, newId } from '../../../shared/runtime/ids';
import { cutText } from '../../../shared/text/cut';

/** Cut on code points (an alert's bounds count characters). */
const cutCodePoints = (s: string, max: number) => cutText(s, max, { unit: 'code_point', ellipsis: '…' });
import {
  ALERT_TIERS,
  BusinessHours,
  WEEKDAYS,
  type Weekday,
  resolveTier,
} from '../../../shared/monitoring/alerts/tiers';
import type { Alert } from './alert';
import {
  type CompiledMatcher,
  type LabelMatcher,
  compileMatchers,
  matchesAll,
  MATCHER_LIMITS,
} from './matchers';
import type {
  AlertCursor,
  AlertEntry,
  AlertFilter,
  AlertState,
  AlertStore,
  NotificationKey,
  Silence,
  TimelineEntry,
  WeeklyWindow,
} from './store';

/** The labels every alert has besides its context entries (they win over context keys of the same name). */
export const RESERVED_LABELS = ['alertname', 'severity', 'source_service'] as const;

/** An alert's labels: its context entries plus `alertname`, `severity` (lower case) and `source_service`. */
export function alertLabels(alert: Alert): Record<string, string> {
  return {
    ...alert.context,
    alertname: alert.alertName,
    severity: alert.severity.toLowerCase(),
    source_service: alert.sourceService,
  };
}

/** Bounds of the lifecycle's inputs. */
export const LIFECYCLE_LIMITS = {
  dedupKeyChars: 255,
  actorChars: 256,
  noteChars: 1024,
  commentChars: 1024,
  timelineEntries: 100,
  /** Alerts one group notification lists by name; the rest are counted. */
  groupListed: 50,
  /** Open alerts read when muting and grouping are evaluated. */
  openScan: 10_000,
  /** Candidate sources read per inhibition rule when an alert opens. */
  inhibitionCandidates: 100,
  /** Open targets a new inhibiting alert mutes at once, per rule. */
  inhibitedTargets: 1000,
  /** Active silences evaluated per trigger. */
  activeSilences: 1000,
} as const;

/** An inhibition rule: a firing source alert mutes target alerts sharing the `equal` labels. */
export interface InhibitRule {
  sourceMatchers: LabelMatcher[];
  targetMatchers: LabelMatcher[];
  equal: string[];
}

/** Grouping (Alertmanager's semantics). Absent: every alert is notified on its own, at once. */
export interface GroupingSettings {
  groupBy: string[];
  groupWaitMs: number;
  groupIntervalMs: number;
  repeatIntervalMs: number;
}

/** Silence reminders to their creator. */
export interface ReminderSettings {
  /** Before a silence ends, this long ahead (0: never). */
  expiryLeadMs: number;
  /** When a silence has hidden a firing alert for this long (0: never). */
  longHiddenMs: number;
}

/** A reminder to send to a silence's creator. */
export interface SilenceReminder {
  /** `<silence id>:<expiring|long_hidden>`: the same reminder is sent once (an idempotency key). */
  key: string;
  to: string;
  subject: string;
  text: string;
}

/** Options of {@link AlertLifecycle}. */
export interface AlertLifecycleOptions {
  store: AlertStore;
  /**
   * Hands one notification (an alert, a resolved alert, a group summary) to the channels; the
   * promise (when one is returned) settles once it is safe: kept by the router until the channels are
   * through (the database's outbox), or through them (their retries).
   */
  deliver: (alert: Alert) => void | Promise<void>;
  /**
   * The channels a notification of an alert reaches, as `name (type...)` (the area knows them from
   * the config: tiers and minimum severity); the timeline records them.
   */
  receivers?: (alert: Alert) => string[];
  /**
   * Told every acknowledgement and resolution (the alert, same id, with its new `state`), notified or
   * not: watchers and the page see the alert again in its new state. Acknowledgements reach no
   * channel (the on-call person acknowledged it: nobody else needs a message).
   */
  onStateChanged?: (alert: Alert) => void;
  /** Sends a reminder to a silence's creator (email when the creator is an address). */
  remind?: (reminder: SilenceReminder) => Promise<void>;
  clock?: Clock;
  /** This replica's name in the notification log. */
  owner?: string;
  inhibitRules?: readonly InhibitRule[];
  grouping?: GroupingSettings;
  reminders?: ReminderSettings;
  /** How long a claim in the notification log is held before another replica may retry it. */
  claimLeaseMs?: number;
  /** Resolved alerts, ended silences and notification-log rows older than this are purged (hourly). */
  retentionMs?: number;
  maxActiveSilences?: number;
  logger?: Logger;
}

/** The log's key of one alert's firing or resolved notification. */
function alertKey(entry: AlertEntry, step: 'firing' | 'resolved'): NotificationKey {
  return { groupKey: `alert:${entry.alert.id}`, receiver: CHANNELS_RECEIVER, step };
}

/** What `trigger` decided. */
export interface TriggerResult {
  entry: AlertEntry;
  opened: boolean;
  /**
   * True when the caller routes the alert now (claimed in the notification log), then calls
   * `firingRouted` once the router keeps it.
   */
  notifyNow: boolean;
}

interface CompiledRule {
  /** The value of the rule's `alertname=` source matcher, when it has one (an index for the store). */
  sourceName?: string;
  source: CompiledMatcher[];
  target: CompiledMatcher[];
  equal: string[];
}

interface Group {
  labels: Record<string, string>;
  nextFlushAt: number;
  /** The firing alerts of the last notification: a new one among the members makes the next. */
  lastIds: Set<string>;
  lastSentAt: number;
}

/** The receiver of notifications in the log: the configured channels, behind the hub's router. */
export const CHANNELS_RECEIVER = 'channels';

/** How a source words its own resolution (on the resolved alert only). */
export interface ResolutionNotice {
  title?: string;
  message?: string;
  severity?: string;
  context?: Record<string, string>;
}

/** A new silence. */
export interface SilenceInput {
  matchers: LabelMatcher[];
  startsAt: number;
  endsAt: number;
  createdBy: string;
  comment: string;
  recurrence?: WeeklyWindow;
}

/** A silence's or rule's text, trimmed: free text, at most `max` code points, storable. */
function text(value: string, field: string, max: number, required: boolean): string {
  return checkText(value.trim(), field, {
    max,
    required: required ? 'non_empty' : undefined,
    controls: 'allow',
  });
}

const hash = (s: string) => createHash('sha256').update(s).digest('hex').slice(0, 32);

/** True when the silence holds at `now` (its range, and its weekly window when recurring). */
export function silenceActive(s: Silence, now: number, window?: BusinessHours): boolean {
  if (s.expiredAt > 0 || now < s.startsAt || now >= s.endsAt) return false;
  return window ? window.isOpen(now) : true;
}

function weeklyWindow(w: WeeklyWindow): BusinessHours {
  if (w.days.length > WEEKDAYS.length)
    throw new InvalidArgumentError(`recurrence.days lists more than ${WEEKDAYS.length} days`, 'recurrence');
  for (const d of w.days)
    if (!WEEKDAYS.includes(d as Weekday))
      throw new InvalidArgumentError(`recurrence.days: unknown day ${JSON.stringify(d)}`, 'recurrence');
  try {
    return new BusinessHours({
      time_zone: w.timeZone,
      days: w.days as Weekday[],
      open: w.start,
      close: w.end,
    });
  } catch (err) {
    throw new InvalidArgumentError(`recurrence: ${(err as Error).message}`, 'recurrence');
  }
}

/** See the file comment. */
export class AlertLifecycle {
  readonly store: AlertStore;
  private readonly clock: Clock;
  private readonly owner: string;
  private readonly rules: CompiledRule[];
  private readonly grouping?: GroupingSettings;
  private readonly groups = new Map<string, Group>();
  private readonly windows = new Map<string, BusinessHours>();
  private readonly compiled = new Map<string, CompiledMatcher[]>();
  private readonly logger: Logger;
  private readonly claimLeaseMs: number;
  private lastPurge = 0;

  constructor(private readonly options: AlertLifecycleOptions) {
    this.store = options.store;
    this.clock = options.clock ?? systemClock;
    this.owner = options.owner ?? newId();
    this.rules = (options.inhibitRules ?? []).map((r, i) => ({
      sourceName: r.sourceMatchers.find((m) => m.name === 'alertname' && m.op === '=')?.value,
      source: compileMatchers(r.sourceMatchers, `inhibit_rules[${i}].source_matchers`),
      target: compileMatchers(r.targetMatchers, `inhibit_rules[${i}].target_matchers`),
      equal: [...r.equal],
    }));
    this.grouping = options.grouping;
    this.claimLeaseMs = options.claimLeaseMs ?? 60_000;
    this.logger = (options.logger ?? silentLogger()).child({ component: 'alert-lifecycle' });
  }

  private now(): number {
    return this.clock.now();
  }

  /** Checks a dedup key ('' when none). */
  static checkDedupKey(key: string | undefined): string {
    return text(key ?? '', 'dedup_key', LIFECYCLE_LIMITS.dedupKeyChars, false);
  }

  /**
   * A raised alert: opened, or folded into the open alert of its key (count, last seen, message).
   * Muted by a silence or an inhibiting alert (recorded in its timeline), else notified: at once when
   * there is no grouping (`notifyNow`: the caller routes it), or in its group's next notification.
   */
  async trigger(alert: Alert, dedupKey: string): Promise<TriggerResult> {
    const key = dedupKey === '' ? alert.id : dedupKey;
    const labels = alertLabels(alert);
    const { entry, opened } = await this.store.trigger(alert, key, labels);
    const id = entry.alert.id;
    const at = alert.firedAt;
    if (!opened) {
      await this.store.addTimeline(id, {
        at,
        kind: 'updated',
        actor: '',
        detail: cutCodePoints(`#${entry.count}: ${alert.message}`, 1024),
      });
      // An update is never a new page: repeats are the group's (repeat_interval).
      return { entry, opened, notifyNow: false };
    }
    await this.store.addTimeline(id, {
      at,
      kind: 'triggered',
      actor: alert.sourceService,
      detail: alert.title,
    });
    const muted = await this.applyMute(entry);
    await this.inhibitTargetsOf(entry);
    if (muted) return { entry, opened, notifyNow: false };
    if (this.grouping) {
      this.joinGroup(entry);
      return { entry, opened, notifyNow: false };
    }
    const notifyNow = await this.claimAlert(entry, 'firing');
    return { entry, opened, notifyNow };
  }

  /**
   * Claims the firing (or resolved) notification of one alert in the log (leased to this replica for
   * `claimLeaseMs`); the caller routes it, then `confirmNotified` marks it sent.
   */
  private claimAlert(entry: AlertEntry, step: 'firing' | 'resolved'): Promise<boolean> {
    return this.store.claimNotification(alertKey(entry, step), this.owner, this.claimLeaseMs);
  }

  /**
   * The firing notification of a triggered alert (`notifyNow`) is kept by the router: marked sent.
   * Until then the alert is not notified and its log row is `sending` under a lease, so a monitor
   * killed between the alert's record and the router's keeping it leaves it to the tick of another
   * replica (or of itself restarted), which notifies it once that lease has run out.
   */
  firingRouted(entry: AlertEntry): Promise<void> {
    return this.confirmNotified(entry, 'firing');
  }

  /** Routes a claimed notification in the background and marks it sent once the router keeps it. */
  private sendClaimed(entry: AlertEntry, step: 'firing' | 'resolved', alert: Alert): void {
    this.track(Promise.resolve(this.options.deliver(alert)).then(() => this.confirmNotified(entry, step)));
  }

  /**
   * Marks a claimed notification sent, once the router keeps it (with the database, held or in its
   * outbox until the channels are through; its retries are its own), and records it in the timeline.
   */
  private async confirmNotified(entry: AlertEntry, step: 'firing' | 'resolved'): Promise<void> {
    await this.store.completeNotification(alertKey(entry, step), this.owner);
    if (step === 'firing') await this.store.markNotified(entry.alert.id);
    await this.store.addTimeline(entry.alert.id, {
      at: this.now(),
      kind: 'notified',
      actor: this.receiversOf(entry.alert),
      detail: `${step}, tier ${resolveTier(entry.alert.context.tier)}`,
    });
  }

  /**
   * Recomputes what mutes an open alert and records a change; true when it is muted now. With
   * `inhibition` `keep`, only silences are evaluated and a current inhibition stays (the periodic
   * pass over unmuted alerts: inhibition of those is applied when their source opens).
   */
  private async applyMute(
    entry: AlertEntry,
    silences?: Silence[],
    inhibition: 'check' | 'keep' = 'check',
  ): Promise<boolean> {
    const now = this.now();
    const silence = (silences ?? (await this.activeSilences(now))).find((s) =>
      this.silenceMatches(s, entry, now),
    );
    const silencedBy = silence?.id ?? '';
    const inhibitedBy = silencedBy
      ? ''
      : inhibition === 'check'
        ? await this.inhibitor(entry)
        : entry.inhibitedBy;
    if (silencedBy !== entry.silencedBy || inhibitedBy !== entry.inhibitedBy) {
      await this.store.setMute(entry.alert.id, { silencedBy, inhibitedBy });
      const kind = silencedBy ? 'silenced' : inhibitedBy ? 'inhibited' : 'unmuted';
      await this.store.addTimeline(entry.alert.id, {
        at: now,
        kind,
        actor: silencedBy || inhibitedBy,
        detail: silencedBy ? `by silence ${silencedBy}` : inhibitedBy ? `by alert ${inhibitedBy}` : '',
      });
      entry.silencedBy = silencedBy;
      entry.inhibitedBy = inhibitedBy;
    }
    return silencedBy !== '' || inhibitedBy !== '';
  }

  private async activeSilences(now: number): Promise<Silence[]> {
    return this.store.activeSilences(now, this.options.maxActiveSilences ?? LIFECYCLE_LIMITS.activeSilences);
  }

  private silenceMatches(s: Silence, entry: AlertEntry, now: number): boolean {
    let window: BusinessHours | undefined;
    if (s.recurrence) {
      window = this.windows.get(s.id);
      if (!window) {
        window = weeklyWindow(s.recurrence);
        this.windows.set(s.id, window);
      }
    }
    if (!silenceActive(s, now, window)) return false;
    let matchers = this.compiled.get(s.id);
    if (!matchers) {
      try {
        matchers = compileMatchers(s.matchers, 'matchers');
      } catch (err) {
        // A silence kept before a stricter regex rule (matchers.ts) could stall every trigger if run,
        // or fail it if refused here: it mutes nothing (alerts page, as without it), said once.
        if (!(err instanceof InvalidArgumentError)) throw err;
        this.logger.warn(
          { silenceId: s.id, reason: err.message },
          'a kept silence has a pattern the monitor no longer runs: it mutes nothing',
        );
        matchers = [{ name: '', op: '=', value: '', test: () => false }];
      }
      this.compiled.set(s.id, matchers);
    }
    return matchesAll(matchers, entry.labels);
  }

  private async inhibitor(entry: AlertEntry): Promise<string> {
    const rules = this.rules.filter((r) => matchesAll(r.target, entry.labels));
    for (const r of rules) {
      const equal = Object.fromEntries(r.equal.map((l) => [l, entry.labels[l] ?? '']));
      // The store looks the sources up by name (a rule's `alertname=` source matcher) and the equal
      // labels, so a trigger never reads every open alert.
      const candidates = await this.store.openMatching(
        r.sourceName,
        equal,
        LIFECYCLE_LIMITS.inhibitionCandidates,
      );
      for (const source of candidates) {
        if (source.alert.id === entry.alert.id || source.state === 'resolved') continue;
        if (
          matchesAll(r.source, source.labels) &&
          r.equal.every((l) => (source.labels[l] ?? '') === (entry.labels[l] ?? ''))
        )
          return source.alert.id;
      }
    }
    return '';
  }

  /**
   * A new alert that is the source of a rule mutes the open targets sharing its `equal` labels
   * (recorded in their timelines); they are notified again when it resolves (tick).
   */
  private async inhibitTargetsOf(source: AlertEntry): Promise<void> {
    const rules = this.rules.filter((r) => matchesAll(r.source, source.labels));
    if (rules.length === 0) return;
    const silences = await this.activeSilences(this.now());
    for (const r of rules) {
      const equal = Object.fromEntries(r.equal.map((l) => [l, source.labels[l] ?? '']));
      const targets = await this.store.openMatching(undefined, equal, LIFECYCLE_LIMITS.inhibitedTargets);
      for (const t of targets)
        if (
          t.alert.id !== source.alert.id &&
          !t.silencedBy &&
          !t.inhibitedBy &&
          matchesAll(r.target, t.labels)
        )
          await this.applyMute(t, silences, 'check');
    }
  }

  private groupKey(labels: Record<string, string>): { key: string; labels: Record<string, string> } {
    const by = this.grouping!.groupBy;
    const picked = Object.fromEntries(by.map((l) => [l, labels[l] ?? '']));
    return { key: JSON.stringify(by.map((l) => [l, labels[l] ?? ''])), labels: picked };
  }

  private joinGroup(entry: AlertEntry): void {
    const { key, labels } = this.groupKey(entry.labels);
    if (!this.groups.has(key))
      this.groups.set(key, {
        labels,
        nextFlushAt: this.now() + this.grouping!.groupWaitMs,
        lastIds: new Set(),
        lastSentAt: 0,
      });
  }

  /**
   * Groups are held in memory, but their members are in the store: an open firing alert whose group
   * this monitor does not hold (triggered on another replica, or before a restart) makes this monitor
   * hold it too, due `group_wait` from now, with its already notified members counted as sent (so a
   * restart or a second replica repeats nothing before `repeat_interval`). A replica that was killed
   * before its group was due thus leaves it to the others; the notification log lets one of them send.
   */
  private adoptGroups(open: AlertEntry[], now: number): void {
    const adopted = new Set<string>();
    for (const e of open) {
      if (e.state !== 'triggered' || e.silencedBy || e.inhibitedBy) continue;
      const { key, labels } = this.groupKey(e.labels);
      let group = this.groups.get(key);
      if (!group) {
        group = {
          labels,
          nextFlushAt: now + this.grouping!.groupWaitMs,
          lastIds: new Set(),
          lastSentAt: now,
        };
        this.groups.set(key, group);
        adopted.add(key);
      }
      if (e.notified && adopted.has(key)) group.lastIds.add(e.alert.id);
    }
  }

  /** The open, unmuted, unacknowledged alerts of a group, newest first. */
  private async members(key: string, open: AlertEntry[]): Promise<AlertEntry[]> {
    return open.filter(
      (e) =>
        e.state === 'triggered' && !e.silencedBy && !e.inhibitedBy && this.groupKey(e.labels).key === key,
    );
  }

  /**
   * Runs the time rules (the monitor calls it every second; tests with a fake clock): silences that
   * ended or began and inhibiting alerts that resolved (muted alerts still firing are notified
   * then), group notifications due (group_wait, group_interval, repeat_interval), and reminders.
   */
  async tick(): Promise<void> {
    const now = this.now();
    const silences = await this.activeSilences(now);
    let open = await this.store.open(LIFECYCLE_LIMITS.openScan);
    // Mute changes, in both directions.
    for (const entry of open) {
      if (entry.state === 'resolved') continue;
      const was = entry.silencedBy !== '' || entry.inhibitedBy !== '';
      const muted = await this.applyMute(entry, silences, was ? 'check' : 'keep');
      if (was && !muted && entry.state === 'triggered') {
        if (this.grouping) this.joinGroup(entry);
        else if (await this.claimAlert(entry, 'firing')) this.sendClaimed(entry, 'firing', entry.alert);
      } else if (
        !was &&
        !muted &&
        !this.grouping &&
        entry.state === 'triggered' &&
        !entry.notified &&
        now - entry.alert.firedAt >= this.claimLeaseMs &&
        (await this.claimAlert(entry, 'firing'))
      ) {
        // Raised, never muted, yet not notified after a whole lease: a monitor stopped between the
        // alert's record and the router keeping it (SendAlert had not answered; a retry with the same
        // dedup key only updates the open alert). Its claim ran out: notify it now.
        this.logger.warn({ alertId: entry.alert.id }, 'alert raised but never notified: notifying it now');
        this.sendClaimed(entry, 'firing', entry.alert);
      }
    }
    if (this.grouping) {
      open = await this.store.open(LIFECYCLE_LIMITS.openScan);
      this.adoptGroups(open, now);
      for (const [key, group] of this.groups) {
        if (group.nextFlushAt > now) continue;
        await this.flushGroup(key, group, open, now);
      }
    }
    await this.remind(now, silences, open);
    await this.purgeOld(now);
  }

  /** Retention, at most hourly (every replica may run it: deleting twice is harmless). */
  private async purgeOld(now: number): Promise<void> {
    const retention = this.options.retentionMs;
    if (!retention || now - this.lastPurge < 3_600_000) return;
    this.lastPurge = now;
    const purged = await this.store.purge(now - retention);
    if (purged > 0)
      this.logger.info({ purged }, 'old resolved alerts, ended silences and notification-log rows purged');
  }

  private async flushGroup(key: string, group: Group, open: AlertEntry[], now: number): Promise<void> {
    const g = this.grouping!;
    group.nextFlushAt = now + g.groupIntervalMs;
    const members = await this.members(key, open);
    if (members.length === 0) {
      this.groups.delete(key);
      return;
    }
    const ids = members.map((m) => m.alert.id).sort();
    const contentHash = hash(ids.join(','));
    // Changed: an alert not in the last notification (one acknowledged, silenced or resolved since
    // leaves without a new notification).
    const changed = ids.some((id) => !group.lastIds.has(id));
    // Repeat periods are counted from the group's oldest firing alert (in the store, so every replica
    // counts the same periods), not from the epoch: two replicas whose flushes of one group fall a
    // tick or a group_wait apart land in the same period (with the epoch's periods they could fall
    // either side of a boundary and both send). Unchanged, the group repeats once per new period.
    const anchor = Math.min(...members.map((m) => m.alert.firedAt));
    const repeat = Math.max(1, g.repeatIntervalMs);
    // Periods start at the oldest alert's group_wait, when the first notification is due, so the
    // first repeat comes a repeat_interval after it.
    const start = anchor + g.groupWaitMs;
    const period = Math.floor((now - start) / repeat);
    if (!changed && period <= Math.floor((group.lastSentAt - start) / repeat)) return;
    // The step: the firing set and the repeat period; two replicas flushing the same group
    // compute the same step, and the notification log lets one of them send.
    const step = `${contentHash}@${period}`;
    const nkey: NotificationKey = { groupKey: key, receiver: CHANNELS_RECEIVER, step };
    if (!(await this.store.claimNotification(nkey, this.owner, this.claimLeaseMs))) {
      // Another monitor has it. Sent: counted as sent here too. Still sending (its lease runs): tried
      // again at the next flush, so a monitor that died between its row and the send leaves the
      // group to this one once the lease has run out.
      if (await this.store.notificationSent(nkey)) {
        group.lastIds = new Set(ids);
        group.lastSentAt = now;
      }
      return;
    }
    group.lastIds = new Set(ids);
    group.lastSentAt = now;
    const summary = this.groupAlert(group.labels, members, now);
    let delivered: Promise<void>;
    try {
      delivered = Promise.resolve(this.options.deliver(summary));
    } catch (err) {
      await this.store.releaseNotification(nkey, this.owner);
      throw err;
    }
    // The row is marked sent (and the members notified) once the summary is safe, in the background:
    // kept in the router's outbox until the channels are through (database), or through them
    // (memory). A monitor killed before leaves the row `sending`, and another monitor (or this one
    // restarted) takes it over when its lease has run out; killed after, the outbox sends it.
    this.track(
      delivered.then(async () => {
        await this.store.completeNotification(nkey, this.owner);
        for (const m of members) {
          if (!m.notified) await this.store.markNotified(m.alert.id);
          await this.store.addTimeline(m.alert.id, {
            at: now,
            kind: 'notified',
            actor: this.receiversOf(summary),
            detail: `group ${cutCodePoints(key, 200)}`,
          });
        }
      }),
    );
  }

  private readonly pending = new Set<Promise<void>>();

  /** Keeps a background step of a notification until it settles (a failure is logged). */
  private track(step: Promise<void>): void {
    const p: Promise<void> = step
      .catch((err: unknown) => this.logger.error({ err }, 'recording a sent notification failed'))
      .finally(() => this.pending.delete(p));
    this.pending.add(p);
  }

  /** Resolves once the background steps of the notifications sent so far have settled. */
  async settled(): Promise<void> {
    while (this.pending.size > 0) await Promise.allSettled([...this.pending]);
  }

  /** One notification listing a group's alerts (the first {@link LIFECYCLE_LIMITS.groupListed} by name). */
  private groupAlert(labels: Record<string, string>, members: AlertEntry[], now: number): Alert {
    const listed = members.slice(0, LIFECYCLE_LIMITS.groupListed);
    const rest = members.length - listed.length;
    const lines = listed.map(
      (m) => `- [${m.alert.severity}] ${cutCodePoints(m.alert.title, 120)} (${m.alert.id})`,
    );
    if (rest > 0) lines.push(`... and ${rest} more`);
    const worst = members.some((m) => m.labels.severity === 'critical')
      ? 'critical'
      : members[0]!.alert.severity;
    const name =
      Object.entries(labels)
        .map(([k, v]) => `${k}=${v}`)
        .join(', ') || 'all';
    return {
      id: newId(),
      alertName: cutCodePoints(name, 256),
      kind: 'generic',
      title: cutCodePoints(`[FIRING:${members.length}] ${name}`, 256),
      message: cutCodePoints(lines.join('\n'), 4096),
      severity: worst,
      // The most urgent tier of its members: without one the summary would be P1 (held outside
      // business hours) whatever its alerts said.
      context: {
        ...labels,
        alert_count: String(members.length),
        alert_state: 'firing',
        tier: ALERT_TIERS.find((t) => members.some((m) => resolveTier(m.alert.context.tier) === t))!,
      },
      sourceService: members[0]!.alert.sourceService,
      firedAt: now,
      state: 'triggered',
    };
  }

  private async remind(now: number, silences: Silence[], open: AlertEntry[]): Promise<void> {
    const r = this.options.reminders;
    const send = this.options.remind;
    if (!r || !send) return;
    for (const s of silences) {
      if (
        r.expiryLeadMs > 0 &&
        !s.reminded.includes('expiring') &&
        s.endsAt - now <= r.expiryLeadMs &&
        now >= s.startsAt
      ) {
        if (await this.store.markReminded(s.id, 'expiring'))
          await this.sendReminder(send, {
            key: `${s.id}:expiring`,
            to: s.createdBy,
            subject: `Silence ${s.id} ends at ${new Date(s.endsAt).toISOString()}`,
            text: `Your silence (${s.comment}) ends at ${new Date(s.endsAt).toISOString()}. Extend it if the work is not done.`,
          });
      }
      if (r.longHiddenMs > 0 && !s.reminded.includes('long_hidden')) {
        const hidden = open.filter(
          (e) => e.silencedBy === s.id && e.state !== 'resolved' && now - e.alert.firedAt >= r.longHiddenMs,
        );
        if (hidden.length > 0 && (await this.store.markReminded(s.id, 'long_hidden')))
          await this.sendReminder(send, {
            key: `${s.id}:long_hidden`,
            to: s.createdBy,
            subject: `Silence ${s.id} has hidden ${hidden.length} firing alert(s) for long`,
            text: `Your silence (${s.comment}) hides alerts that are still firing:\n${hidden
              .slice(0, 20)
              .map((e) => `- ${cutCodePoints(e.alert.title, 120)}`)
              .join('\n')}`,
          });
      }
    }
  }

  private async sendReminder(
    send: (r: SilenceReminder) => Promise<void>,
    reminder: SilenceReminder,
  ): Promise<void> {
    try {
      await send(reminder);
    } catch (err) {
      this.logger.warn({ err }, 'silence reminder failed');
    }
  }

  // --- RPC operations ---

  private async mustGet(id: string): Promise<AlertEntry> {
    if (!isUuid(id)) throw new InvalidArgumentError('alert_id must be a UUID', 'alert_id');
    const entry = await this.store.get(id.toLowerCase());
    if (!entry) throw new NotFoundError(`alert ${id} not found`);
    return entry;
  }

  /** An alert and its timeline (oldest first). */
  async get(id: string): Promise<{ entry: AlertEntry; timeline: TimelineEntry[] }> {
    const entry = await this.mustGet(id);
    return { entry, timeline: await this.store.timeline(entry.alert.id, LIFECYCLE_LIMITS.timelineEntries) };
  }

  /** Acknowledges a triggered alert: no further notifications or repeats. */
  async acknowledge(id: string, by: string, note = ''): Promise<AlertEntry> {
    const who = text(by, 'acknowledged_by', LIFECYCLE_LIMITS.actorChars, true);
    const n = text(note, 'note', LIFECYCLE_LIMITS.noteChars, false);
    const entry = await this.mustGet(id);
    const now = this.now();
    const acked = await this.store.acknowledge(entry.alert.id, who, now);
    if (!acked) throw new FailedPreconditionError(`alert ${id} is ${entry.state}, not triggered`);
    await this.store.addTimeline(entry.alert.id, { at: now, kind: 'acknowledged', actor: who, detail: n });
    this.options.onStateChanged?.({ ...acked.alert, state: 'acknowledged' });
    return acked;
  }

  /** Resolves an open alert and sends one resolved notification (when its firing one went out). */
  async resolve(id: string, by: string): Promise<AlertEntry> {
    const who = text(by, 'resolved_by', LIFECYCLE_LIMITS.actorChars, true);
    const entry = await this.mustGet(id);
    const resolved = await this.close(entry, who);
    if (!resolved) throw new FailedPreconditionError(`alert ${id} is resolved already`);
    return resolved;
  }

  /** The source's own resolution: resolves the open alert of `dedupKey`, if any. */
  async resolveByKey(
    dedupKey: string,
    by: string,
    notice?: ResolutionNotice,
  ): Promise<AlertEntry | undefined> {
    const entry = await this.store.openByKey(dedupKey);
    return entry ? this.close(entry, by, notice) : undefined;
  }

  /**
   * Resolves; the resolution (the alert, same id, `state: resolved`) is announced to `onStateChanged`
   * (watchers, the status page) and, when the firing notification went out, sent to the channels
   * once. `notice` (the source's own words, e.g. a target's "recovered" title and `state: recovered`)
   * goes on that resolved alert only; what is stored stays the firing alert.
   */
  private async close(
    entry: AlertEntry,
    who: string,
    notice: ResolutionNotice = {},
  ): Promise<AlertEntry | undefined> {
    const now = this.now();
    const resolved = await this.store.resolve(entry.alert.id, who, now);
    if (!resolved) return undefined;
    await this.store.addTimeline(entry.alert.id, { at: now, kind: 'resolved', actor: who, detail: '' });
    const alert: Alert = {
      ...resolved.alert,
      ...(notice.title ? { title: notice.title } : {}),
      ...(notice.message ? { message: notice.message } : {}),
      ...(notice.severity ? { severity: notice.severity } : {}),
      state: 'resolved',
      firedAt: now,
      context: { ...resolved.alert.context, ...notice.context, alert_state: 'resolved' },
    };
    this.options.onStateChanged?.(alert);
    if (resolved.notified && (await this.claimAlert(resolved, 'resolved')))
      this.sendClaimed(resolved, 'resolved', alert);
    return resolved;
  }

  /** A page of alerts, newest first. */
  async list(filter: AlertFilter, after: AlertCursor | undefined, limit: number): Promise<AlertEntry[]> {
    compileMatchers(filter.matchers ?? [], 'matchers');
    return this.store.list(
      { ...filter, severities: filter.severities?.map((s) => s.trim().toLowerCase()) },
      after,
      limit,
    );
  }

  // --- silences ---

  /** Creates a silence; open alerts it matches are silenced (recorded in their timelines) at once. */
  async createSilence(input: SilenceInput): Promise<Silence> {
    const matchers = compileMatchers(input.matchers, 'matchers');
    if (matchers.length === 0)
      throw new InvalidArgumentError('a silence needs at least one matcher', 'matchers');
    // Alertmanager's rule: a silence whose every matcher matches the empty string (`x=""`,
    // `alertname=~".*"`) matches an alert without those labels too, so it mutes every alert; an
    // operator's slip, not a silence. Muting everything takes naming what (`severity=~".+"`).
    if (matchers.every((m) => m.test({})))
      throw new InvalidArgumentError(
        'at least one matcher must not match the empty string (this silence would mute every alert)',
        'matchers',
      );
    const createdBy = text(input.createdBy, 'created_by', LIFECYCLE_LIMITS.actorChars, true);
    const comment = text(input.comment, 'comment', LIFECYCLE_LIMITS.commentChars, false);
    const now = this.now();
    const startsAt = input.startsAt || now;
    // Past year 9999 a silence could be kept but never listed again: ListSilences and the status
    // page failed for every caller on it (found by a black-box probe, ends_at in year 200000).
    if (!inTimeRange(startsAt))
      throw new InvalidArgumentError('starts_at is out of range (0001-01-01 to 9999-12-31)', 'starts_at');
    if (!inTimeRange(input.endsAt))
      throw new InvalidArgumentError('ends_at is out of range (0001-01-01 to 9999-12-31)', 'ends_at');
    if (!(input.endsAt > startsAt))
      throw new InvalidArgumentError('ends_at must be after starts_at', 'ends_at');
    if (input.endsAt <= now) throw new InvalidArgumentError('ends_at must be in the future', 'ends_at');
    if (input.recurrence) weeklyWindow(input.recurrence);
    const active = await this.activeSilences(now);
    if (active.length >= (this.options.maxActiveSilences ?? LIFECYCLE_LIMITS.activeSilences))
      throw new ResourceExhaustedError('too many active silences; expire some first');
    const silence: Silence = {
      id: newId(),
      matchers: input.matchers.map((m) => ({ name: m.name, op: m.op, value: m.value })),
      startsAt,
      endsAt: input.endsAt,
      createdBy,
      comment,
      ...(input.recurrence ? { recurrence: input.recurrence } : {}),
      createdAt: now,
      expiredAt: 0,
      reminded: [],
    };
    await this.store.createSilence(silence);
    const open = await this.store.open(LIFECYCLE_LIMITS.openScan);
    for (const entry of open) await this.applyMute(entry, [silence, ...active], 'keep');
    return silence;
  }

  async getSilence(id: string): Promise<Silence> {
    if (!isUuid(id)) throw new InvalidArgumentError('silence_id must be a UUID', 'silence_id');
    const s = await this.store.getSilence(id.toLowerCase());
    if (!s) throw new NotFoundError(`silence ${id} not found`);
    return s;
  }

  /** Ends a silence now; alerts it hid that still fire are notified at the next tick (run here too). */
  async expireSilence(id: string): Promise<Silence> {
    await this.getSilence(id);
    const s = await this.store.expireSilence(id.toLowerCase(), this.now());
    if (!s) throw new NotFoundError(`silence ${id} not found`);
    this.windows.delete(s.id);
    this.compiled.delete(s.id);
    await this.tick();
    return s;
  }

  async listSilences(after: AlertCursor | undefined, limit: number): Promise<Silence[]> {
    return this.store.listSilences(after, limit);
  }

  /** The state a silence is in now. */
  silenceState(s: Silence): 'pending' | 'active' | 'expired' {
    const now = this.now();
    if (s.expiredAt > 0 || now >= s.endsAt) return 'expired';
    return now < s.startsAt ? 'pending' : 'active';
  }

  /** Whom a notification of `alert` reaches, for the timeline ("notified whom and how"). */
  private receiversOf(alert: Alert): string {
    const names = this.options.receivers?.(alert) ?? [];
    return cutCodePoints(names.length > 0 ? names.join(', ') : CHANNELS_RECEIVER, 256);
  }

  /** Open groups (this replica's timers), for tests and the status page. */
  get groupCount(): number {
    return this.groups.size;
  }

  /** The bound on matchers, for callers that check early. */
  static readonly maxMatchers = MATCHER_LIMITS.matchers;
}

export type { AlertState };
