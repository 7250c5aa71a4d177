/**
 * Ratio SLOs whose events are counted from ingested counters (RatioSlo.metric_source): a counter of
 * good events and a counter of all events, each named with or without `_total` and narrowed by label
 * values (other labels are summed over). The ingest store reports each counter increase
 * (MetricIngestStore.addCounterListener); the router adds it to the SLOs it matches, in one-minute
 * buckets held here until the area flushes them to its store (every few seconds and before each
 * evaluation), so a busy counter costs one store write per SLO and minute, not one per sample.
 */
import type { CounterSelectorDefinition } from './ratio-definition';

/** How a ratio SLO counts from ingested counters. */
export interface MetricSource {
  good: CounterSelectorDefinition;
  total: CounterSelectorDefinition;
}

/** Buckets of counted events waiting for a flush: per SLO, per minute start (epoch ms). */
export type PendingCounterEvents = Map<string, Map<number, { good: number; total: number }>>;

/** Most minutes one SLO's pending events may span before the oldest are flushed as they are. */
const MAX_PENDING_MINUTES = 60;

/** A counter's name without `_total`: the selector and the sample match either way. */
function baseName(metric: string): string {
  return metric.endsWith('_total') ? metric.slice(0, -'_total'.length) : metric;
}

function matches(sel: CounterSelectorDefinition, labels: Readonly<Record<string, string>>): boolean {
  for (const k in sel.labels) if (labels[k] !== sel.labels[k]) return false;
  return true;
}

/** Routes counter increases to the ratio SLOs that count them. */
export class MetricSourceRouter {
  /** Per counter base name, the SLOs reading it (as good, total or both). */
  private readonly byMetric = new Map<string, Array<{ slo: string; source: MetricSource }>>();
  private readonly sources = new Map<string, MetricSource>();
  private pending: PendingCounterEvents = new Map();

  constructor(private readonly now: () => number = Date.now) {}

  /** Starts (or replaces) the counting of `slo` from `source`. */
  set(slo: string, source: MetricSource): void {
    this.delete(slo);
    this.sources.set(slo, source);
    for (const metric of new Set([baseName(source.good.metric), baseName(source.total.metric)])) {
      const list = this.byMetric.get(metric) ?? [];
      list.push({ slo, source });
      this.byMetric.set(metric, list);
    }
  }

  /** Stops counting `slo`. */
  delete(slo: string): void {
    if (!this.sources.delete(slo)) return;
    for (const [metric, list] of this.byMetric) {
      const kept = list.filter((e) => e.slo !== slo);
      if (kept.length === 0) this.byMetric.delete(metric);
      else this.byMetric.set(metric, kept);
    }
  }

  has(slo: string): boolean {
    return this.sources.has(slo);
  }

  /** A counter increased by `increase` (the ingest store's listener). A name no SLO reads costs one lookup. */
  onCounterIncrease(name: string, labels: Readonly<Record<string, string>>, increase: number): void {
    if (!(increase > 0 && Number.isFinite(increase))) return;
    const base = baseName(name);
    const readers = this.byMetric.get(base);
    if (!readers) return;
    const minute = Math.floor(this.now() / 60_000) * 60_000;
    for (const { slo, source } of readers) {
      const good = baseName(source.good.metric) === base && matches(source.good, labels) ? increase : 0;
      const total = baseName(source.total.metric) === base && matches(source.total, labels) ? increase : 0;
      if (good === 0 && total === 0) continue;
      let buckets = this.pending.get(slo);
      if (!buckets) this.pending.set(slo, (buckets = new Map()));
      const b = buckets.get(minute);
      if (b) {
        b.good += good;
        b.total += total;
      } else {
        // Bounded: a store that cannot be reached keeps at most an hour of minutes per SLO.
        if (buckets.size >= MAX_PENDING_MINUTES) buckets.delete(buckets.keys().next().value!);
        buckets.set(minute, { good, total });
      }
    }
  }

  /** Hands over what is pending and starts afresh. */
  take(): PendingCounterEvents {
    const out = this.pending;
    this.pending = new Map();
    return out;
  }

  /** Puts back what a failed flush took (older than what arrived since), within the bound. */
  putBack(events: PendingCounterEvents): void {
    for (const [slo, buckets] of events) {
      for (const [minute, c] of buckets) {
        let mine = this.pending.get(slo);
        if (!mine) this.pending.set(slo, (mine = new Map()));
        const b = mine.get(minute);
        if (b) {
          b.good += c.good;
          b.total += c.total;
        } else if (mine.size < MAX_PENDING_MINUTES) mine.set(minute, { ...c });
      }
    }
  }
}
