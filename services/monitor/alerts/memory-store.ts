/**
 * The AlertStore in memory: one monitor, nothing survives a restart. Bounded: at most `maxAlerts`
 * alerts (beyond, the oldest resolved one leaves first, else the oldest), `maxTimeline` entries per
 * alert (the newest kept), `maxSilences` silences (expired ones leave first) and `maxLogRows`
 * notification-log rows (the oldest leave).
 */
import type { Clock } from '../../../shared/runtime/clock';
import { systemClock } from '../../../shared/runtime/clock';
import type { Alert } from './alert';
import { compileMatchers, matchesAll } from './matchers';
import type {
  AlertCursor,
  AlertEntry,
  AlertFilter,
  AlertStore,
  NotificationKey,
  Silence,
  TimelineEntry,
  TriggerOutcome,
} from './store';

/** Bounds of the memory store. */
export interface InMemoryAlertStoreOptions {
  maxAlerts?: number;
  maxTimeline?: number;
  maxSilences?: number;
  maxLogRows?: number;
  /** Leases of the notification log. */
  clock?: Clock;
}

/** Defaults of the store's bounds. */
export const MEMORY_STORE_DEFAULTS = {
  maxAlerts: 10_000,
  maxTimeline: 100,
  maxSilences: 1000,
  maxLogRows: 10_000,
};

interface LogRow {
  state: 'sending' | 'sent';
  owner: string;
  leaseUntil: number;
}

function before(a: { firedAt: number; id: string }, b: AlertCursor): boolean {
  return a.firedAt < b.firedAt || (a.firedAt === b.firedAt && a.id < b.id);
}

const copy = <T>(v: T): T => structuredClone(v);

/** See the file comment. */
export class InMemoryAlertStore implements AlertStore {
  private readonly alerts = new Map<string, AlertEntry>();
  private readonly timelines = new Map<string, TimelineEntry[]>();
  private readonly openKeys = new Map<string, string>();
  /** Open alert ids by `alertname` (inhibition looks its sources up by name). */
  private readonly openByName = new Map<string, Set<string>>();
  /** Resolved alert ids, oldest first: the first to leave at the bound. */
  private readonly resolvedIds = new Set<string>();
  private readonly silences = new Map<string, Silence>();
  private readonly log = new Map<string, LogRow>();
  private readonly bounds: typeof MEMORY_STORE_DEFAULTS;
  private readonly clock: Clock;

  constructor(options: InMemoryAlertStoreOptions = {}) {
    this.bounds = {
      maxAlerts: options.maxAlerts ?? MEMORY_STORE_DEFAULTS.maxAlerts,
      maxTimeline: options.maxTimeline ?? MEMORY_STORE_DEFAULTS.maxTimeline,
      maxSilences: options.maxSilences ?? MEMORY_STORE_DEFAULTS.maxSilences,
      maxLogRows: options.maxLogRows ?? MEMORY_STORE_DEFAULTS.maxLogRows,
    };
    this.clock = options.clock ?? systemClock;
  }

  /** Alerts kept. */
  get size(): number {
    return this.alerts.size;
  }

  async trigger(alert: Alert, dedupKey: string, labels: Record<string, string>): Promise<TriggerOutcome> {
    const openId = this.openKeys.get(dedupKey);
    const open = openId ? this.alerts.get(openId) : undefined;
    if (open && open.state !== 'resolved') {
      open.count += 1;
      open.lastSeenAt = alert.firedAt;
      open.alert = {
        ...open.alert,
        title: alert.title,
        message: alert.message,
        severity: alert.severity,
        context: { ...alert.context },
      };
      open.labels = { ...labels };
      return { entry: copy(open), opened: false };
    }
    const entry: AlertEntry = {
      alert: copy(alert),
      dedupKey,
      state: 'triggered',
      labels: { ...labels },
      count: 1,
      lastSeenAt: alert.firedAt,
      silencedBy: '',
      inhibitedBy: '',
      notified: false,
      acknowledgedBy: '',
      resolvedBy: '',
      resolvedAt: 0,
    };
    this.evict();
    this.alerts.set(alert.id, entry);
    this.openKeys.set(dedupKey, alert.id);
    this.indexOpen(entry);
    return { entry: copy(entry), opened: true };
  }

  private indexOpen(e: AlertEntry): void {
    const name = e.labels.alertname ?? '';
    let ids = this.openByName.get(name);
    if (!ids) this.openByName.set(name, (ids = new Set()));
    ids.add(e.alert.id);
  }

  private unindexOpen(e: AlertEntry): void {
    const name = e.labels.alertname ?? '';
    const ids = this.openByName.get(name);
    ids?.delete(e.alert.id);
    if (ids?.size === 0) this.openByName.delete(name);
  }

  private evict(): void {
    if (this.alerts.size < this.bounds.maxAlerts) return;
    const victim: string | undefined =
      this.resolvedIds.values().next().value ?? this.alerts.keys().next().value;
    if (victim === undefined) return;
    const e = this.alerts.get(victim)!;
    if (this.openKeys.get(e.dedupKey) === victim) this.openKeys.delete(e.dedupKey);
    if (e.state !== 'resolved') this.unindexOpen(e);
    this.resolvedIds.delete(victim);
    this.alerts.delete(victim);
    this.timelines.delete(victim);
  }

  async get(id: string): Promise<AlertEntry | undefined> {
    const e = this.alerts.get(id);
    return e ? copy(e) : undefined;
  }

  async openByKey(dedupKey: string): Promise<AlertEntry | undefined> {
    const id = this.openKeys.get(dedupKey);
    const e = id ? this.alerts.get(id) : undefined;
    return e && e.state !== 'resolved' ? copy(e) : undefined;
  }

  async acknowledge(id: string, by: string): Promise<AlertEntry | undefined> {
    const e = this.alerts.get(id);
    if (!e || e.state !== 'triggered') return undefined;
    e.state = 'acknowledged';
    e.acknowledgedBy = by;
    return copy(e);
  }

  async resolve(id: string, by: string, at: number): Promise<AlertEntry | undefined> {
    const e = this.alerts.get(id);
    if (!e || e.state === 'resolved') return undefined;
    this.unindexOpen(e);
    e.state = 'resolved';
    e.resolvedBy = by;
    e.resolvedAt = at;
    this.resolvedIds.add(id);
    if (this.openKeys.get(e.dedupKey) === id) this.openKeys.delete(e.dedupKey);
    return copy(e);
  }

  async setMute(id: string, mute: { silencedBy: string; inhibitedBy: string }): Promise<void> {
    const e = this.alerts.get(id);
    if (e) Object.assign(e, mute);
  }

  async markNotified(id: string): Promise<void> {
    const e = this.alerts.get(id);
    if (e) e.notified = true;
  }

  async addTimeline(id: string, entry: TimelineEntry): Promise<void> {
    if (!this.alerts.has(id)) return;
    const list = this.timelines.get(id) ?? [];
    list.push({ ...entry });
    if (list.length > this.bounds.maxTimeline) list.splice(0, list.length - this.bounds.maxTimeline);
    this.timelines.set(id, list);
  }

  async timeline(id: string, limit: number): Promise<TimelineEntry[]> {
    const list = this.timelines.get(id) ?? [];
    return copy(list.slice(Math.max(0, list.length - limit)));
  }

  async list(filter: AlertFilter, after: AlertCursor | undefined, limit: number): Promise<AlertEntry[]> {
    const matchers = compileMatchers(filter.matchers ?? [], 'matchers');
    const states = filter.states?.length ? new Set(filter.states) : undefined;
    const severities = filter.severities?.length ? new Set(filter.severities) : undefined;
    const rows = [...this.alerts.values()]
      .filter(
        (e) =>
          (!states || states.has(e.state)) &&
          (!severities || severities.has(e.alert.severity.toLowerCase())) &&
          matchesAll(matchers, e.labels) &&
          (!after || before({ firedAt: e.alert.firedAt, id: e.alert.id }, after)),
      )
      .sort((a, b) => b.alert.firedAt - a.alert.firedAt || (a.alert.id < b.alert.id ? 1 : -1));
    return copy(rows.slice(0, limit));
  }

  async openMatching(
    alertname: string | undefined,
    equal: Record<string, string>,
    limit: number,
  ): Promise<AlertEntry[]> {
    const ids =
      alertname === undefined
        ? [...this.openByName.values()].flatMap((s) => [...s])
        : [...(this.openByName.get(alertname) ?? [])];
    const pairs = Object.entries(equal);
    const out: AlertEntry[] = [];
    for (const id of ids) {
      const e = this.alerts.get(id);
      if (!e || e.state === 'resolved') continue;
      if (pairs.every(([k, v]) => (e.labels[k] ?? '') === v)) out.push(e);
      if (out.length >= limit) break;
    }
    return copy(out);
  }

  async open(limit: number): Promise<AlertEntry[]> {
    return this.list({ states: ['triggered', 'acknowledged'] }, undefined, limit);
  }

  async createSilence(silence: Silence): Promise<void> {
    if (this.silences.size >= this.bounds.maxSilences) {
      const now = this.clock.now();
      let victim: string | undefined;
      for (const [id, s] of this.silences)
        if (s.expiredAt > 0 || s.endsAt <= now) {
          victim = id;
          break;
        }
      victim ??= this.silences.keys().next().value;
      if (victim !== undefined) this.silences.delete(victim);
    }
    this.silences.set(silence.id, copy(silence));
  }

  async getSilence(id: string): Promise<Silence | undefined> {
    const s = this.silences.get(id);
    return s ? copy(s) : undefined;
  }

  async activeSilences(now: number, limit: number): Promise<Silence[]> {
    // Read on every trigger: shallow copies (callers never change a silence; the store replaces
    // what it changes), newest first (insertion order reversed).
    const out: Silence[] = [];
    const all = [...this.silences.values()];
    for (let i = all.length - 1; i >= 0 && out.length < limit; i--) {
      const s = all[i]!;
      if (s.expiredAt === 0 && s.endsAt > now) out.push({ ...s, reminded: [...s.reminded] });
    }
    return out;
  }

  async listSilences(after: AlertCursor | undefined, limit: number): Promise<Silence[]> {
    return copy(
      [...this.silences.values()]
        .filter((s) => !after || before({ firedAt: s.createdAt, id: s.id }, after))
        .sort((a, b) => b.createdAt - a.createdAt || (a.id < b.id ? 1 : -1))
        .slice(0, limit),
    );
  }

  async expireSilence(id: string, at: number): Promise<Silence | undefined> {
    const s = this.silences.get(id);
    if (!s) return undefined;
    if (s.expiredAt === 0 && s.endsAt > at) {
      s.expiredAt = at;
      s.endsAt = at;
    }
    return copy(s);
  }

  async markReminded(id: string, reminder: string): Promise<boolean> {
    const s = this.silences.get(id);
    if (!s || s.reminded.includes(reminder)) return false;
    s.reminded.push(reminder);
    return true;
  }

  private static logKey(key: NotificationKey): string {
    return JSON.stringify([key.groupKey, key.receiver, key.step]);
  }

  async claimNotification(key: NotificationKey, owner: string, leaseMs: number): Promise<boolean> {
    const k = InMemoryAlertStore.logKey(key);
    const now = this.clock.now();
    const row = this.log.get(k);
    if (row && (row.state === 'sent' || row.leaseUntil > now)) return false;
    if (!row && this.log.size >= this.bounds.maxLogRows) this.log.delete(this.log.keys().next().value!);
    this.log.set(k, { state: 'sending', owner, leaseUntil: now + leaseMs });
    return true;
  }

  async notificationSent(key: NotificationKey): Promise<boolean> {
    return this.log.get(InMemoryAlertStore.logKey(key))?.state === 'sent';
  }

  async completeNotification(key: NotificationKey, owner: string): Promise<void> {
    const row = this.log.get(InMemoryAlertStore.logKey(key));
    if (row && row.owner === owner) row.state = 'sent';
  }

  /** The memory store is bounded by counts (see the file comment): nothing is purged by age. */
  async purge(): Promise<number> {
    return 0;
  }

  async releaseNotification(key: NotificationKey, owner: string): Promise<void> {
    const k = InMemoryAlertStore.logKey(key);
    const row = this.log.get(k);
    if (row && row.owner === owner && row.state === 'sending') this.log.delete(k);
  }
}
