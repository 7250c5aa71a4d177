/**
 * The AlertStore port: alerts with their lifecycle and timeline, silences, and the notification log.
 * Two implementations pass one contract (test/monitor/alerts/store-contract.ts): memory-store.ts
 * (the default until the monitor opens its database) and database-store.ts (knex: PostgreSQL and
 * PGlite; migrations/20261128600000_alerts.ts).
 */
import type { Alert } from './alert';
import type { LabelMatcher } from './matchers';

/** Where an alert is in its lifecycle. */
export type AlertState = 'triggered' | 'acknowledged' | 'resolved';

/** What happened to an alert. */
export type TimelineKind =
  'triggered' | 'updated' | 'notified' | 'acknowledged' | 'resolved' | 'silenced' | 'inhibited' | 'unmuted';

/** One line of an alert's timeline. */
export interface TimelineEntry {
  /** Milliseconds since the epoch. */
  at: number;
  kind: TimelineKind;
  /** Who did it (acknowledged / resolved by), the channel notified, or the silence / inhibiting alert. */
  actor: string;
  /** Free text: the note, how it was notified, the new message. */
  detail: string;
}

/** An alert as the lifecycle keeps it. */
export interface AlertEntry {
  alert: Alert;
  /** The PagerDuty-style key: a trigger with the key of an open alert updates it. The id when none was given. */
  dedupKey: string;
  state: AlertState;
  /** The context entries plus `alertname`, `severity`, `source_service`. */
  labels: Record<string, string>;
  /** Triggers folded into this alert (1 for a new one). */
  count: number;
  lastSeenAt: number;
  /** The silence that hides it now, or ''. */
  silencedBy: string;
  /** The alert whose firing mutes it now, or ''. */
  inhibitedBy: string;
  /** True once a firing notification went out (a resolved one follows only then). */
  notified: boolean;
  acknowledgedBy: string;
  resolvedBy: string;
  resolvedAt: number;
}

/** What a trigger did. */
export interface TriggerOutcome {
  entry: AlertEntry;
  /** True when the trigger opened a new alert; false when it updated an open one. */
  opened: boolean;
}

/** Filters of a listing. */
export interface AlertFilter {
  states?: readonly AlertState[];
  /** Lower-case severities. */
  severities?: readonly string[];
  matchers?: readonly LabelMatcher[];
}

/** Position in a listing (newest first by firing time, then id). */
export interface AlertCursor {
  firedAt: number;
  id: string;
}

/** A weekly window in a time zone (a recurring silence). */
export interface WeeklyWindow {
  /** `mon` .. `sun`. */
  days: string[];
  /** `HH:MM` local, inclusive. */
  start: string;
  /** `HH:MM` local, exclusive, after start. */
  end: string;
  timeZone: string;
}

/** A silence. */
export interface Silence {
  id: string;
  matchers: LabelMatcher[];
  startsAt: number;
  endsAt: number;
  /** An email address (reminders are mailed) or a name. */
  createdBy: string;
  comment: string;
  /** Set when the silence only holds within a weekly window between startsAt and endsAt. */
  recurrence?: WeeklyWindow;
  createdAt: number;
  /** When it was expired by hand, else 0. */
  expiredAt: number;
  /** Reminders sent (each once): `expiring`, `long_hidden`. */
  reminded: string[];
}

/** The key of one notification: a unique row in the notification log. */
export interface NotificationKey {
  groupKey: string;
  receiver: string;
  /** The step: which notification of the group (see grouping.ts). */
  step: string;
}

/** The port. Every method is safe across replicas sharing one database. */
export interface AlertStore {
  /**
   * Opens `alert` under `dedupKey`, or, when an alert with that key is open (not resolved), updates
   * it: count + 1, last seen, message, severity, title. Atomic per key.
   */
  trigger(alert: Alert, dedupKey: string, labels: Record<string, string>): Promise<TriggerOutcome>;
  get(id: string): Promise<AlertEntry | undefined>;
  /** The open alert of a key. */
  openByKey(dedupKey: string): Promise<AlertEntry | undefined>;
  /** Moves a triggered alert to acknowledged; undefined when it is not triggered (or absent). */
  acknowledge(id: string, by: string, at: number): Promise<AlertEntry | undefined>;
  /** Moves an open alert to resolved; undefined when it was not open (or absent). */
  resolve(id: string, by: string, at: number): Promise<AlertEntry | undefined>;
  /** Sets what mutes an alert now ('' for nothing). */
  setMute(id: string, mute: { silencedBy: string; inhibitedBy: string }): Promise<void>;
  markNotified(id: string): Promise<void>;
  addTimeline(id: string, entry: TimelineEntry): Promise<void>;
  /** The timeline, oldest first, at most `limit` (the newest kept). */
  timeline(id: string, limit: number): Promise<TimelineEntry[]>;
  /** Newest first, after `after`, matching `filter`, at most `limit`. */
  list(filter: AlertFilter, after: AlertCursor | undefined, limit: number): Promise<AlertEntry[]>;
  /** Open alerts (triggered or acknowledged), at most `limit`, newest first. */
  open(limit: number): Promise<AlertEntry[]>;
  /**
   * Open alerts whose labels hold every `equal` pair (and named `alertname` when given), at most
   * `limit`, in no particular order: the candidate sources of an inhibition rule.
   */
  openMatching(
    alertname: string | undefined,
    equal: Record<string, string>,
    limit: number,
  ): Promise<AlertEntry[]>;

  createSilence(silence: Silence): Promise<void>;
  getSilence(id: string): Promise<Silence | undefined>;
  /** Silences not expired by hand whose end is after `now`, newest first, at most `limit`. */
  activeSilences(now: number, limit: number): Promise<Silence[]>;
  /** Every silence, newest first (by creation), at most `limit`, after the id-cursor. */
  listSilences(after: AlertCursor | undefined, limit: number): Promise<Silence[]>;
  /** Ends a silence now; undefined when absent. */
  expireSilence(id: string, at: number): Promise<Silence | undefined>;
  /** Records a reminder; false when it was recorded already (another replica sent it). */
  markReminded(id: string, reminder: string): Promise<boolean>;

  /**
   * Claims one notification before it is sent: inserts its row (state `sending`, owned by `owner`
   * until `leaseMs` from now); true when this caller inserted it, or took over a `sending` row whose
   * lease ran out (its sender crashed before finishing). False when it is sent or being sent.
   */
  claimNotification(key: NotificationKey, owner: string, leaseMs: number): Promise<boolean>;
  /** True when the notification's row is `sent` (by whichever monitor claimed it). */
  notificationSent(key: NotificationKey): Promise<boolean>;
  /** Marks a claimed notification sent. */
  completeNotification(key: NotificationKey, owner: string): Promise<void>;
  /** Gives a claim back after a failed send, so the next attempt may claim it at once. */
  releaseNotification(key: NotificationKey, owner: string): Promise<void>;
  /**
   * Retention: deletes alerts resolved before `before` (with their timeline), silences that ended
   * before it, and notification-log rows written before it (alert times are the monitor's clock, the
   * log's the database's: `before` is read as the same instant). Returns how many rows went.
   */
  purge(before: number): Promise<number>;
}
