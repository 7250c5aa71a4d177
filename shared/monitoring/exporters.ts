/**
 * Exporter registries for metrics and tracing. A registry asks its handlers in order (the most
 * recently registered first) for one that can handle the exporter type; an unknown type gives
 * undefined, not an error. Defaults: `console` and `otlp` (OTLP over HTTP, endpoint and headers from
 * the config).
 */
import { OTLPMetricExporter } from '@opentelemetry/exporter-metrics-otlp-http';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { ConsoleMetricExporter, type PushMetricExporter } from '@opentelemetry/sdk-metrics';
import { ConsoleSpanExporter, type SpanExporter } from '@opentelemetry/sdk-trace-base';
import type { ExporterConfig } from './types';

/** Creates exporters of the types it can handle. */
export interface ExporterHandler<T> {
  canHandle(exporterType: string): boolean;
  createExporter(config: ExporterConfig): T;
}

/** Ordered handlers; the first that can handle a type creates its exporter. */
export class ExporterRegistry<T> {
  private readonly handlers: ExporterHandler<T>[] = [];

  /** Adds a handler in front of the others, so it wins over earlier ones. */
  register(handler: ExporterHandler<T>): this {
    this.handlers.unshift(handler);
    return this;
  }

  /** The exporter for `config.type`, or undefined when no handler can make one. */
  createExporter(config: ExporterConfig): T | undefined {
    const handler = this.handlers.find((h) => h.canHandle(config.type));
    return handler?.createExporter(config);
  }
}

/**
 * The OTLP/HTTP URL of a signal: an endpoint without a path gets the standard `/v1/<signal>`; one
 * with a path is used as given.
 */
export function otlpUrl(
  endpoint: string | null | undefined,
  signal: 'metrics' | 'traces',
): string | undefined {
  if (!endpoint) return undefined;
  const url = new URL(endpoint);
  if (url.pathname === '' || url.pathname === '/') url.pathname = `/v1/${signal}`;
  return url.toString();
}

function otlpOptions(config: ExporterConfig, signal: 'metrics' | 'traces') {
  return {
    url: otlpUrl(config.endpoint, signal),
    headers: config.headers ?? {},
    ...(config.timeout ? { timeoutMillis: Math.round(config.timeout * 1000) } : {}),
    // The exporter's CompressionAlgorithm enum has exactly these string values.
    ...(config.compression ? { compression: config.compression as never } : {}),
  };
}

/** `console` metric exporter. */
export class ConsoleMetricExporterHandler implements ExporterHandler<PushMetricExporter> {
  canHandle(exporterType: string): boolean {
    return exporterType === 'console';
  }
  createExporter(_config: ExporterConfig): PushMetricExporter {
    return new ConsoleMetricExporter();
  }
}

/** `otlp` metric exporter (OTLP over HTTP/protobuf-JSON). */
export class OtlpMetricExporterHandler implements ExporterHandler<PushMetricExporter> {
  canHandle(exporterType: string): boolean {
    return exporterType === 'otlp';
  }
  createExporter(config: ExporterConfig): PushMetricExporter {
    return new OTLPMetricExporter(otlpOptions(config, 'metrics'));
  }
}

/** `console` span exporter. */
export class ConsoleSpanExporterHandler implements ExporterHandler<SpanExporter> {
  canHandle(exporterType: string): boolean {
    return exporterType === 'console';
  }
  createExporter(_config: ExporterConfig): SpanExporter {
    return new ConsoleSpanExporter();
  }
}

/** `otlp` span exporter. */
export class OtlpSpanExporterHandler implements ExporterHandler<SpanExporter> {
  canHandle(exporterType: string): boolean {
    return exporterType === 'otlp';
  }
  createExporter(config: ExporterConfig): SpanExporter {
    return new OTLPTraceExporter(otlpOptions(config, 'traces'));
  }
}

/** Registry of metric exporter handlers. */
export class MetricsExporterRegistry extends ExporterRegistry<PushMetricExporter> {
  /** A registry with the `console` and `otlp` handlers. */
  static withDefaults(): MetricsExporterRegistry {
    return new MetricsExporterRegistry()
      .register(new ConsoleMetricExporterHandler())
      .register(new OtlpMetricExporterHandler());
  }
}

/** Registry of span exporter handlers. */
export class TracingExporterRegistry extends ExporterRegistry<SpanExporter> {
  /** A registry with the `console` and `otlp` handlers. */
  static withDefaults(): TracingExporterRegistry {
    return new TracingExporterRegistry()
      .register(new ConsoleSpanExporterHandler())
      .register(new OtlpSpanExporterHandler());
  }
}
