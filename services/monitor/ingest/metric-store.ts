/**
 * The ingested series store: what other services push with RecordMetrics or OTLP, aggregated by
 * metric name and label values (plus the `service` label), bounded by the `metrics` config, and
 * rendered in the Prometheus text format after the monitor's own metrics on its `/metrics`.
 * Its parts: the sample checks (./metric-validation.ts), what is held (./metric-series.ts), expiry
 * (./metric-expiry.ts) and the text format (./metric-render.ts); the store holds the bounds and puts
 * them together. Decisions (names, types, buckets, summaries, expiry) are in ./README.md.
 */
import type { Registry } from 'prom-client';
import { Counter as PromCounter, Gauge as PromGauge } from 'prom-client';
import { type Clock, systemClock } from '../../../shared/runtime/clock';
import { longerThan } from '../../../shared/text/check';
import { counterExportName, makeMetricName } from '../../../shared/monitoring/metric-names';
import { SeriesExpiry } from './metric-expiry';
import {
  familyHeader,
  leLabels,
  renderedBytes,
  renderFamilies,
  renderLabels,
  RENDER_CHUNK_CHARS,
} from './metric-render';
import { applyOp, type Family, sampleNamesOf } from './metric-series';
import {
  checkLabelName,
  checkMetricName,
  checkOp,
  type IngestMetricType,
  MAX_BUCKETS,
  quote,
  reject,
  type Rejection,
  type RejectionReason,
  REJECTION_REASONS,
  RETRY_AFTER_SWEEP,
  sameBounds,
  type SampleOp,
} from './metric-validation';

export {
  type IngestMetricType,
  MAX_BUCKETS,
  MAX_NAME_LENGTH,
  type Rejection,
  type RejectionReason,
  REJECTION_REASONS,
  type SampleOp,
} from './metric-validation';
export { appendToRegistry, RENDER_CHUNK_CHARS } from './metric-render';

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
  private readonly expiry: SeriesExpiry;
  private seriesTotal = 0;
  /** Bytes of every series' lines on a scrape (bounded by max_ingest_bytes). */
  private bytesTotal = 0;
  private readonly maxBytes: number;
  private readonly rejectedCounter: PromCounter;
  private readonly counterListeners: CounterListener[] = [];

  constructor(options: MetricIngestStoreOptions) {
    this.limits = options.limits;
    this.registry = options.registry;
    this.clock = options.clock ?? systemClock;
    this.maxBytes = this.limits.max_ingest_bytes ?? Infinity;
    // Expiry runs lazily (on writes and scrapes), with no timer.
    this.expiry = new SeriesExpiry(this.clock, this.limits.series_ttl_seconds * 1000);
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
    const expiredAt = this.expiry.expiredAt(force);
    if (expiredAt === undefined) return 0;
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
    this.expiry.swept(oldestKept);
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
    yield* renderFamilies(this.families.values(), this.registry, chunkChars);
  }

  private applyUncounted(key: SampleKey, op: SampleOp): Rejection | undefined {
    const { name, type } = key;
    if (type !== 'counter' && type !== 'gauge' && type !== 'histogram' && type !== 'summary') {
      return reject('unknown_type', `metric ${quote(name)}: unknown type`);
    }
    const badName = checkMetricName(name);
    if (badName) return badName;
    const bad = checkOp(type, op);
    if (bad) return reject('invalid_value', `metric ${quote(name)}: ${bad}`);
    const limits = this.limits;
    // Limits in characters count code points (an emoji is one); the cheap path skips the count.
    if (longerThan(key.description, limits.max_description_length)) {
      return reject(
        'description_too_long',
        `metric ${quote(name)}: description longer than ${limits.max_description_length} characters`,
      );
    }
    if (longerThan(key.service, limits.max_label_value_length)) {
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
      if (longerThan(labels[k]!, limits.max_label_value_length)) {
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
    const increase = type === 'counter' ? counterIncrease(series, op) : 0;
    applyOp(family, series, op);
    series.updatedAt = this.expiry.touch();
    if (increase > 0 && this.counterListeners.length > 0)
      this.notifyCounter(name, labels, key.service, increase);
    return undefined;
  }

  /**
   * Calls `listener` with every increase of an ingested counter (RecordMetrics `add`, OTLP deltas,
   * and cumulative OTLP sums as the difference to the last value): what ratio SLOs with a metric
   * source count (slo/metric-source.ts). A listener that throws never fails an
   * ingest (listeners log their own errors).
   */
  addCounterListener(listener: CounterListener): void {
    this.counterListeners.push(listener);
  }

  private notifyCounter(
    name: string,
    labels: Record<string, string>,
    service: string,
    increase: number,
  ): void {
    const all = service === '' ? labels : { ...labels, service };
    for (const l of this.counterListeners) {
      try {
        l(name, all, increase);
      } catch {
        // A listener's failure is its own (it logs); the sample is recorded either way.
      }
    }
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
    const sampleNames = sampleNamesOf(exportName, type);
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
      header: familyHeader(exportName, type, description),
      labelKeys,
      keySet: new Set(labelKeys),
      bounds,
      leText: bounds ? leLabels(bounds) : undefined,
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

/** Receives each increase of an ingested counter: its name as sent, its labels (and `service`), the increase. */
export type CounterListener = (
  name: string,
  labels: Readonly<Record<string, string>>,
  increase: number,
) => void;

/**
 * How much a counter sample raises its series: an `add` by its value; a cumulative `set` by the
 * difference to the last value, or by the whole value after a reset (it went down). The first
 * cumulative value of a new series is its baseline, not an increase: what happened before the
 * monitor saw it is unknown.
 */
function counterIncrease(series: { value: number; updatedAt: number }, op: SampleOp): number {
  if (op.kind === 'add') return op.value;
  if (op.kind !== 'set' || series.updatedAt === 0) return 0;
  return op.value >= series.value ? op.value - series.value : op.value;
}
