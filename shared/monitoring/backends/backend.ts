/**
 * The metrics backend protocol and the no-op backend (the default).
 */
import type { Labels, MetricType } from '../types';

/** What every metrics backend implements. */
export interface MetricsBackend {
  initialize(): Promise<void>;
  shutdown(): Promise<void>;
  recordMetric(name: string, value: number, metricType: MetricType, labels?: Labels): void | Promise<void>;
  /** Hands finished spans to the backend's span exporter, when it has one. */
  export(spans: readonly unknown[]): void | Promise<void>;
}

/** A span that records nothing, returned by backends that do not trace. */
export class DummySpan {
  /** Attributes set on the span, kept for inspection. */
  readonly attributes: Record<string, unknown> = {};
  private ended = false;

  constructor(readonly name: string) {}

  setAttribute(key: string, value: unknown): this {
    this.attributes[key] = value;
    return this;
  }
  addEvent(_name: string, _attributes?: Record<string, unknown>): this {
    return this;
  }
  setStatus(_status: unknown): this {
    return this;
  }
  recordException(_exception: unknown): void {}
  end(): void {
    this.ended = true;
  }
  /** Alias of end(). */
  finish(): void {
    this.end();
  }
  /** True once ended. */
  isEnded(): boolean {
    return this.ended;
  }
  getDuration(): number | null {
    return null;
  }
}

/** Drops everything. */
export class NoopMetricsBackend implements MetricsBackend {
  async initialize(): Promise<void> {}
  async shutdown(): Promise<void> {}
  recordMetric(_name: string, _value: number, _metricType: MetricType, _labels?: Labels): void {}
  export(_spans: readonly unknown[]): void {}
  createSpan(name: string, _parentContext?: unknown): DummySpan {
    return new DummySpan(name);
  }
}
