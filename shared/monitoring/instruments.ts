/**
 * Metric instruments: Counter, Gauge, Histogram and Summary. `record(value, labels)` is the canonical
 * update; the other operations delegate to it. Each instrument keeps a small local view (count, value,
 * recent observations, bucket counts) for the spec's getters and, once bound to a prom-client
 * `Registry`, feeds a prom-client metric so it appears on `/metrics`.
 *
 * Label rule (same as the pull-metrics adapter): the label keys of an instrument are its constant
 * labels plus the declared `labelNames`, or, when none are declared, the keys of the first call that
 * passes labels. A later call that omits a known key exports "" for it; an unknown key is an
 * InvalidMetricError.
 */
import type * as Prom from 'prom-client';
import { InvalidMetricError } from './errors';
import { counterExportName, sanitizeMetricName } from './metric-names';
import type { Labels } from './types';

/** Prometheus' default histogram buckets (prom-client's). */
export const DEFAULT_BUCKETS: readonly number[] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** How many recent observations a Histogram or Summary keeps for `getObservations()`. */
export const DEFAULT_MAX_OBSERVATIONS = 1000;

/** Kind of instrument. */
export type InstrumentType = 'counter' | 'gauge' | 'histogram' | 'summary';

/** Options shared by all instruments. */
export interface InstrumentOptions {
  /** Bind to this registry at construction, so the metric is exported. */
  registry?: Prom.Registry;
  /** Exported Prometheus name; defaults to the sanitized name (counters get `_total`). */
  exportName?: string;
  /** Per-call label keys, declared up front (otherwise fixed at first use). */
  labelNames?: readonly string[];
}

/** Options of Histogram and Summary. */
export interface ObservingOptions extends InstrumentOptions {
  /** Recent observations kept for `getObservations()`; older ones are dropped. */
  maxObservations?: number;
}

/** Options of Histogram. */
export interface HistogramOptions extends ObservingOptions {
  buckets?: readonly number[];
}

type PromMetric = Prom.Counter | Prom.Gauge | Prom.Histogram | Prom.Summary;

function checkValue(name: string, value: number): void {
  if (typeof value !== 'number' || !Number.isFinite(value)) {
    throw new InvalidMetricError(`metric ${name}: value must be a finite number`);
  }
}

function invalid(name: string, err: unknown): InvalidMetricError {
  const detail = err instanceof Error ? err.message : String(err);
  return new InvalidMetricError(`metric ${name}: ${detail}`);
}

/** Common part of all instruments. */
export abstract class Metric {
  /** Kind of instrument. */
  abstract readonly type: InstrumentType;
  /** Labels added to every sample of this instrument. */
  readonly labels: Labels;
  /** The prom-client metric once bound and its label keys known. */
  protected prom: PromMetric | undefined;
  private registry: Prom.Registry | undefined;
  private exportAs: string | undefined;
  private labelKeys: readonly string[] | undefined;
  private keySet: ReadonlySet<string> = new Set();
  /** Constant labels plus "" for every other key; passed when a call brings no labels. */
  protected baseLabels: Record<string, string> | undefined;
  /** The last label object passed through unchanged (validated, complete, all strings). */
  private lastChecked: Labels | undefined;

  constructor(
    readonly name: string,
    readonly description = '',
    labels?: Labels,
    options: InstrumentOptions = {},
  ) {
    this.labels = Object.freeze({ ...(labels ?? {}) });
    if (options.labelNames) this.fixLabelKeys(options.labelNames);
    if (options.registry) this.bind(options.registry, options.exportName);
  }

  /** The Prometheus name this instrument is exported under (undefined until bound). */
  get exportName(): string | undefined {
    return this.exportAs;
  }

  /** The canonical update. */
  abstract record(value: number, labels?: Labels): void;

  /** Sets the instrument back to zero and forgets its history. */
  abstract reset(): void;

  /** Binds the instrument to a registry so it is exported; used by MetricsCollector. */
  bind(registry: Prom.Registry, exportName?: string): void {
    if (this.registry) {
      if (this.registry === registry) return;
      throw new InvalidMetricError(`metric ${this.name} is already bound to another registry`);
    }
    this.registry = registry;
    this.exportAs = exportName ?? this.defaultExportName();
    const existing = registry.getSingleMetric(this.exportAs);
    if (existing) {
      throw new InvalidMetricError(`metric ${this.exportAs} is already registered`);
    }
    if (this.labelKeys) this.createProm();
  }

  /** Removes the prom-client metric from its registry. */
  unbind(): void {
    if (this.registry && this.exportAs && this.prom) this.registry.removeSingleMetric(this.exportAs);
    this.registry = undefined;
    this.prom = undefined;
  }

  /** The help text: the description, or the name when there is none (promtool rejects empty help). */
  protected get help(): string {
    return this.description || this.name;
  }

  protected defaultExportName(): string {
    return sanitizeMetricName(this.name);
  }

  /** Builds the prom-client metric with the fixed label keys. */
  protected abstract buildProm(
    prom: typeof Prom,
    name: string,
    labelNames: string[],
    registry: Prom.Registry,
  ): PromMetric;

  private createProm(): void {
    if (!this.registry || !this.exportAs || !this.labelKeys) return;
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const prom = require('prom-client') as typeof Prom;
    try {
      this.prom = this.buildProm(prom, this.exportAs, [...this.labelKeys], this.registry);
    } catch (err) {
      throw invalid(this.name, err);
    }
  }

  private fixLabelKeys(callKeys: readonly string[]): void {
    const keys = [...new Set([...Object.keys(this.labels), ...callKeys])];
    this.labelKeys = keys;
    this.keySet = new Set(keys);
    if (keys.length === 0) {
      this.baseLabels = undefined;
      return;
    }
    const base: Record<string, string> = {};
    for (const k of keys) base[k] = this.labels[k] ?? '';
    this.baseLabels = base;
  }

  /**
   * The key of one series: the values of a resolved label set in the instrument's key order (so the
   * order a caller wrote its labels in does not matter), each length-prefixed (no separator can clash).
   */
  protected seriesKey(resolved: Record<string, string> | undefined): string {
    if (!resolved) return '';
    let key = '';
    for (const k of this.labelKeys!) {
      const v = resolved[k]!;
      key += `${v.length}:${v}`;
    }
    return key;
  }

  /**
   * The full label set for one call, or undefined for an instrument without labels. Fixes the label
   * keys (and creates the prom-client metric) on first use.
   */
  protected resolveLabels(labels: Labels | undefined): Record<string, string> | undefined {
    if (!this.labelKeys) {
      this.fixLabelKeys(labels ? Object.keys(labels) : []);
      this.createProm();
    }
    if (labels === undefined) return this.baseLabels;
    // Hot loops pass the same label object again and again; it was checked last time.
    if (labels === this.lastChecked) return labels as Record<string, string>;
    let count = 0;
    let allStrings = true;
    for (const key in labels) {
      if (!this.keySet.has(key)) {
        throw new InvalidMetricError(`metric ${this.name}: unknown label ${JSON.stringify(key)}`);
      }
      if (typeof labels[key] !== 'string') allStrings = false;
      count++;
    }
    // A call naming every key with string values is passed through without a copy (as prom-client does).
    if (allStrings && count === this.labelKeys!.length) {
      this.lastChecked = labels;
      return labels as Record<string, string>;
    }
    if (count === 0) return this.baseLabels;
    const out: Record<string, string> = { ...this.baseLabels };
    for (const key in labels) out[key] = String(labels[key]);
    return out;
  }
}

/** A value that only goes up. */
export class Counter extends Metric {
  readonly type = 'counter' as const;
  private total = 0;
  /** Unlabelled increments not yet handed to prom-client. */
  private pending = 0;
  /** True once the prom-client counter exists and collects `pending` at scrape time. */
  declare private aggregating: boolean | undefined;

  /** Adds `value` (at least 0). */
  record(value: number, labels?: Labels): void {
    if (labels === undefined && this.aggregating && value >= 0 && value < Infinity) {
      // Unlabelled calls only add up here; the sum reaches prom-client at scrape time (collect).
      this.total += value;
      this.pending += value;
      return;
    }
    this.recordSlow(value, labels);
  }

  private recordSlow(value: number, labels: Labels | undefined): void {
    checkValue(this.name, value);
    if (value < 0) throw new InvalidMetricError(`metric ${this.name}: a counter cannot decrease`);
    const resolved = this.resolveLabels(labels);
    this.total += value;
    const prom = this.prom as Prom.Counter | undefined;
    if (prom) {
      if (resolved) prom.inc(resolved, value);
      else prom.inc(value);
    }
  }

  /** Adds `amount` (default 1). */
  increment(amount = 1, labels?: Labels): void {
    this.record(amount, labels);
  }

  /** The total counted over all label sets. */
  getCount(): number {
    return this.total;
  }

  reset(): void {
    this.total = 0;
    this.pending = 0;
    this.prom?.reset();
  }

  protected override defaultExportName(): string {
    return counterExportName(this.name);
  }

  protected buildProm(prom: typeof Prom, name: string, labelNames: string[], registry: Prom.Registry) {
    const base = this.baseLabels;
    const publish = (): void => {
      const pending = this.pending;
      if (pending === 0) return;
      this.pending = 0;
      if (base === undefined) counter.inc(pending);
      else counter.inc(base, pending);
    };
    const counter = new prom.Counter({
      name,
      help: this.help,
      labelNames,
      registers: [registry],
      collect: publish,
    });
    this.aggregating = true;
    this.pending = 0;
    if (base === undefined) counter.inc(0);
    return counter;
  }

  override unbind(): void {
    super.unbind();
    this.aggregating = false;
  }
}

/** A value that goes up and down. */
export class Gauge extends Metric {
  readonly type = 'gauge' as const;
  private values = new Map<string, number>();

  /** Sets the value for the label set. */
  record(value: number, labels?: Labels): void {
    checkValue(this.name, value);
    const resolved = this.resolveLabels(labels);
    this.values.set(this.seriesKey(resolved), value);
    const prom = this.prom as Prom.Gauge | undefined;
    if (prom) {
      if (resolved) prom.set(resolved, value);
      else prom.set(value);
    }
  }

  /** Sets the value. */
  set(value: number, labels?: Labels): void {
    this.record(value, labels);
  }

  /** Adds `amount` (default 1). */
  increment(amount = 1, labels?: Labels): void {
    this.record(this.getValue(labels) + amount, labels);
  }

  /** Subtracts `amount` (default 1). */
  decrement(amount = 1, labels?: Labels): void {
    this.record(this.getValue(labels) - amount, labels);
  }

  /** The current value for the label set (the unlabelled one by default); 0 when never set. */
  getValue(labels?: Labels): number {
    return this.values.get(this.seriesKey(this.resolveLabels(labels))) ?? 0;
  }

  reset(): void {
    this.values.clear();
    this.prom?.reset();
  }

  protected buildProm(prom: typeof Prom, name: string, labelNames: string[], registry: Prom.Registry) {
    return new prom.Gauge({ name, help: this.help, labelNames, registers: [registry] });
  }
}

/** Keeps the most recent observations in a fixed ring. */
class ObservationRing {
  private readonly buf: Float64Array;
  private next = 0;
  private size = 0;

  constructor(capacity: number) {
    this.buf = new Float64Array(Math.max(1, capacity));
  }

  push(value: number): void {
    this.buf[this.next] = value;
    this.next = this.next + 1 === this.buf.length ? 0 : this.next + 1;
    if (this.size < this.buf.length) this.size++;
  }

  toArray(): number[] {
    const out: number[] = [];
    const start = this.size < this.buf.length ? 0 : this.next;
    for (let i = 0; i < this.size; i++) out.push(this.buf[(start + i) % this.buf.length]!);
    return out;
  }

  clear(): void {
    this.next = 0;
    this.size = 0;
  }
}

/** Observations sorted into buckets. */
export class Histogram extends Metric {
  readonly type = 'histogram' as const;
  /** Upper bounds, ascending, without +Inf. */
  readonly buckets: readonly number[];
  private readonly ring: ObservationRing;
  private readonly bounds: Float64Array;
  /** Non-cumulative count per bucket; the last slot is +Inf. */
  private readonly counts: Float64Array;

  constructor(name: string, description = '', labels?: Labels, options: HistogramOptions = {}) {
    const buckets = [...new Set(options.buckets ?? DEFAULT_BUCKETS)].sort((a, b) => a - b);
    if (buckets.some((b) => !Number.isFinite(b))) {
      throw new InvalidMetricError(`metric ${name}: bucket bounds must be finite numbers`);
    }
    // Super binds (and so builds the prom metric) when a registry is given: set buckets first.
    super(name, description, labels, { ...options, registry: undefined });
    this.buckets = Object.freeze(buckets);
    this.bounds = Float64Array.from(buckets);
    this.ring = new ObservationRing(options.maxObservations ?? DEFAULT_MAX_OBSERVATIONS);
    this.counts = new Float64Array(buckets.length + 1);
    if (options.registry) this.bind(options.registry, options.exportName);
  }

  /** Observes one value. */
  record(value: number, labels?: Labels): void {
    if (!(value > -Infinity && value < Infinity)) checkValue(this.name, value);
    const resolved =
      labels === undefined && this.prom !== undefined ? this.baseLabels : this.resolveLabels(labels);
    this.ring.push(value);
    const b = this.bounds;
    const n = b.length;
    let i = 0;
    while (i < n && value > b[i]!) i++;
    this.counts[i]!++;
    const prom = this.prom as Prom.Histogram | undefined;
    if (prom !== undefined) {
      if (resolved === undefined) prom.observe(value);
      else prom.observe(resolved, value);
    }
  }

  /** Observes one value. */
  observe(value: number, labels?: Labels): void {
    this.record(value, labels);
  }

  /** The most recent observations, oldest first (at most `maxObservations`). */
  getObservations(): number[] {
    return this.ring.toArray();
  }

  /** Cumulative count per upper bound (as Prometheus' `le`), ending with Infinity for all. */
  getBucketCounts(): Map<number, number> {
    const out = new Map<number, number>();
    let running = 0;
    this.buckets.forEach((bound, i) => {
      running += this.counts[i]!;
      out.set(bound, running);
    });
    out.set(Infinity, running + this.counts[this.buckets.length]!);
    return out;
  }

  reset(): void {
    this.ring.clear();
    this.counts.fill(0);
    this.prom?.reset();
  }

  protected buildProm(prom: typeof Prom, name: string, labelNames: string[], registry: Prom.Registry) {
    return new prom.Histogram({
      name,
      help: this.help,
      labelNames,
      buckets: [...this.buckets],
      registers: [registry],
    });
  }
}

/** Observations summarised by quantiles. */
export class Summary extends Metric {
  readonly type = 'summary' as const;
  private readonly ring: ObservationRing;

  constructor(name: string, description = '', labels?: Labels, options: ObservingOptions = {}) {
    super(name, description, labels, { ...options, registry: undefined });
    this.ring = new ObservationRing(options.maxObservations ?? DEFAULT_MAX_OBSERVATIONS);
    if (options.registry) this.bind(options.registry, options.exportName);
  }

  /** Observes one value. */
  record(value: number, labels?: Labels): void {
    checkValue(this.name, value);
    const resolved = this.resolveLabels(labels);
    this.ring.push(value);
    const prom = this.prom as Prom.Summary | undefined;
    if (prom) {
      if (resolved) prom.observe(resolved, value);
      else prom.observe(value);
    }
  }

  /** Observes one value. */
  observe(value: number, labels?: Labels): void {
    this.record(value, labels);
  }

  /** The most recent observations, oldest first. */
  getObservations(): number[] {
    return this.ring.toArray();
  }

  reset(): void {
    this.ring.clear();
    this.prom?.reset();
  }

  protected buildProm(prom: typeof Prom, name: string, labelNames: string[], registry: Prom.Registry) {
    return new prom.Summary({ name, help: this.help, labelNames, registers: [registry] });
  }
}
