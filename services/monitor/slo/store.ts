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

  constructor(private readonly clock: Clock = systemClock) {}

  async addSlo(def: SloDefinition): Promise<boolean> {
    if (this.slos.has(def.name)) return false;
    this.slos.set(def.name, { ...def });
    return true;
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
