/**
 * MetricsCollector: creates and keeps instruments by name, binds them to one prom-client Registry
 * (so they share `/metrics` with everything else in the process) and applies MetricsConfig: name
 * prefix, default labels and histogram buckets. Also the no-op collector and MetricProxy.
 */
import { Registry } from 'prom-client';
import { InvalidMetricError, MetricNotFoundError } from './errors';
import {
  Counter,
  Gauge,
  Histogram,
  type InstrumentOptions,
  type InstrumentType,
  type Metric,
  Summary,
} from './instruments';
import { makeMetricName, sanitizeMetricName, counterExportName } from './metric-names';
import type { MetricsConfig } from './config';
import type { Labels } from './types';
import { MonitoringEventKind, type MonitoringEventBus, monitoringEvents } from './events/event-bus';

/** What application code records through; MetricsCollector and NoopMetricsCollector implement it. */
export interface MetricsCollectorProtocol {
  increment(name: string, value?: number, tags?: Labels): void;
  gauge(name: string, value: number, tags?: Labels): void;
  histogram(name: string, value: number, tags?: Labels): void;
}

/** Options of MetricsCollector. */
export interface MetricsCollectorOptions {
  /** The process registry; a new one is created when omitted. */
  registry?: Registry;
  /** Prefix, default labels and buckets; `enabled: false` is honoured by choosing the no-op collector. */
  config?: Partial<MetricsConfig>;
  /** Where "metric data point recorded" is emitted (the process bus by default). */
  events?: MonitoringEventBus;
}

type InstrumentClass = typeof Counter | typeof Gauge | typeof Histogram | typeof Summary;

/** Creates instruments and keeps them by name. */
export class MetricsCollector implements MetricsCollectorProtocol {
  /** The registry every instrument is exported through. */
  readonly registry: Registry;
  private readonly config: Partial<MetricsConfig>;
  private readonly metrics = new Map<string, Metric>();
  private readonly events: MonitoringEventBus;

  constructor(options: MetricsCollectorOptions = {}) {
    this.registry = options.registry ?? new Registry();
    this.config = options.config ?? {};
    this.events = options.events ?? monitoringEvents;
  }

  /** The exported name of `name`: prefixed by the config and sanitized. */
  makeMetricName(name: string): string {
    return sanitizeMetricName(makeMetricName({ prefix: this.config.prefix ?? '' }, name));
  }

  /** Adds an instrument built elsewhere and binds it to the registry. */
  registerMetric<M extends Metric>(metric: M): M {
    const existing = this.metrics.get(metric.name);
    if (existing === metric) return metric;
    if (existing) throw new InvalidMetricError(`metric ${metric.name} is already registered`);
    const base = this.makeMetricName(metric.name);
    metric.bind(this.registry, metric.type === 'counter' ? counterExportName(base) : base);
    this.metrics.set(metric.name, metric);
    return metric;
  }

  /** Creates (or returns the existing) counter. */
  createCounter(name: string, description = '', labels?: Labels, options?: InstrumentOptions): Counter {
    return this.getOrCreate(
      Counter,
      name,
      () => new Counter(name, description, this.withDefaults(labels), options),
    );
  }

  /** Creates (or returns the existing) gauge. */
  createGauge(name: string, description = '', labels?: Labels, options?: InstrumentOptions): Gauge {
    return this.getOrCreate(
      Gauge,
      name,
      () => new Gauge(name, description, this.withDefaults(labels), options),
    );
  }

  /** Creates (or returns the existing) histogram; buckets default to the config's. */
  createHistogram(
    name: string,
    description = '',
    labels?: Labels,
    buckets?: readonly number[],
    options?: InstrumentOptions,
  ): Histogram {
    const chosen =
      buckets ?? (this.config.histogram_buckets?.length ? this.config.histogram_buckets : undefined);
    return this.getOrCreate(
      Histogram,
      name,
      () => new Histogram(name, description, this.withDefaults(labels), { ...options, buckets: chosen }),
    );
  }

  /** Creates (or returns the existing) summary. */
  createSummary(name: string, description = '', labels?: Labels, options?: InstrumentOptions): Summary {
    return this.getOrCreate(
      Summary,
      name,
      () => new Summary(name, description, this.withDefaults(labels), options),
    );
  }

  /** The instrument registered under `name`, or undefined. */
  getMetric(name: string): Metric | undefined {
    return this.metrics.get(name);
  }

  /** The instrument registered under `name`; MetricNotFoundError when there is none. */
  requireMetric(name: string): Metric {
    const metric = this.metrics.get(name);
    if (!metric) throw new MetricNotFoundError(`metric ${name} not found`);
    return metric;
  }

  /** All instruments by name. */
  getAllMetrics(): Map<string, Metric> {
    return new Map(this.metrics);
  }

  /** Forgets every instrument and removes them from the registry (other metrics there stay). */
  clear(): void {
    for (const metric of this.metrics.values()) metric.unbind();
    this.metrics.clear();
  }

  /** Adds `value` to the counter `name`, creating it on first use with the keys of `tags`. */
  increment(name: string, value = 1, tags?: Labels): void {
    this.createCounter(name).record(value, tags);
    this.recorded(name, value);
  }

  /** Sets the gauge `name`. */
  gauge(name: string, value: number, tags?: Labels): void {
    this.createGauge(name).record(value, tags);
    this.recorded(name, value);
  }

  /** Observes `value` on the histogram `name`. */
  histogram(name: string, value: number, tags?: Labels): void {
    this.createHistogram(name).record(value, tags);
    this.recorded(name, value);
  }

  /** Emits "metric data point recorded" after a successful record, only when someone listens. */
  private recorded(name: string, value: number): void {
    if (this.events.hasListeners(MonitoringEventKind.METRIC_DATA_POINT_RECORDED)) {
      this.events.emit(MonitoringEventKind.METRIC_DATA_POINT_RECORDED, { metric_name: name, value });
    }
  }

  private withDefaults(labels: Labels | undefined): Labels | undefined {
    const defaults = this.config.default_labels;
    if (!defaults || Object.keys(defaults).length === 0) return labels;
    return { ...defaults, ...(labels ?? {}) };
  }

  private getOrCreate<C extends InstrumentClass>(
    cls: C,
    name: string,
    make: () => InstanceType<C>,
  ): InstanceType<C> {
    const existing = this.metrics.get(name);
    if (existing) {
      if (existing instanceof cls) return existing as InstanceType<C>;
      throw new InvalidMetricError(`metric ${name} exists with type ${existing.type}`);
    }
    return this.registerMetric(make());
  }
}

/**
 * Drops everything. `create*` return the collector itself, which answers every instrument
 * operation with nothing.
 */
export class NoopMetricsCollector implements MetricsCollectorProtocol {
  readonly type: InstrumentType = 'counter';
  registerMetric<M extends Metric>(metric: M): M {
    return metric;
  }
  createCounter(..._args: unknown[]): this {
    return this;
  }
  createGauge(..._args: unknown[]): this {
    return this;
  }
  createHistogram(..._args: unknown[]): this {
    return this;
  }
  createSummary(..._args: unknown[]): this {
    return this;
  }
  getMetric(_name: string): undefined {
    return undefined;
  }
  getAllMetrics(): Map<string, Metric> {
    return new Map();
  }
  clear(): void {}
  increment(_name?: unknown, _value?: unknown, _tags?: unknown): void {}
  gauge(_name: string, _value: number, _tags?: Labels): void {}
  histogram(_name: string, _value: number, _tags?: Labels): void {}
  record(_value: number, _labels?: Labels): void {}
  set(_value: number, _labels?: Labels): void {}
  decrement(_amount?: number, _labels?: Labels): void {}
  observe(_value: number, _labels?: Labels): void {}
  getCount(): number {
    return 0;
  }
  getValue(): number {
    return 0;
  }
  getObservations(): number[] {
    return [];
  }
  getBucketCounts(): Map<number, number> {
    return new Map();
  }
  reset(): void {}
}

/** Kinds a MetricProxy forwards to. */
export type MetricProxyType = 'counter' | 'gauge' | 'histogram';

/** A named handle on a collector metric that also tracks a local counter value. */
export class MetricProxy {
  private local = 0;

  constructor(
    readonly name: string,
    private readonly collector: MetricsCollectorProtocol,
    readonly metricsType: MetricProxyType = 'counter',
  ) {}

  /** Adds `amount` (default 1) to the local value and records it through the collector. */
  increment(amount = 1): void {
    this.local += amount;
    if (this.metricsType === 'counter') this.collector.increment(this.name, amount);
    else this.forward(amount);
  }

  /** Records `value` according to the proxy's type. */
  record(value: number): void {
    if (this.metricsType === 'counter') {
      this.local += value;
      this.collector.increment(this.name, value);
    } else {
      this.forward(value);
    }
  }

  /** The counter value tracked locally. */
  get value(): number {
    return this.local;
  }

  private forward(value: number): void {
    if (this.metricsType === 'gauge') this.collector.gauge(this.name, value);
    else this.collector.histogram(this.name, value);
  }
}

/** The collector a MetricsConfig asks for: the no-op one when `enabled` is false. */
export function createMetricsCollector(
  config: Partial<MetricsConfig> | undefined,
  registry?: Registry,
): MetricsCollector | NoopMetricsCollector {
  if (config?.enabled === false) return new NoopMetricsCollector();
  return new MetricsCollector({ registry, config });
}
