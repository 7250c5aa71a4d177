/**
 * The OpenTelemetry metrics backend: metrics go through the OTel SDK (a MeterProvider with a
 * periodic reader) to an exporter made by the metrics exporter registry; `export(spans)` goes to an
 * exporter made by the tracing registry. Tracing itself (Tracer, spans) lives elsewhere.
 */
import {
  type Attributes,
  type Counter,
  type Gauge,
  type Histogram,
  type Meter,
  trace,
} from '@opentelemetry/api';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { MeterProvider, PeriodicExportingMetricReader } from '@opentelemetry/sdk-metrics';
import type { ReadableSpan, SpanExporter } from '@opentelemetry/sdk-trace-base';
import { type Logger, silentLogger } from '../../logging/logger';
import { BackendNotAvailableError } from '../errors';
import { MetricsExporterRegistry, TracingExporterRegistry } from '../exporters';
import type { ExporterConfig, Labels, MetricType, OpenTelemetryConfig } from '../types';
import type { MetricsBackend } from './backend';

/** Options of OpenTelemetryBackend. */
export interface OpenTelemetryBackendOptions {
  service_name: string;
  /** OTLP endpoint; overrides `config.endpoint`. */
  endpoint?: string | null;
  config?: Partial<OpenTelemetryConfig>;
  tracing_exporter_registry?: TracingExporterRegistry;
  metrics_exporter_registry?: MetricsExporterRegistry;
  /** Exporter type; `otlp` when an endpoint is known, `console` otherwise. */
  exporter?: string;
  logger?: Logger;
}

type Instrument = { type: MetricType; counter?: Counter; gauge?: Gauge; histogram?: Histogram };

/** Metrics through the OpenTelemetry SDK. */
export class OpenTelemetryBackend implements MetricsBackend {
  private provider: MeterProvider | undefined;
  private meter: Meter | undefined;
  private spanExporter: SpanExporter | undefined;
  private readonly instruments = new Map<string, Instrument>();
  private readonly logger: Logger;
  private readonly exporterConfig: ExporterConfig;

  constructor(private readonly options: OpenTelemetryBackendOptions) {
    this.logger = options.logger ?? silentLogger();
    const c = options.config ?? {};
    const endpoint = options.endpoint ?? c.endpoint ?? null;
    this.exporterConfig = {
      type: options.exporter ?? (endpoint ? 'otlp' : 'console'),
      endpoint,
      headers: c.headers ?? {},
      timeout: c.timeout,
      compression: c.compression,
    };
  }

  /** Builds the MeterProvider with a periodic reader on the configured exporter. */
  async initialize(): Promise<void> {
    if (this.provider) return;
    const metricsRegistry = this.options.metrics_exporter_registry ?? MetricsExporterRegistry.withDefaults();
    const tracingRegistry = this.options.tracing_exporter_registry ?? TracingExporterRegistry.withDefaults();
    const exporter = metricsRegistry.createExporter(this.exporterConfig);
    if (!exporter) {
      this.logger.warn(
        { exporter: this.exporterConfig.type },
        'no metric exporter for this type; metrics stay local',
      );
    }
    this.spanExporter = tracingRegistry.createExporter(this.exporterConfig);
    const c = this.options.config ?? {};
    const intervalMs = Math.max(1, Math.round((c.export_interval ?? 60) * 1000));
    const timeoutMs = Math.min(intervalMs, Math.max(1, Math.round((c.timeout ?? 30) * 1000)));
    this.provider = new MeterProvider({
      resource: resourceFromAttributes({ 'service.name': this.options.service_name }),
      readers: exporter
        ? [
            new PeriodicExportingMetricReader({
              exporter,
              exportIntervalMillis: intervalMs,
              exportTimeoutMillis: timeoutMs,
            }),
          ]
        : [],
    });
    this.meter = this.provider.getMeter(this.options.service_name);
  }

  /** Exports what is pending and stops the provider. */
  async shutdown(): Promise<void> {
    const provider = this.provider;
    this.provider = undefined;
    this.meter = undefined;
    this.instruments.clear();
    if (provider) await provider.shutdown();
    if (this.spanExporter) await this.spanExporter.shutdown();
  }

  /** Exports pending metrics now. */
  async forceFlush(): Promise<void> {
    await this.provider?.forceFlush();
  }

  /** Records through an OTel counter, gauge or histogram named `name`. */
  recordMetric(name: string, value: number, metricType: MetricType, labels?: Labels): void {
    const meter = this.meter;
    if (!meter) throw new BackendNotAvailableError('the OpenTelemetry backend is not initialized');
    let instrument = this.instruments.get(name);
    if (!instrument) {
      instrument = { type: metricType };
      if (metricType === 'counter') instrument.counter = meter.createCounter(name);
      else if (metricType === 'gauge') instrument.gauge = meter.createGauge(name);
      else instrument.histogram = meter.createHistogram(name);
      this.instruments.set(name, instrument);
    } else if (instrument.type !== metricType) {
      this.logger.warn(
        { metric: name, type: metricType, existing: instrument.type },
        'metric type mismatch; dropped',
      );
      return;
    }
    const attributes: Attributes = { ...(labels ?? {}) };
    instrument.counter?.add(value, attributes);
    instrument.gauge?.record(value, attributes);
    instrument.histogram?.record(value, attributes);
  }

  /** Hands finished spans to the span exporter. */
  export(spans: readonly unknown[]): Promise<void> {
    const exporter = this.spanExporter;
    if (!exporter || spans.length === 0) return Promise.resolve();
    return new Promise((resolve) => {
      exporter.export(spans as ReadableSpan[], (result) => {
        if (result.code !== 0) this.logger.warn({ err: result.error }, 'span export failed');
        resolve();
      });
    });
  }

  /** Starts a span on the globally registered tracer (a no-op span when none is registered). */
  createSpan(name: string, _parentContext?: unknown) {
    return trace.getTracer(this.options.service_name).startSpan(name);
  }
}
