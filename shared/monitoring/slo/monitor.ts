/**
 * SLOMonitor of spec/monitoring.md: latency samples per metric in bounded rings, evaluation of
 * registered SLOs over their windows, and dispatch of violations with tier-aware context and
 * per-SLO suppression. It also keeps ratio SLOs (good over all events) with multi-window burn-rate
 * alerts (./ratio.ts).
 */
import { type Logger, silentLogger } from '../../logging/logger';
import { type AlertDispatcherProtocol, LoggingAlertDispatcher } from '../alerts/dispatcher';
import { AlertTier } from '../alerts/tiers';
import { type Clock, inTimeRange, systemClock } from '../../runtime/clock';
import { DuplicateSLOError, InvalidSLOError, SLOLimitExceededError } from '../errors';
import { SLO, SLOViolation } from './slo';
import {
  type BurnRateEvaluation,
  EventCounts,
  evaluateRatioSLO,
  RatioSLO,
  type RatioSLOStatus,
  type SloWindowCounts,
} from './ratio';
import { formatPeriod, periodStartMs } from './period';

/** Events of a ratio SLO at one time, as a batch carries them. */
export interface SloEventInput {
  good: number;
  bad: number;
  /** When they happened (epoch ms); absent: now. */
  atMs?: number;
}

/** Most entries one `recordEventBatch` takes (the RPC batch bound). */
export const MAX_EVENT_ENTRIES_PER_CALL = 10_000;
/** Furthest ahead of the monitor's clock an event's time may be (a client's clock runs a little fast). */
export const MAX_EVENT_FUTURE_MS = 5 * 60_000;

/** Options of SLOMonitor (the spec's constructor arguments, plus the injectables). */
export interface SLOMonitorOptions {
  /** Samples kept per metric; the oldest is dropped beyond it (default 10,000). */
  maxSamplesPerMetric?: number;
  /** Receives violations from `evaluateAndDispatch` (default: the logging dispatcher on `logger`). */
  alertDispatcher?: AlertDispatcherProtocol | null;
  /** Seconds during which a second alert for the same SLO is not sent (default 300). */
  suppressionWindowSeconds?: number;
  /** Most SLOs, latency and ratio together (default 1,000); bounds every per-SLO structure. */
  maxSlos?: number;
  clock?: Clock;
  logger?: Logger;
  /**
   * Where the last send per SLO is kept when several monitors (replicas) share the suppression
   * window; default: in this monitor's memory.
   */
  suppressionLedger?: SLOSuppressionLedger;
  /**
   * Called once per `evaluateAndDispatch*` with the dedup keys (`slo:<name>:<rule>`) of every rule
   * that does not fire and whose short window burns below its rate: the caller resolves the open
   * alerts among them (a replica that never saw the rule fire resolves it too). Not called when none.
   */
  onRulesRecovered?: (dedupKeys: string[]) => Promise<void>;
  /**
   * Whether an alert is open under a dedup key, asked where the alerts live (the monitor's alert
   * store, shared by replicas). With it, the rule an SLO's burn is filed under is the one whose alert
   * is open, whichever replica opened it; without it, this monitor's memory decides (a burn whose
   * evaluation moves to another replica may then open a second page under the other rule).
   */
  isAlertOpen?: (dedupKey: string) => Promise<boolean>;
}

/**
 * The time of the last alert per suppression key (an SLO's name, or its name and rule), kept where
 * several monitors see it (a database shared by replicas).
 */
export interface SLOSuppressionLedger {
  /** Reserves a send of `key` unless one was reserved less than `windowMs` ago; true when reserved. */
  reserve(key: string, windowMs: number): Promise<boolean>;
  /** Gives back the reservation of a send that failed, so the next evaluation retries. */
  release(key: string): Promise<void>;
}

/** Latency samples of one metric: a ring of values and their monotonic times, oldest overwritten. */
class SampleRing {
  readonly values: Float64Array;
  readonly times: Float64Array;
  /** Index of the next write. */
  head = 0;
  count = 0;
  constructor(readonly capacity: number) {
    this.values = new Float64Array(capacity);
    this.times = new Float64Array(capacity);
  }
  push(value: number, at: number): void {
    this.values[this.head] = value;
    this.times[this.head] = at;
    this.head = (this.head + 1) % this.capacity;
    if (this.count < this.capacity) this.count++;
  }
  /** Copies the values recorded at or after `since` into `out`; returns how many. */
  copySince(since: number, out: Float64Array): number {
    let n = 0;
    let i = (this.head - this.count + this.capacity) % this.capacity;
    for (let k = 0; k < this.count; k++) {
      if (this.times[i]! >= since) out[n++] = this.values[i]!;
      i = i + 1 === this.capacity ? 0 : i + 1;
    }
    return n;
  }
  clear(): void {
    this.head = 0;
    this.count = 0;
  }
}

/**
 * The k-th smallest of `a[0..n)` (k from 0), by quickselect: linear on average, where a sort would be
 * n log n. Reorders `a`.
 */
export function selectKth(a: Float64Array, n: number, k: number): number {
  let lo = 0;
  let hi = n - 1;
  while (lo < hi) {
    // Median of three as pivot: sorted or constant input stays linear.
    const mid = (lo + hi) >>> 1;
    const x = a[lo]!;
    const y = a[mid]!;
    const z = a[hi]!;
    const pivot = x < y ? (y < z ? y : x < z ? z : x) : x < z ? x : y < z ? z : y;
    let i = lo;
    let j = hi;
    while (i <= j) {
      while (a[i]! < pivot) i++;
      while (a[j]! > pivot) j--;
      if (i <= j) {
        const t = a[i]!;
        a[i] = a[j]!;
        a[j] = t;
        i++;
        j--;
      }
    }
    if (k <= j) hi = j;
    else if (k >= i) lo = i;
    else return a[k]!;
  }
  return a[k]!;
}

/** Nearest-rank percentile of `a[0..n)`: the smallest value with at least `p` of the samples at or below it. */
export function nearestRankPercentile(a: Float64Array, n: number, p: number): number {
  const k = Math.min(n - 1, Math.max(0, Math.ceil(p * n) - 1));
  return selectKth(a, n, k);
}

/** Severity of a latency violation's alert, by tier (the tier says how urgent it is). */
function severityOf(tier: AlertTier): 'critical' | 'high' | 'medium' {
  return tier === AlertTier.P0_PAGE ? 'critical' : tier === AlertTier.P1_BUSINESS_HOURS ? 'high' : 'medium';
}

/** What became of one violation's alert in `evaluateAndDispatchWithOutcomes`. */
export type SLODispatchOutcome = 'sent' | 'suppressed' | 'failed';

/** A violation and what became of its alert. */
export interface DispatchedSLOViolation {
  violation: SLOViolation;
  /**
   * `sent`: handed to the dispatcher; `suppressed`: an alert for the same SLO went out (or is going
   * out) less than `suppressionWindowSeconds` ago, so nothing was sent; `failed`: the dispatcher threw
   * (logged; the next evaluation retries).
   */
  outcome: SLODispatchOutcome;
}

/**
 * The state of one latency SLO over its window now. The error budget of a latency SLO: the SLO
 * allows a fraction `1 - percentile` of the window's samples above `thresholdMs` (p99 allows 1%).
 * `errorBudgetRemaining` is `1 - (samples above the threshold / samples) / (1 - percentile)`: 1
 * untouched, 0 spent, negative overspent. With percentile 1 nothing is allowed: 1 while no sample is
 * above the threshold, else 0.
 */
export interface LatencySLOStatus {
  slo: SLO;
  /** Samples of the SLO's metric inside its window. */
  samples: number;
  /** Of those, the samples above `thresholdMs`. */
  samplesAboveThreshold: number;
  /** The nearest-rank percentile over the window, ms; null without samples. */
  measuredMs: number | null;
  /** measuredMs / thresholdMs (the spec's burn rate); null without samples. */
  burnRate: number | null;
  /** See above; null without samples. */
  errorBudgetRemaining: number | null;
}

/** Most values one `recordSamples` call takes (the RPC batch bound). */
export const MAX_SAMPLES_PER_CALL = 10_000;

/** Evaluates SLOs over recorded samples and dispatches their violations. */
export class SLOMonitor {
  private readonly maxSamples: number;
  private readonly suppressionMs: number;
  private readonly maxSlos: number;
  private readonly dispatcher: AlertDispatcherProtocol;
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly slos = new Map<string, SLO>();
  private readonly ratioSlos = new Map<
    string,
    { slo: RatioSLO; counts: EventCounts; loaded?: SloWindowCounts }
  >();
  private readonly onRulesRecovered: ((dedupKeys: string[]) => Promise<void>) | undefined;
  private readonly isAlertOpen: ((dedupKey: string) => Promise<boolean>) | undefined;
  /** Per SLO and severity, the rule whose alert is open for the burn going on (see incidentRule). */
  private readonly incidents = new Map<string, string>();
  /** Latency SLOs with a period, by the metric they read (their ratio views count its samples). */
  private readonly latencyViews = new Map<string, SLO[]>();
  /** Rings only for metrics some registered SLO reads: unknown metric names cost nothing. */
  private readonly samples = new Map<string, SampleRing>();
  /** Monotonic time of the last dispatched alert per suppression key (SLO name, or name and rule). */
  private readonly lastSent = new Map<string, number>();
  private scratch = new Float64Array(0);
  private readonly ledger: SLOSuppressionLedger | undefined;

  constructor(options: SLOMonitorOptions = {}) {
    this.maxSamples = options.maxSamplesPerMetric ?? 10_000;
    if (!(Number.isInteger(this.maxSamples) && this.maxSamples > 0))
      throw new InvalidSLOError('max_samples_per_metric must be a positive integer');
    const suppression = options.suppressionWindowSeconds ?? 300;
    if (!(Number.isFinite(suppression) && suppression >= 0))
      throw new InvalidSLOError('suppression_window_seconds must be 0 or more');
    this.suppressionMs = suppression * 1000;
    this.maxSlos = options.maxSlos ?? 1000;
    this.clock = options.clock ?? systemClock;
    this.logger = options.logger ?? silentLogger();
    this.dispatcher = options.alertDispatcher ?? new LoggingAlertDispatcher(this.logger);
    this.ledger = options.suppressionLedger;
    this.onRulesRecovered = options.onRulesRecovered;
    this.isAlertOpen = options.isAlertOpen;
  }

  /** Dedup key of the alert of one rule of an SLO (the AlertHub keeps one open alert per key). */
  static ruleDedupKey(sloName: string, ruleName: string): string {
    return `slo:${sloName}:${ruleName}`;
  }

  /** Registered latency SLOs by name (spec: registered_slos). */
  get registeredSlos(): ReadonlyMap<string, SLO> {
    return this.slos;
  }

  /** SLOs registered, latency and ratio (a latency SLO's ratio view is not one more). */
  get sloCount(): number {
    let views = 0;
    for (const list of this.latencyViews.values()) views += list.length;
    return this.slos.size + this.ratioSlos.size - views;
  }

  /**
   * For the latency SLOs with a period reading `metric`: how many of `valuesMs` are good (at or
   * under the threshold) of how many: what a caller that keeps events in a store records for them.
   */
  latencyEvents(
    metric: string,
    valuesMs: ArrayLike<number>,
  ): Array<{ name: string; good: number; total: number }> {
    return (this.latencyViews.get(metric) ?? []).map((slo) => {
      let good = 0;
      for (let i = 0; i < valuesMs.length; i++) if (valuesMs[i]! <= slo.thresholdMs) good++;
      return { name: slo.name, good, total: valuesMs.length };
    });
  }

  /** Registered ratio SLOs by name. */
  get registeredRatioSlos(): ReadonlyMap<string, RatioSLO> {
    return new Map([...this.ratioSlos].map(([name, r]) => [name, r.slo]));
  }

  private checkNewName(name: string): void {
    if (this.slos.has(name) || this.ratioSlos.has(name))
      throw new DuplicateSLOError(`SLO ${JSON.stringify(name)} is already registered`);
    if (this.sloCount >= this.maxSlos)
      throw new SLOLimitExceededError(`at most ${this.maxSlos} SLOs may be registered`);
  }

  /**
   * Registers a latency SLO. A name already registered (latency or ratio) throws DuplicateSLOError.
   * With a period, it also gets a ratio view (kind `latency`): its samples count as events, good at
   * or under the threshold, alerted by its rules; the single-window check skips it.
   */
  register(slo: SLO): void {
    if (!(slo instanceof SLO)) throw new InvalidSLOError('register expects an SLO');
    this.checkNewName(slo.name);
    if (slo.period) {
      const view = new RatioSLO({
        name: slo.name,
        objective: slo.percentile,
        period: slo.period,
        rules: slo.rules,
        minEvents: slo.minEvents,
        description: slo.description,
        pageTier: slo.tier,
        owner: slo.owner,
        runbookUrl: slo.runbookUrl || undefined,
        kind: 'latency',
      });
      this.ratioSlos.set(slo.name, { slo: view, counts: new EventCounts(view.windowSeconds) });
      const list = this.latencyViews.get(slo.metric) ?? [];
      list.push(slo);
      this.latencyViews.set(slo.metric, list);
    }
    this.slos.set(slo.name, slo);
    if (!this.samples.has(slo.metric)) this.samples.set(slo.metric, new SampleRing(this.maxSamples));
  }

  /** Registers a ratio SLO. A name already registered throws DuplicateSLOError. */
  registerRatio(slo: RatioSLO): void {
    if (!(slo instanceof RatioSLO)) throw new InvalidSLOError('registerRatio expects a RatioSLO');
    this.checkNewName(slo.name);
    this.ratioSlos.set(slo.name, { slo, counts: new EventCounts(slo.windowSeconds) });
  }

  /**
   * Records one latency sample (milliseconds) of `metric`. Returns false, and keeps nothing, when no
   * registered SLO reads the metric. A value that is not a finite number of 0 or more throws.
   */
  recordSample(metric: string, valueMs: number): boolean {
    if (typeof valueMs !== 'number' || !Number.isFinite(valueMs) || valueMs < 0)
      throw new InvalidSLOError(`sample of ${JSON.stringify(metric)} must be a finite number of 0 or more`);
    const ring = this.samples.get(metric);
    if (!ring) return false;
    ring.push(valueMs, this.clock.monotonic());
    this.countLatencyEvents(metric, [valueMs]);
    return true;
  }

  /**
   * Records a batch of latency samples of `metric`, all or nothing: every value is checked first,
   * and the first that is not a finite number of 0 or more throws InvalidSLOError naming its index,
   * with nothing recorded. More than MAX_SAMPLES_PER_CALL values throw too. Returns how many were
   * kept: 0 when no registered SLO reads the metric.
   */
  recordSamples(metric: string, valuesMs: ArrayLike<number>): number {
    if (valuesMs.length > MAX_SAMPLES_PER_CALL)
      throw new InvalidSLOError(`at most ${MAX_SAMPLES_PER_CALL} samples per call, got ${valuesMs.length}`);
    for (let i = 0; i < valuesMs.length; i++) {
      const v = valuesMs[i];
      if (typeof v !== 'number' || !Number.isFinite(v) || v < 0)
        throw new InvalidSLOError(
          `sample [${i}] of ${JSON.stringify(metric)} must be a finite number of 0 or more, got ${v}`,
        );
    }
    const ring = this.samples.get(metric);
    if (!ring) return 0;
    const at = this.clock.monotonic();
    for (let i = 0; i < valuesMs.length; i++) ring.push(valuesMs[i]!, at);
    this.countLatencyEvents(metric, valuesMs);
    return valuesMs.length;
  }

  /**
   * Replaces the samples kept for `metric` with `valuesMs` (oldest first), each recorded `agesMs[i]`
   * ms ago: for a monitor whose samples live in a store shared by replicas, loaded before it reads.
   * Beyond `maxSamplesPerMetric` the newest are kept. Returns false, keeping nothing, when no
   * registered SLO reads the metric. Values are trusted (the store kept only checked ones).
   */
  replaceSamples(metric: string, valuesMs: ArrayLike<number>, agesMs: ArrayLike<number>): boolean {
    const ring = this.samples.get(metric);
    if (!ring) return false;
    ring.clear();
    const now = this.clock.monotonic();
    for (let i = Math.max(0, valuesMs.length - ring.capacity); i < valuesMs.length; i++)
      ring.push(valuesMs[i]!, now - (agesMs[i] ?? 0));
    return true;
  }

  /**
   * Records events of a ratio SLO: `good` of `total` succeeded, at `atMs` (default now). Returns false
   * for an unregistered name. Counts must be integers with 0 <= good <= total; the time must be
   * finite, at most MAX_EVENT_FUTURE_MS ahead and not before the SLO's period.
   */
  recordEvents(name: string, good: number, total: number, atMs?: number): boolean {
    if (!(Number.isInteger(good) && Number.isInteger(total) && good >= 0 && good <= total))
      throw new InvalidSLOError('event counts must be integers with 0 <= good <= total');
    const entry = this.ratioSlos.get(name);
    if (!entry) return false;
    const now = this.clock.now();
    const at = atMs ?? now;
    if (atMs !== undefined) this.checkEventTime(entry.slo, at, now, periodStartMs(entry.slo.period, now), -1);
    entry.counts.add(at, good, total);
    return true;
  }

  /** Adds samples of `metric` as events of the latency SLOs with a period reading it. */
  private countLatencyEvents(metric: string, valuesMs: ArrayLike<number>): void {
    if (!this.latencyViews.has(metric)) return;
    const now = this.clock.now();
    for (const e of this.latencyEvents(metric, valuesMs))
      this.ratioSlos.get(e.name)?.counts.add(now, e.good, e.total);
  }

  /**
   * Throws unless `atMs` is a finite time from `startMs` (the period's start, computed once per batch:
   * a calendar period's start costs a time-zone lookup) to MAX_EVENT_FUTURE_MS after `nowMs`. `index`
   * names the entry of a batch in the message (-1: a single event).
   */
  private checkEventTime(slo: RatioSLO, atMs: number, nowMs: number, startMs: number, index: number): void {
    if (Number.isFinite(atMs) && atMs <= nowMs + MAX_EVENT_FUTURE_MS && atMs >= startMs) return;
    const where = index < 0 ? 'event' : `events[${index}]`;
    if (!Number.isFinite(atMs)) throw new InvalidSLOError(`${where} time must be a valid time`);
    // Beyond it toISOString below throws: a caller's bad time was INTERNAL (a black-box probe).
    if (!inTimeRange(atMs))
      throw new InvalidSLOError(`${where} time is out of range (0001-01-01 to 9999-12-31)`);
    if (atMs > nowMs + MAX_EVENT_FUTURE_MS)
      throw new InvalidSLOError(
        `${where} time ${new Date(atMs).toISOString()} is more than 5 minutes ahead of the monitor's clock`,
      );
    throw new InvalidSLOError(
      `${where} time ${new Date(atMs).toISOString()} is before the SLO's period (${formatPeriod(slo.period)})`,
    );
  }

  /**
   * Checks a batch of events of `name` as `recordEventBatch` does, recording nothing: for a caller
   * that keeps events elsewhere (a database shared by replicas). Throws InvalidSLOError naming the
   * first bad entry's index; returns false for an unregistered name.
   */
  checkEventBatch(name: string, events: readonly SloEventInput[]): boolean {
    if (events.length > MAX_EVENT_ENTRIES_PER_CALL)
      throw new InvalidSLOError(
        `at most ${MAX_EVENT_ENTRIES_PER_CALL} event entries per call, got ${events.length}`,
      );
    const entry = this.ratioSlos.get(name);
    if (!entry) return false;
    const now = this.clock.now();
    const start = periodStartMs(entry.slo.period, now);
    for (let i = 0; i < events.length; i++) {
      const e = events[i]!;
      if (!(Number.isSafeInteger(e.good) && e.good >= 0 && Number.isSafeInteger(e.bad) && e.bad >= 0))
        throw new InvalidSLOError(`events[${i}]: good and bad must be integers of 0 or more`);
      if (e.atMs !== undefined) this.checkEventTime(entry.slo, e.atMs, now, start, i);
    }
    return true;
  }

  /**
   * Records a batch of events of a ratio SLO, all or nothing (see checkEventBatch). Returns the number
   * of events kept (good + bad of every entry), or -1 when `name` is not a registered ratio SLO.
   */
  recordEventBatch(name: string, events: readonly SloEventInput[]): number {
    if (!this.checkEventBatch(name, events)) return -1;
    const entry = this.ratioSlos.get(name)!;
    const now = this.clock.now();
    let kept = 0;
    for (const e of events) {
      if (entry.counts.add(e.atMs ?? now, e.good, e.good + e.bad)) kept += e.good + e.bad;
    }
    return kept;
  }

  /**
   * Adds events counted from counters of good and of all events (which arrive apart, so `good` may
   * exceed `total` in one call; a window never counts fewer than 0 bad). Counts must be finite and
   * 0 or more; false for an unknown name or an event outside the kept span.
   */
  recordCounterEvents(name: string, atMs: number, good: number, total: number): boolean {
    if (!(
      Number.isFinite(good) &&
      Number.isFinite(total) &&
      good >= 0 &&
      total >= 0 &&
      Number.isFinite(atMs)
    ))
      throw new InvalidSLOError('counted events must be finite numbers of 0 or more');
    const entry = this.ratioSlos.get(name);
    return entry ? entry.counts.add(atMs, good, total) : false;
  }

  /**
   * Evaluates `name` from `counts` (window sums a store-backed caller loaded) instead of the events
   * recorded here, until `clearSamples()`; false for an unknown name.
   */
  setRatioCounts(name: string, counts: SloWindowCounts): boolean {
    const entry = this.ratioSlos.get(name);
    if (!entry) return false;
    entry.loaded = counts;
    return true;
  }

  /** Drops the samples of `metric`, or of every metric (ratio SLO counts too) when omitted. */
  clearSamples(metric?: string): void {
    if (metric !== undefined) {
      this.samples.get(metric)?.clear();
      return;
    }
    for (const ring of this.samples.values()) ring.clear();
    for (const r of this.ratioSlos.values()) {
      r.counts.clear();
      r.loaded = undefined;
    }
  }

  /** Number of samples kept for `metric` (in or out of any window). */
  sampleCount(metric: string): number {
    return this.samples.get(metric)?.count ?? 0;
  }

  /**
   * One violation per latency SLO in breach: its percentile over the samples of its window, divided
   * by its threshold, is at or above its burn-rate threshold. SLOs without samples in their window
   * are within bounds.
   */
  evaluate(): SLOViolation[] {
    const now = this.clock.monotonic();
    const detectedAt = new Date(this.clock.now());
    const out: SLOViolation[] = [];
    for (const slo of this.slos.values()) {
      // A latency SLO with a period is alerted by its burn-rate rules (its ratio view).
      if (slo.period) continue;
      const n = this.windowSamples(slo, now);
      if (n === 0) continue;
      const measured = nearestRankPercentile(this.scratch, n, slo.percentile);
      if (measured / slo.thresholdMs >= slo.burnRateThreshold)
        out.push(new SLOViolation(slo, measured, detectedAt));
    }
    return out;
  }

  /** The state of every latency SLO over its window now, in registration order (see LatencySLOStatus). */
  latencyStatuses(): LatencySLOStatus[] {
    const now = this.clock.monotonic();
    const out: LatencySLOStatus[] = [];
    for (const slo of this.slos.values()) {
      if (slo.period) continue; // reported by evaluateRatios (kind 'latency')
      const n = this.windowSamples(slo, now);
      if (n === 0) {
        out.push({
          slo,
          samples: 0,
          samplesAboveThreshold: 0,
          measuredMs: null,
          burnRate: null,
          errorBudgetRemaining: null,
        });
        continue;
      }
      let above = 0;
      for (let i = 0; i < n; i++) if (this.scratch[i]! > slo.thresholdMs) above++;
      const measured = nearestRankPercentile(this.scratch, n, slo.percentile);
      const allowed = 1 - slo.percentile;
      out.push({
        slo,
        samples: n,
        samplesAboveThreshold: above,
        measuredMs: measured,
        burnRate: measured / slo.thresholdMs,
        errorBudgetRemaining: allowed > 0 ? 1 - above / n / allowed : above === 0 ? 1 : 0,
      });
    }
    return out;
  }

  /** Copies the samples of `slo`'s window into `scratch`; returns how many. */
  private windowSamples(slo: SLO, now: number): number {
    const ring = this.samples.get(slo.metric)!;
    if (ring.count === 0) return 0;
    if (this.scratch.length < ring.count) this.scratch = new Float64Array(this.maxSamples);
    return ring.copySince(now - slo.windowSeconds * 1000, this.scratch);
  }

  /** The state of every ratio SLO: events, remaining error budget, each burn-rate rule. */
  evaluateRatios(): RatioSLOStatus[] {
    const now = this.clock.now();
    return [...this.ratioSlos.values()].map((r) => evaluateRatioSLO(r.slo, r.loaded ?? r.counts, now));
  }

  /**
   * Evaluates, logs a structured warning per violation, and sends each through the dispatcher with
   * tier-aware context, unless an alert for the same SLO went out less than
   * `suppressionWindowSeconds` ago. Firing ratio-SLO rules are logged and dispatched the same way
   * (the most severe firing rule per SLO, suppressed per SLO and severity). Returns the latency violations, suppressed ones included.
   * A dispatcher failure is logged, and that SLO is not marked as sent, so the next evaluation retries.
   */
  async evaluateAndDispatch(): Promise<SLOViolation[]> {
    return (await this.evaluateAndDispatchWithOutcomes()).map((d) => d.violation);
  }

  /**
   * `evaluateAndDispatch`, also saying for each latency violation whether its alert was sent,
   * suppressed or failed: the suppression decision is made here, where the last send times live.
   */
  async evaluateAndDispatchWithOutcomes(): Promise<DispatchedSLOViolation[]> {
    const violations = this.evaluate();
    const out: DispatchedSLOViolation[] = [];
    for (const v of violations) {
      const context = {
        tier: v.slo.tier,
        slo: v.slo.name,
        owner: v.slo.owner,
        runbook_url: v.slo.runbookUrl,
        burn_rate: v.burnRate,
        metric: v.slo.metric,
        percentile: v.slo.percentile,
        measured_ms: v.measuredValue,
        threshold_ms: v.slo.thresholdMs,
        window_seconds: v.slo.windowSeconds,
      };
      this.logger.warn({ event: 'slo_violation', ...context }, v.message);
      const outcome = await this.dispatchUnlessSuppressed(
        v.slo.name,
        `SLO violation: ${v.slo.name}`,
        v.message,
        severityOf(v.slo.tier),
        context,
      );
      out.push({ violation: v, outcome });
    }
    const recovered: string[] = [];
    for (const status of this.evaluateRatios()) {
      const active = new Set<string>();
      const rule = ruleToDispatch(status.firing);
      if (rule) {
        const name = await this.incidentRule(status, rule);
        active.add(name);
        await this.dispatchRule(status, rule, name);
      }
      for (const r of status.rules)
        if (!r.firing && !active.has(r.name) && !atLeast(r.shortBurnRate, r.rule.burnRate))
          recovered.push(SLOMonitor.ruleDedupKey(status.slo.name, r.name));
    }
    if (this.onRulesRecovered && recovered.length > 0) {
      try {
        await this.onRulesRecovered(recovered);
      } catch (err) {
        this.logger.warn({ err }, 'could not resolve the alerts of recovered SLO rules');
      }
    }
    return out;
  }

  /**
   * The rule an SLO's alert of `rule`'s severity is filed under: the rule that opened the incident,
   * while any rule of that severity still fires. A fast burn opens `page-1h-5m`; when its short
   * window recovers but `page-6h-30m` still fires, the burn goes on: the same alert stays open (and
   * is not resolved) rather than a second page under the other rule's key. With `isAlertOpen`, the
   * rule whose alert is open where the alerts live wins (the incident survives an evaluation moving
   * to another replica); else, and when that store cannot be asked, this monitor's memory decides.
   */
  private async incidentRule(status: RatioSLOStatus, rule: BurnRateEvaluation): Promise<string> {
    const slo = status.slo.name;
    for (const severity of ['page', 'ticket'] as const) {
      const key = `${slo}\u0000${severity}`;
      if (!status.firing.some((r) => r.rule.severity === severity)) this.incidents.delete(key);
    }
    const key = `${slo}\u0000${rule.rule.severity}`;
    const remembered = this.incidents.get(key);
    const known = (name: string | undefined): name is string =>
      name !== undefined && status.rules.some((r) => r.name === name);
    if (this.isAlertOpen) {
      const sameSeverity = status.rules
        .filter((r) => r.rule.severity === rule.rule.severity)
        .map((r) => r.name);
      const asked = known(remembered)
        ? [remembered, ...sameSeverity.filter((n) => n !== remembered)]
        : sameSeverity;
      try {
        for (const name of asked) {
          if (await this.isAlertOpen(SLOMonitor.ruleDedupKey(slo, name))) {
            this.incidents.set(key, name);
            return name;
          }
        }
        // No alert of this severity is open anywhere: the burn opens a new incident under its rule.
        this.incidents.set(key, rule.name);
        return rule.name;
      } catch (err) {
        this.logger.warn({ err, slo }, 'could not ask which SLO alert is open; this monitor remembers');
      }
    }
    if (known(remembered)) return remembered;
    this.incidents.set(key, rule.name);
    return rule.name;
  }

  /** Logs and dispatches the alert of one firing rule under `ruleName`'s dedup key (suppressed per key). */
  private async dispatchRule(
    status: RatioSLOStatus,
    rule: BurnRateEvaluation,
    ruleName: string,
  ): Promise<void> {
    const severity = rule.rule.severity;
    const slo = status.slo;
    const tier = severity === 'page' ? slo.pageTier : AlertTier.P1_BUSINESS_HOURS;
    const dedupKey = SLOMonitor.ruleDedupKey(slo.name, ruleName);
    const context = {
      tier,
      slo: slo.name,
      slo_kind: slo.kind,
      slo_rule: ruleName,
      firing_rules: status.firing.map((r) => r.name).join(','),
      slo_severity: severity,
      dedup_key: dedupKey,
      owner: slo.owner,
      runbook_url: slo.runbookUrl,
      burn_rate: rule.longBurnRate,
      short_burn_rate: rule.shortBurnRate,
      burn_rate_threshold: rule.rule.burnRate,
      long_window_seconds: rule.rule.longWindowSeconds,
      short_window_seconds: rule.rule.shortWindowSeconds,
      objective: slo.objective,
      error_budget_remaining: status.errorBudgetRemaining,
      period: formatPeriod(slo.period),
    };
    const message =
      `SLO ${slo.name} (${round(slo.objective * 100)}% over ${formatPeriod(slo.period)}) burning its error budget at ` +
      `${round(rule.longBurnRate)}x over ${rule.rule.longWindowSeconds} s and ${round(rule.shortBurnRate)}x over ` +
      `${rule.rule.shortWindowSeconds} s (rule ${rule.name}: ${rule.rule.burnRate}x); ` +
      `${round(status.errorBudgetRemaining * 100)}% of the budget left`;
    this.logger.warn({ event: 'slo_burn_rate', severity, ...context }, message);
    await this.dispatchUnlessSuppressed(
      dedupKey,
      `SLO burn rate: ${slo.name}`,
      message,
      severity === 'page' ? 'critical' : 'high',
      context,
    );
  }

  /** dispatchUnlessSuppressed when a ledger shared with other monitors keeps the window. */
  private async dispatchThroughLedger(
    ledger: SLOSuppressionLedger,
    key: string,
    title: string,
    message: string,
    severity: string,
    context: Record<string, unknown>,
  ): Promise<SLODispatchOutcome> {
    if (!(await ledger.reserve(key, this.suppressionMs))) return 'suppressed';
    try {
      await this.dispatcher.sendAlert(title, message, severity, context);
      return 'sent';
    } catch (err) {
      await ledger
        .release(key)
        .catch((releaseErr: unknown) =>
          this.logger.warn(
            { slo: context.slo, err: releaseErr },
            'SLO alert reservation could not be given back',
          ),
        );
      this.logger.error(
        { slo: context.slo, err: err instanceof Error ? err.message : String(err) },
        'SLO alert dispatch failed',
      );
      return 'failed';
    }
  }

  private async dispatchUnlessSuppressed(
    key: string,
    title: string,
    message: string,
    severity: string,
    context: Record<string, unknown>,
  ): Promise<SLODispatchOutcome> {
    if (this.ledger) return this.dispatchThroughLedger(this.ledger, key, title, message, severity, context);
    const now = this.clock.monotonic();
    const last = this.lastSent.get(key);
    if (last !== undefined && now - last < this.suppressionMs) return 'suppressed';
    // Taken before the await: two evaluations running at once (the worker and an RPC) must not both
    // send. Given back on failure, so the next evaluation retries.
    this.lastSent.set(key, now);
    try {
      await this.dispatcher.sendAlert(title, message, severity, context);
      return 'sent';
    } catch (err) {
      if (last === undefined) this.lastSent.delete(key);
      else this.lastSent.set(key, last);
      this.logger.error(
        { slo: context.slo, err: err instanceof Error ? err.message : String(err) },
        'SLO alert dispatch failed',
      );
      return 'failed';
    }
  }
}

/**
 * The one rule of an SLO that is dispatched: the first firing page rule, else the first firing
 * ticket rule. A fast burn trips the slower rules too; while a page fires, the others are muted (as
 * an Alertmanager inhibition with `equal: [slo]` would), so an SLO pages once however many of its
 * windows burn. Each rule keeps its own alert and dedup key when it is the one that fires.
 */
function ruleToDispatch(firing: readonly BurnRateEvaluation[]): BurnRateEvaluation | undefined {
  return firing.find((r) => r.rule.severity === 'page') ?? firing[0];
}

/** `value >= limit` forgiving float noise (as the rules compare). */
function atLeast(value: number, limit: number): boolean {
  return value >= limit * (1 - 1e-9);
}

function round(n: number): number {
  return Math.round(n * 100) / 100;
}
