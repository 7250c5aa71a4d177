/**
 * The ingested series store: what other services push with RecordMetrics or OTLP, aggregated by
 * metric name and label values (plus the `service` label), bounded by the `metrics` config, and
 * rendered in the Prometheus text format after the monitor's own metrics on its `/metrics`.
 * Decisions (names, types, buckets, summaries, expiry) are in ./README.md.
 */
import type { Registry } from 'prom-client';
import { Counter as PromCounter, Gauge as PromGauge } from 'prom-client';
import { type Clock, systemClock } from '../../../shared/runtime/clock';
import { appendExposition } from '../../../shared/monitoring/exposition';
import { counterExportName, makeMetricName } from '../../../shared/monitoring/metric-names';
import { cutText } from '../../../shared/text/cut';

/** The instrument types a sample can have. */
export type IngestMetricType = 'counter' | 'gauge' | 'histogram' | 'summary';

/** Every reason a sample or data point is rejected: the fixed values of the `reason` label. */
export const REJECTION_REASONS = [
  'unknown_type',
  'invalid_name',
  'invalid_value',
  'invalid_label_name',
  'reserved_label_name',
  'too_many_labels',
  'label_value_too_long',
  'description_too_long',
  'type_mismatch',
  'label_mismatch',
  'bucket_mismatch',
  'name_collision',
  'unsupported',
  'max_metric_names',
  'max_series_per_metric',
  'max_series',
  'max_ingest_bytes',
] as const;

/** Why a sample was not recorded (the `reason` label of the rejection counter). */
export type RejectionReason = (typeof REJECTION_REASONS)[number];

/** A refused sample: the fixed reason and a message for the caller (bounded length). */
export interface Rejection {
  reason: RejectionReason;
  message: string;
}

/** The `metrics` config keys the store reads (the monitor's `metrics` section). */
export interface MetricIngestLimits {
  max_metric_names: number;
  max_series_per_metric: number;
  /** Ingested series over all names. */
  max_series: number;
  max_labels_per_sample: number;
  max_label_value_length: number;
  max_description_length: number;
  /**
   * Bytes the ingested series may take on one `/metrics` answer (each series' lines, its label block
   * repeated on each); a new series beyond it is rejected. Unbounded when omitted.
   */
  max_ingest_bytes?: number;
  series_ttl_seconds: number;
  /** Bounds of histograms first recorded by RecordMetrics, increasing. */
  histogram_buckets: readonly number[];
  /** The monitor's own prefix, applied to the store's own metrics only (never to ingested names). */
  prefix?: string;
}

/** Options of MetricIngestStore. */
export interface MetricIngestStoreOptions {
  limits: MetricIngestLimits;
  /** The monitor's registry: its names are reserved, and the store's own metrics live there. */
  registry: Registry;
  clock?: Clock;
}

/** The identity of a sample: name, type, label values, source service and help text. */
export interface SampleKey {
  name: string;
  /** undefined: the sender's type is not one the store knows (rejected as `unknown_type`). */
  type: IngestMetricType | undefined;
  labels: Readonly<Record<string, string>>;
  service: string;
  description: string;
}

/**
 * What to do to a series. `add` (counter increment, delta sum), `set` (gauge, cumulative counter
 * total), `observe` (one value into a histogram or summary), and the pre-aggregated OTLP points:
 * `histogram` (per-bucket counts for `bounds`, sum and count) and `summary` (sum and count); for
 * those, `cumulative` replaces the state and otherwise it is added.
 */
export type SampleOp =
  | { kind: 'add' | 'set' | 'observe'; value: number }
  | {
      kind: 'histogram';
      bounds: readonly number[];
      counts: readonly number[];
      sum: number;
      count: number;
      cumulative: boolean;
    }
  | { kind: 'summary'; sum: number; count: number; cumulative: boolean };

/** Refusals an expired series or name may cause: tried again after expiry ran. */
const RETRY_AFTER_SWEEP: ReadonlySet<RejectionReason> = new Set<RejectionReason>([
  'type_mismatch',
  'label_mismatch',
  'bucket_mismatch',
  'name_collision',
  'max_metric_names',
  'max_series_per_metric',
  'max_series',
  'max_ingest_bytes',
]);

/** Characters of a rendered chunk before it is handed on (the scrape is streamed in such chunks). */
export const RENDER_CHUNK_CHARS = 64 * 1024;

/** Longest accepted metric or label name (names are kept in memory and rendered on every scrape). */
export const MAX_NAME_LENGTH = 200;
/** Most bucket bounds of one histogram (an OTLP point chooses its own). */
export const MAX_BUCKETS = 64;
/** Message length cap: rejection messages quote caller input. */
const MAX_QUOTED = 80;

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
const NEEDS_ESCAPE = /[\\"\n]/;

interface Series {
  /** `k="v",...,service="s"`: rendered once, also the series' key. */
  labelText: string;
  value: number;
  sum: number;
  count: number;
  /** Per-bucket (not cumulative) counts; the last is the +Inf bucket. */
  buckets: Float64Array | undefined;
  updatedAt: number;
  /** What the series' lines take on a scrape (see {@link renderedBytes}), counted in the store's total. */
  bytes: number;
}

interface Family {
  /** Exported name (a counter's ends in `_total`). */
  name: string;
  type: IngestMetricType;
  /** `# HELP ... \n# TYPE ...\n`, rendered once. */
  header: string;
  labelKeys: string[];
  keySet: Set<string>;
  bounds: number[] | undefined;
  /** `le="..."` of each bucket, +Inf last. */
  leText: string[] | undefined;
  /** Every sample name the family renders (reserved while it exists). */
  sampleNames: string[];
  series: Map<string, Series>;
}

/**
 * Series by name and labels, with every bound of the `metrics` config enforced per sample: nothing
 * half-applied, nothing unbounded. Not thread-shared: Node's single thread applies each sample whole.
 */
export class MetricIngestStore {
  private readonly families = new Map<string, Family>();
  /** Sample names used by ingested families, to keep renders unambiguous. */
  private readonly takenNames = new Map<string, Family>();
  private readonly limits: MetricIngestLimits;
  private readonly registry: Registry;
  private readonly clock: Clock;
  private readonly ttlMs: number;
  private readonly sweepEveryMs: number;
  private nextSweepAt: number;
  private seriesTotal = 0;
  /** Bytes of every series' lines on a scrape (bounded by max_ingest_bytes). */
  private bytesTotal = 0;
  private readonly maxBytes: number;
  /** Update time of the oldest series kept, or earlier (Infinity: none). */
  private oldestKept = Infinity;
  private readonly rejectedCounter: PromCounter;

  constructor(options: MetricIngestStoreOptions) {
    this.limits = options.limits;
    this.registry = options.registry;
    this.clock = options.clock ?? systemClock;
    this.ttlMs = this.limits.series_ttl_seconds * 1000;
    this.maxBytes = this.limits.max_ingest_bytes ?? Infinity;
    // Expiry runs lazily (on writes and scrapes), at most this often: a sweep visits every series.
    this.sweepEveryMs = Math.min(1000, this.ttlMs);
    this.nextSweepAt = this.clock.monotonic() + this.sweepEveryMs;
    const own = (name: string) => makeMetricName({ prefix: this.limits.prefix ?? '' }, name);
    this.rejectedCounter = new PromCounter({
      name: counterExportName(own('monitor_ingest_samples_rejected')),
      help: 'Ingested samples and OTLP data points not recorded, by reason',
      labelNames: ['reason'],
      registers: [this.registry],
    });
    // Every reason shows from the start, so a rate() over it never misses the first rejection.
    for (const reason of REJECTION_REASONS) this.rejectedCounter.inc({ reason }, 0);
    // Read at scrape time, before the ingested series are appended.
    const seriesGauge = new PromGauge({
      name: own('monitor_ingest_series'),
      help: 'Ingested series held (bounded by metrics.max_series)',
      registers: [this.registry],
      collect: () => {
        this.sweep(false);
        seriesGauge.set(this.seriesTotal);
      },
    });
    const bytesGauge = new PromGauge({
      name: own('monitor_ingest_bytes'),
      help: 'Bytes the ingested series take on a scrape, estimated (bounded by metrics.max_ingest_bytes)',
      registers: [this.registry],
      collect: () => {
        this.sweep(false);
        bytesGauge.set(this.bytesTotal);
      },
    });
    const namesGauge = new PromGauge({
      name: own('monitor_ingest_metric_names'),
      help: 'Ingested metric names held (bounded by max_metric_names)',
      registers: [this.registry],
      collect: () => {
        this.sweep(false);
        namesGauge.set(this.families.size);
      },
    });
  }

  /** Ingested series held now. */
  get seriesCount(): number {
    return this.seriesTotal;
  }

  /** Ingested metric names held now. */
  get metricNameCount(): number {
    return this.families.size;
  }

  /** Bytes the ingested series take on a scrape now, estimated (at most `max_ingest_bytes`). */
  get byteCount(): number {
    return this.bytesTotal;
  }

  /** Applies one operation to one series; undefined when recorded, else why not (and counted). */
  apply(key: SampleKey, op: SampleOp): Rejection | undefined {
    this.sweep(false);
    let rejection = this.applyUncounted(key, op);
    // A refusal that an expired series or name may cause is tried again once expired ones are gone
    // (a refused sample changed nothing, so the retry starts clean).
    if (rejection && RETRY_AFTER_SWEEP.has(rejection.reason) && this.sweep(true) > 0) {
      rejection = this.applyUncounted(key, op);
    }
    if (rejection) this.rejectedCounter.inc({ reason: rejection.reason });
    return rejection;
  }

  /** Counts a rejection decided outside the store (an OTLP point type the store does not take). */
  countRejection(reason: RejectionReason): void {
    this.rejectedCounter.inc({ reason });
  }

  /**
   * Removes the series not updated for `series_ttl_seconds`, and names left without series;
   * returns how many series went. Unforced, it runs at most once a second; either way it visits
   * the series only when the oldest one kept has expired.
   */
  sweep(force = true): number {
    const now = this.clock.monotonic();
    if (!force && now < this.nextSweepAt) return 0;
    this.nextSweepAt = now + this.sweepEveryMs;
    const expiredAt = now - this.ttlMs;
    if (this.oldestKept > expiredAt) return 0;
    let removed = 0;
    let oldestKept = Infinity;
    for (const family of this.families.values()) {
      for (const [k, s] of family.series) {
        if (s.updatedAt <= expiredAt) {
          family.series.delete(k);
          this.bytesTotal -= s.bytes;
          removed++;
        } else if (s.updatedAt < oldestKept) {
          oldestKept = s.updatedAt;
        }
      }
      if (family.series.size === 0) this.dropFamily(family);
    }
    this.seriesTotal -= removed;
    this.oldestKept = oldestKept;
    return removed;
  }

  /**
   * The ingested series in the Prometheus text format (0.0.4), one block per name. A name the
   * monitor's own registry has taken since it was ingested is left out: the monitor's metric wins.
   */
  render(): string {
    let out = '';
    for (const chunk of this.renderChunks()) out += chunk;
    return out;
  }

  /**
   * {@link render} in chunks of about `chunkChars` characters, whole lines each, so a scrape can be
   * streamed and other work (a liveness probe, other scrapes) can run between chunks: a large store
   * is never one string. Samples recorded between chunks may or may not be in the chunks still to
   * come (a series is always rendered whole); a name is never rendered twice in one scrape.
   */
  *renderChunks(chunkChars = RENDER_CHUNK_CHARS): Generator<string, void, undefined> {
    this.sweep(false);
    const rendered = new Set<string>();
    let out = '';
    for (const f of this.families.values()) {
      if (rendered.has(f.name) || this.registry.getSingleMetric(f.name)) continue;
      rendered.add(f.name);
      // A blank line between names, as prom-client writes them.
      out += rendered.size > 1 ? `\n${f.header}` : f.header;
      for (const s of f.series.values()) {
        out += seriesLines(f, s);
        if (out.length >= chunkChars) {
          yield out;
          out = '';
        }
      }
    }
    if (out !== '') yield out;
  }

  private applyUncounted(key: SampleKey, op: SampleOp): Rejection | undefined {
    const { name, type } = key;
    if (type !== 'counter' && type !== 'gauge' && type !== 'histogram' && type !== 'summary') {
      return reject('unknown_type', `metric ${quote(name)}: unknown type`);
    }
    if (name.length > MAX_NAME_LENGTH || !METRIC_NAME.test(name)) {
      return reject('invalid_name', `invalid metric name ${quote(name)}: expected [a-zA-Z_:][a-zA-Z0-9_:]*`);
    }
    const bad = checkOp(type, op);
    if (bad) return reject('invalid_value', `metric ${quote(name)}: ${bad}`);
    const limits = this.limits;
    if (key.description.length > limits.max_description_length) {
      return reject(
        'description_too_long',
        `metric ${quote(name)}: description longer than ${limits.max_description_length} characters`,
      );
    }
    if (key.service.length > limits.max_label_value_length) {
      return reject(
        'label_value_too_long',
        `metric ${quote(name)}: service longer than ${limits.max_label_value_length} characters`,
      );
    }
    const exportName = type === 'counter' ? counterExportName(name) : name;
    // A name keeps its first type also across the counter's `_total` form (`x` and `x_total`).
    let family =
      this.families.get(exportName) ?? this.families.get(name) ?? this.families.get(counterExportName(name));
    const labels = key.labels;
    let count = 0;
    for (const k in labels) {
      // Counted as they come, so a huge label map is refused before its keys are all checked.
      if (++count > limits.max_labels_per_sample) {
        return reject(
          'too_many_labels',
          `metric ${quote(name)}: more than ${limits.max_labels_per_sample} labels`,
        );
      }
      // Keys of a known family were checked when it was created; only unknown ones need the rules.
      if (!family?.keySet.has(k)) {
        const bad = checkLabelName(k, type);
        if (bad) return bad;
        if (family) {
          return reject(
            'label_mismatch',
            `metric ${quote(name)}: label ${quote(k)} is not one of its first use's keys`,
          );
        }
      }
      if (labels[k]!.length > limits.max_label_value_length) {
        return reject(
          'label_value_too_long',
          `metric ${quote(name)}: label ${quote(k)} longer than ${limits.max_label_value_length} characters`,
        );
      }
    }
    if (family) {
      if (family.type !== type) {
        return reject('type_mismatch', `metric ${quote(name)} is a ${family.type}, not a ${type}`);
      }
      if (op.kind === 'histogram' && !sameBounds(family.bounds!, op.bounds)) {
        return reject('bucket_mismatch', `metric ${quote(name)}: bucket bounds differ from its first use`);
      }
    } else {
      // Checked before the name is taken, so a refused sample never leaves a name without series.
      if (this.seriesTotal >= limits.max_series) {
        return reject('max_series', `metric ${quote(name)}: max_series (${limits.max_series}) reached`);
      }
      const created = this.createFamily(exportName, { ...key, type }, op);
      if ('reason' in created) return created;
      family = created;
    }
    const labelText = renderLabels(family.labelKeys, labels, key.service);
    let series = family.series.get(labelText);
    if (!series) {
      if (this.seriesTotal >= limits.max_series) {
        return reject('max_series', `metric ${quote(name)}: max_series (${limits.max_series}) reached`);
      }
      if (family.series.size >= limits.max_series_per_metric) {
        // A family made for this very sample always has room (the cap is at least 1).
        return reject(
          'max_series_per_metric',
          `metric ${quote(name)}: max_series_per_metric (${limits.max_series_per_metric}) reached`,
        );
      }
      const bytes = renderedBytes(family, labelText);
      if (this.bytesTotal + bytes > this.maxBytes) {
        return reject(
          'max_ingest_bytes',
          `metric ${quote(name)}: max_ingest_bytes (${this.maxBytes}) reached`,
        );
      }
      series = {
        labelText,
        value: 0,
        sum: 0,
        count: 0,
        buckets: family.bounds ? new Float64Array(family.bounds.length + 1) : undefined,
        updatedAt: 0,
        bytes,
      };
      family.series.set(labelText, series);
      this.seriesTotal++;
      this.bytesTotal += bytes;
    }
    applyOp(family, series, op);
    // Update times only grow, so the oldest kept is a lower bound until the next sweep.
    series.updatedAt = this.clock.monotonic();
    if (series.updatedAt < this.oldestKept) this.oldestKept = series.updatedAt;
    return undefined;
  }

  private createFamily(
    exportName: string,
    key: SampleKey & { type: IngestMetricType },
    op: SampleOp,
  ): Family | Rejection {
    const { type, name } = key;
    let bounds: number[] | undefined;
    if (type === 'histogram') {
      bounds = op.kind === 'histogram' ? [...op.bounds] : [...this.limits.histogram_buckets];
      if (bounds.length > MAX_BUCKETS) {
        return reject('invalid_value', `metric ${quote(name)}: more than ${MAX_BUCKETS} bucket bounds`);
      }
    }
    const sampleNames =
      type === 'histogram'
        ? [exportName, `${exportName}_bucket`, `${exportName}_sum`, `${exportName}_count`]
        : type === 'summary'
          ? [exportName, `${exportName}_sum`, `${exportName}_count`]
          : [exportName];
    const own = this.registryNames();
    for (const n of sampleNames) {
      if (own.has(n)) {
        return reject(
          'name_collision',
          `metric ${quote(name)}: the name is one of the monitor's own metrics`,
        );
      }
      if (this.takenNames.has(n)) {
        return reject('name_collision', `metric ${quote(name)}: ${quote(n)} is rendered by another metric`);
      }
    }
    if (this.families.size >= this.limits.max_metric_names) {
      return reject(
        'max_metric_names',
        `metric ${quote(name)}: max_metric_names (${this.limits.max_metric_names}) reached`,
      );
    }
    const labelKeys = Object.keys(key.labels).sort();
    const description = key.description || `${name} (ingested ${type})`;
    const family: Family = {
      name: exportName,
      type,
      header: `# HELP ${exportName} ${escapeHelp(description)}\n# TYPE ${exportName} ${type}\n`,
      labelKeys,
      keySet: new Set(labelKeys),
      bounds,
      leText: bounds ? [...bounds.map((b) => `le="${num(b)}"`), 'le="+Inf"'] : undefined,
      sampleNames,
      series: new Map(),
    };
    this.families.set(exportName, family);
    for (const n of sampleNames) this.takenNames.set(n, family);
    return family;
  }

  private dropFamily(family: Family): void {
    this.families.delete(family.name);
    for (const n of family.sampleNames) this.takenNames.delete(n);
  }

  /** The sample names the monitor's own registry renders. */
  private registryNames(): Set<string> {
    const names = new Set<string>();
    for (const m of this.registry.getMetricsAsArray()) {
      const { name, type } = m as unknown as { name: string; type: string };
      names.add(name);
      if (type === 'histogram') names.add(`${name}_bucket`);
      if (type === 'histogram' || type === 'summary') names.add(`${name}_sum`).add(`${name}_count`);
    }
    return names;
  }
}

/** The lines of one series in the text format. */
function seriesLines(f: Family, s: Series): string {
  if (f.type === 'counter' || f.type === 'gauge') return `${f.name}{${s.labelText}} ${num(s.value)}\n`;
  let out = '';
  if (f.type === 'histogram') {
    const le = f.leText!;
    const b = s.buckets!;
    let cumulative = 0;
    for (let i = 0; i < le.length; i++) {
      cumulative += b[i]!;
      out += `${f.name}_bucket{${s.labelText},${le[i]}} ${num(cumulative)}\n`;
    }
  }
  return `${out}${f.name}_sum{${s.labelText}} ${num(s.sum)}\n${f.name}_count{${s.labelText}} ${num(s.count)}\n`;
}

// A sample's value as written: at most 24 characters (`-1.2345678901234567e+308`), plus the
// space, the braces and the newline.
const VALUE_CHARS = 28;

/**
 * What one series takes on a scrape (in characters: label values are counted in UTF-16 code units),
 * its label block repeated on each of its lines: one for a counter or gauge, two for a summary
 * (`_sum`, `_count`), and one per bucket plus two for a histogram.
 */
function renderedBytes(f: Family, labelText: string): number {
  const line = f.name.length + labelText.length + VALUE_CHARS;
  if (f.type === 'counter' || f.type === 'gauge') return line;
  if (f.type === 'summary') return 2 * (line + 6);
  return f.leText!.reduce((n, le) => n + line + 8 + le.length, 2 * (line + 6));
}

function reject(reason: RejectionReason, message: string): Rejection {
  return { reason, message };
}

function quote(s: string): string {
  return JSON.stringify(s.length > MAX_QUOTED ? `${cutText(s, MAX_QUOTED)}...` : s);
}

function checkLabelName(k: string, type: IngestMetricType): Rejection | undefined {
  if (k.length > MAX_NAME_LENGTH || !LABEL_NAME.test(k)) {
    return reject('invalid_label_name', `invalid label name ${quote(k)}: expected [a-zA-Z_][a-zA-Z0-9_]*`);
  }
  if (k.startsWith('__') || k === 'service') {
    return reject('reserved_label_name', `label name ${quote(k)} is reserved for the monitor`);
  }
  if ((k === 'le' && type === 'histogram') || (k === 'quantile' && type === 'summary')) {
    return reject('reserved_label_name', `label name ${quote(k)} is reserved for a ${type}`);
  }
  return undefined;
}

/** Why an operation's numbers are unusable for the type, or undefined. */
function checkOp(type: IngestMetricType, op: SampleOp): string | undefined {
  switch (op.kind) {
    case 'add':
    case 'set':
    case 'observe':
      if (!Number.isFinite(op.value)) return 'the value must be a finite number';
      if (type === 'counter' && op.value < 0) return 'a counter takes non-negative values';
      return undefined;
    case 'histogram': {
      if (type !== 'histogram') return 'histogram data for a non-histogram';
      const { bounds, counts } = op;
      if (!bounds.every((b, i) => Number.isFinite(b) && (i === 0 || b > bounds[i - 1]!))) {
        return 'bucket bounds must be finite and increasing';
      }
      if (counts.length !== bounds.length + 1) return 'expected one bucket count per bound, plus one';
      if (!counts.every((c) => Number.isFinite(c) && c >= 0)) return 'bucket counts must be non-negative';
      if (!Number.isFinite(op.sum) || !Number.isFinite(op.count) || op.count < 0) {
        return 'sum and count must be finite, count non-negative';
      }
      return undefined;
    }
    case 'summary':
      if (type !== 'summary') return 'summary data for a non-summary';
      if (!Number.isFinite(op.sum) || !Number.isFinite(op.count) || op.count < 0) {
        return 'sum and count must be finite, count non-negative';
      }
      return undefined;
  }
}

function applyOp(family: Family, s: Series, op: SampleOp): void {
  switch (op.kind) {
    case 'add':
      s.value += op.value;
      return;
    case 'set':
      s.value = op.value;
      return;
    case 'observe':
      s.sum += op.value;
      s.count++;
      if (s.buckets) {
        const bounds = family.bounds!;
        let i = 0;
        while (i < bounds.length && op.value > bounds[i]!) i++;
        s.buckets[i]!++;
      }
      return;
    case 'histogram': {
      const b = s.buckets!;
      if (op.cumulative) b.fill(0);
      for (let i = 0; i < b.length; i++) b[i] = b[i]! + op.counts[i]!;
      s.sum = op.cumulative ? op.sum : s.sum + op.sum;
      s.count = op.cumulative ? op.count : s.count + op.count;
      return;
    }
    case 'summary':
      s.sum = op.cumulative ? op.sum : s.sum + op.sum;
      s.count = op.cumulative ? op.count : s.count + op.count;
      return;
  }
}

function sameBounds(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((v, i) => v === b[i]);
}

/** The label block of a series: the family's keys in order (missing ones ""), then `service`. */
function renderLabels(
  keys: readonly string[],
  labels: Readonly<Record<string, string>>,
  service: string,
): string {
  let out = '';
  for (const k of keys) {
    // Not `?? ''`: a key such as `constructor` left out would read Object.prototype's.
    const v = Object.hasOwn(labels, k) ? labels[k]! : '';
    out += `${k}="${escapeLabelValue(v)}",`;
  }
  return `${out}service="${escapeLabelValue(service)}"`;
}

function escapeLabelValue(v: string): string {
  if (!NEEDS_ESCAPE.test(v)) return v;
  return v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');
}

function escapeHelp(v: string): string {
  return v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');
}

/** A sample value as the text format writes it (Go's ParseFloat reads JavaScript's numbers). */
function num(v: number): string {
  if (v === Infinity) return '+Inf';
  if (v === -Infinity) return '-Inf';
  return String(v);
}

/**
 * Makes every render of `registry` (the monitor's `/metrics`, text or OpenMetrics) end with the
 * store's series: streamed in chunks on `/metrics` (the scrape is never one string, and other
 * requests are answered between chunks), and as one string from `registry.metrics()`.
 */
export function appendToRegistry(registry: Registry, store: MetricIngestStore): void {
  appendExposition(registry, () => store.renderChunks());
}
