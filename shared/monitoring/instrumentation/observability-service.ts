/**
 * `ObservabilityService`: one handle for application code on the tracer and the metrics collector,
 * falling back to the no-op versions when either is not configured. `counter` and `histogram` give
 * `MetricProxy` handles; `timed` records a duration histogram (seconds) around a function.
 */
import type { Attributes } from '@opentelemetry/api';
import {
  MetricProxy,
  type MetricsCollector,
  type MetricsCollectorProtocol,
  NoopMetricsCollector,
} from '../collector';
import type { Metric } from '../instruments';
import type { SpanLike } from '../tracing/span';
import { NoopTracer, type TracerProtocol } from '../tracing/tracer';

/** The tracer and the collector (the spec's meter). */
export class ObservabilityService {
  readonly tracer: TracerProtocol;
  readonly meter: MetricsCollectorProtocol;

  constructor(tracer?: TracerProtocol | null, meter?: MetricsCollectorProtocol | null) {
    this.tracer = tracer ?? new NoopTracer();
    this.meter = meter ?? new NoopMetricsCollector();
  }

  /** Adds an instrument to the collector (a no-op on the no-op collector). */
  registerMetric<M extends Metric>(metric: M): M {
    const m = this.meter as Partial<Pick<MetricsCollector, 'registerMetric'>>;
    return m.registerMetric ? m.registerMetric(metric) : metric;
  }

  /** Runs `fn` in a span `name` with `attributes`; the span ends when `fn` returns or settles. */
  trace<T>(name: string, attributes: Attributes, fn: (span: SpanLike) => T): T {
    return this.tracer.startActiveSpan(name, { attributes }, fn);
  }

  /** A counter handle. */
  counter(name: string): MetricProxy {
    return new MetricProxy(name, this.meter, 'counter');
  }

  /** A histogram handle. */
  histogram(name: string): MetricProxy {
    return new MetricProxy(name, this.meter, 'histogram');
  }

  /** Runs `fn` and records its elapsed seconds in the histogram `metricName`, also when it throws. */
  timed<T>(metricName: string, fn: () => T): T {
    const started = performance.now();
    const record = () => this.meter.histogram(metricName, (performance.now() - started) / 1000);
    let result: T;
    try {
      result = fn();
    } catch (err) {
      record();
      throw err;
    }
    if (result instanceof Promise) return result.finally(record) as T;
    record();
    return result;
  }
}
