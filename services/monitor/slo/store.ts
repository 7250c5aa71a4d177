/**
 * Where the SLO area keeps what must survive a restart and be shared by replicas: the SLOs registered
 * by RPC and the recent latency samples of the metrics they read. The port and its memory
 * implementation (one process; tests and `database.store_backend: memory`); the database one is
 * database-store.ts. The SLO rules (percentile, burn rate, budget, suppression) stay in the
 * monitoring library's SLOMonitor: the area loads what a store holds into it before it reads.
 */
import { type Clock, systemClock } from '../../../shared/runtime/clock';
import type { SloDefinition } from './slo-area';
import type { SLOSuppressionLedger } from '../../../shared/monitoring/slo/monitor';
import { type BucketRange, EventCounts } from '../../../shared/monitoring/slo/ratio';
import { periodSpanSeconds } from '../../../shared/monitoring/slo/period';
import type { RatioSloDefinition } from './ratio-definition';

/** Events of a ratio SLO at one time (epoch ms). `good` may exceed `total` in one entry when counters of good and total arrive apart. */
export interface SloEventCount {
  atMs: number;
  good: number;
  total: number;
}

/** Sums per bucket range key (`w:<seconds>`, `period`), per SLO. */
export type SloEventSums = Map<string, Map<string, { good: number; total: number }>>;

/** How long minute buckets are kept: the 6-hour span and a margin for late events. */
export const MINUTE_BUCKETS_KEPT_MS = (6 * 3600 + 300) * 1000;

/** Samples of one metric as a store returns them: oldest first, each with its age in ms. */
export interface StoredSamples {
  valuesMs: Float64Array;
  agesMs: Float64Array;
}

/**
 * The SLO area's durable state. Stores trust their input: validation belongs to the area. A store is
 * also the suppression ledger of the area's SLOMonitor: the last alert per SLO, shared by replicas.
 */
export interface SloStateStore extends SLOSuppressionLedger {
  /** Keeps an SLO registered by RPC; false (nothing written) when its name is taken. */
  addSlo(def: SloDefinition): Promise<boolean>;
  /** Every kept SLO, by name. */
  listSlos(): Promise<SloDefinition[]>;
  /** Appends samples of `metric` recorded now, then keeps only its newest `maxPerMetric`. */
  addSamples(metric: string, valuesMs: ArrayLike<number>, maxPerMetric: number): Promise<void>;
  /** The newest `limit` samples of `metric` recorded within the last `windowSeconds`, oldest first. */
  windowSamples(metric: string, windowSeconds: number, limit: number): Promise<StoredSamples>;
  /**
   * Deletes the samples older than their metric's window in `windows` (metric -> seconds) and every
   * sample of a metric not in it (no SLO reads it any more). Returns how many were deleted.
   */
  purgeSamples(windows: ReadonlyMap<string, number>): Promise<number>;
  /** Keeps a ratio SLO (defaults applied); false (nothing written) when the name is taken, by a latency SLO too. */
  addRatioSlo(def: RatioSloDefinition): Promise<boolean>;
  /** Every kept ratio SLO, by name. */
  listRatioSlos(): Promise<RatioSloDefinition[]>;
  /** Adds events of a ratio SLO to its minute and hour buckets (sums: replicas recording at once add up). */
  addSloEvents(slo: string, events: readonly SloEventCount[]): Promise<void>;
  /** The sums of each SLO's bucket ranges (see bucketRanges), in one read. */
  sloEventSums(ranges: ReadonlyMap<string, readonly BucketRange[]>): Promise<SloEventSums>;
  /**
   * Deletes minute buckets before `minuteKeepFromMs` and each SLO's hour buckets before its
   * `hourKeepFromMs` entry (SLOs not in it keep theirs). Returns how many buckets were deleted.
   */
  purgeSloEvents(minuteKeepFromMs: number, hourKeepFromMs: ReadonlyMap<string, number>): Promise<number>;
  /**
   * Issue 29 (the budget burn-down): the hour buckets of `slo` from the hour holding `fromMs` to the
   * hour holding `toMs`, oldest first, only those holding events (`atMs` is the bucket's start). At
   * most MAX_HOUR_BUCKETS_READ hours are read: a longer span keeps its newest hours.
   */
  sloHourBuckets(slo: string, fromMs: number, toMs: number): Promise<SloEventCount[]>;
}

const HOUR_MS = 3_600_000;

/** Most hours one sloHourBuckets read spans: the longest rolling period (90 days) and its slack. */
export const MAX_HOUR_BUCKETS_READ = 90 * 24 + 2;

/** The first and last hour bucket starts a sloHourBuckets read covers (the bound applied). */
export function hourBucketSpan(fromMs: number, toMs: number): { firstMs: number; lastMs: number } {
  const lastMs = Math.floor(toMs / HOUR_MS) * HOUR_MS;
  const firstMs = Math.max(
    Math.floor(fromMs / HOUR_MS) * HOUR_MS,
    lastMs - (MAX_HOUR_BUCKETS_READ - 1) * HOUR_MS,
  );
  return { firstMs, lastMs };
}

interface Sample {
  value: number;
  at: number;
}

/** The memory store: one process, time from `clock`. */
export class MemorySloStateStore implements SloStateStore {
  private readonly slos = new Map<string, SloDefinition>();
  private readonly samples = new Map<string, Sample[]>();
  private readonly alerts = new Map<string, { last: number; previous: number | null }>();
  private readonly ratioSlos = new Map<string, RatioSloDefinition>();
  /** Per ratio SLO, the library's own bounded buckets (360 minutes and the period's hours). */
  private readonly events = new Map<string, EventCounts>();

  constructor(private readonly clock: Clock = systemClock) {}

  async addSlo(def: SloDefinition): Promise<boolean> {
    if (this.slos.has(def.name) || this.ratioSlos.has(def.name)) return false;
    this.slos.set(def.name, { ...def });
    return true;
  }

  async addRatioSlo(def: RatioSloDefinition): Promise<boolean> {
    if (this.slos.has(def.name) || this.ratioSlos.has(def.name)) return false;
    this.ratioSlos.set(def.name, structuredClone(def));
    return true;
  }

  async listRatioSlos(): Promise<RatioSloDefinition[]> {
    return [...this.ratioSlos.values()]
      .map((d) => structuredClone(d))
      .sort((a, b) => compare(a.name, b.name));
  }

  async addSloEvents(slo: string, events: readonly SloEventCount[]): Promise<void> {
    const def = this.ratioSlos.get(slo);
    let counts = this.events.get(slo);
    if (!counts) {
      // A config objective is not stored as a definition: its span is at most 90 days.
      const span = def?.period ? periodSpanSeconds(def.period) : 90 * 86_400;
      this.events.set(slo, (counts = new EventCounts(span)));
    }
    for (const e of events) counts.add(e.atMs, e.good, e.total);
  }

  async sloEventSums(ranges: ReadonlyMap<string, readonly BucketRange[]>): Promise<SloEventSums> {
    const out: SloEventSums = new Map();
    for (const [slo, list] of ranges) {
      const counts = this.events.get(slo);
      const sums = new Map<string, { good: number; total: number }>();
      for (const r of list) {
        if (!counts) sums.set(r.key, { good: 0, total: 0 });
        else if (r.key === 'period') sums.set(r.key, counts.since(r.fromMs, r.toMs));
        // r.toMs is the newest bucket's start: the same buckets as at the area's "now".
        else sums.set(r.key, counts.window(r.toMs, Number(r.key.slice(2))));
      }
      out.set(slo, sums);
    }
    return out;
  }

  async sloHourBuckets(slo: string, fromMs: number, toMs: number): Promise<SloEventCount[]> {
    const counts = this.events.get(slo);
    const out: SloEventCount[] = [];
    if (!counts) return out;
    const { firstMs, lastMs } = hourBucketSpan(fromMs, toMs);
    // The ring's own sums, one hour at a time: the same buckets (and the same evictions) as `since`.
    for (let at = firstMs; at <= lastMs; at += HOUR_MS) {
      const { good, total } = counts.since(at, at);
      if (good !== 0 || total !== 0) out.push({ atMs: at, good, total });
    }
    return out;
  }

  async purgeSloEvents(): Promise<number> {
    // EventCounts' rings overwrite their oldest buckets: nothing to delete.
    return 0;
  }

  async listSlos(): Promise<SloDefinition[]> {
    return [...this.slos.values()].map((d) => ({ ...d })).sort((a, b) => compare(a.name, b.name));
  }

  async addSamples(metric: string, valuesMs: ArrayLike<number>, maxPerMetric: number): Promise<void> {
    const at = this.clock.now();
    let list = this.samples.get(metric);
    if (!list) this.samples.set(metric, (list = []));
    for (let i = 0; i < valuesMs.length; i++) list.push({ value: valuesMs[i]!, at });
    if (list.length > maxPerMetric) list.splice(0, list.length - maxPerMetric);
  }

  async windowSamples(metric: string, windowSeconds: number, limit: number): Promise<StoredSamples> {
    const now = this.clock.now();
    const since = now - windowSeconds * 1000;
    const inWindow = (this.samples.get(metric) ?? []).filter((s) => s.at >= since).slice(-limit);
    return {
      valuesMs: Float64Array.from(inWindow, (s) => s.value),
      agesMs: Float64Array.from(inWindow, (s) => now - s.at),
    };
  }

  async reserve(key: string, windowMs: number): Promise<boolean> {
    const now = this.clock.now();
    const sent = this.alerts.get(key);
    if (sent && now - sent.last < windowMs) return false;
    this.alerts.set(key, { last: now, previous: sent?.last ?? null });
    return true;
  }

  async release(key: string): Promise<void> {
    const sent = this.alerts.get(key);
    if (!sent) return;
    if (sent.previous === null) this.alerts.delete(key);
    else this.alerts.set(key, { last: sent.previous, previous: null });
  }

  async purgeSamples(windows: ReadonlyMap<string, number>): Promise<number> {
    const now = this.clock.now();
    let deleted = 0;
    for (const [metric, list] of this.samples) {
      const window = windows.get(metric);
      if (window === undefined) {
        deleted += list.length;
        this.samples.delete(metric);
        continue;
      }
      const since = now - window * 1000;
      const kept = list.filter((s) => s.at >= since);
      deleted += list.length - kept.length;
      this.samples.set(metric, kept);
    }
    return deleted;
  }
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
