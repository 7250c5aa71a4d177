/**
 * Test support for the OTLP endpoints: the monitor's OTLP services and routes on a real RpcServer
 * with a recording metrics sink (the metrics ingest is another area), and OpenTelemetry SDK
 * providers wired to the real OTLP exporters.
 */
import { Registry } from 'prom-client';
import { ROOT_CONTEXT, trace, type Tracer } from '@opentelemetry/api';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, SimpleSpanProcessor, type SpanExporter } from '@opentelemetry/sdk-trace-base';
import {
  MeterProvider,
  PeriodicExportingMetricReader,
  type PushMetricExporter,
} from '@opentelemetry/sdk-metrics';
import type { ExportMetricsServiceRequest } from '../../../shared/gen/opentelemetry/proto/collector/metrics/v1/metrics_service_pb';
import { silentLogger } from '../../../shared/logging/logger';
import { MetricsCollector } from '../../../shared/monitoring';
import { RpcServer } from '../../../shared/rpc/server';
import { SpanStore } from '../../../services/monitor/traces/span-store';
import { Traces } from '../../../services/monitor/traces/traces';
import {
  OtlpReceiver,
  countDataPoints,
  type OtlpMetricsOutcome,
  type OtlpMetricsSink,
} from '../../../services/monitor/otlp/otlp-receiver';
import { otlpRegistrations } from '../../../services/monitor/otlp/otlp-rpc';
import { otlpHttpRoutes } from '../../../services/monitor/otlp/otlp-http';

/** A metrics sink that keeps every request and answers what it is told to. */
export class RecordingSink implements OtlpMetricsSink {
  readonly requests: ExportMetricsServiceRequest[] = [];
  reject = 0;
  exportMetrics(request: ExportMetricsServiceRequest): OtlpMetricsOutcome {
    this.requests.push(request);
    const rejected = Math.min(this.reject, countDataPoints(request));
    return { rejectedDataPoints: rejected, errorMessage: rejected ? 'refused by the test' : '' };
  }
}

/** A started OTLP server: gRPC and HTTP ports, the span store behind it, the recording sink. */
export interface OtlpTestServer {
  grpcUrl: string;
  grpcAddress: string;
  baseUrl: string;
  traces: Traces;
  sink: RecordingSink;
  registry: Registry;
  close(): Promise<void>;
}

/** Starts the OTLP endpoints on free ports. */
export async function startOtlpServer(
  options: { apiTokens?: string[]; maxRequestBytes?: number; maxInFlightRequestBytes?: number } = {},
): Promise<OtlpTestServer> {
  const registry = new Registry();
  const collector = new MetricsCollector({ registry });
  const logger = silentLogger();
  const store = new SpanStore(
    {
      maxSpans: 10_000,
      maxSpansPerTrace: 1000,
      ttlSeconds: 3600,
      maxAttributes: 128,
      maxEvents: 128,
      maxLinks: 128,
      maxStringLength: 4096,
      maxListLength: 128,
      maxSpanBytes: 256 * 1024,
      maxStoreBytes: 64 * 1024 * 1024,
    },
    collector,
  );
  const traces = new Traces(store);
  const sink = new RecordingSink();
  const receiver = new OtlpReceiver(traces, sink, collector, logger);
  const maxRequestBytes = options.maxRequestBytes ?? 4 * 1024 * 1024;
  const server = new RpcServer({
    name: 'otlp-test',
    logger,
    registry,
    metrics: collector,
    host: '127.0.0.1',
    grpcPort: 0,
    httpPort: 0,
    apiTokens: options.apiTokens ?? [],
    maxRequestBytes,
    ...(options.maxInFlightRequestBytes ? { maxInFlightRequestBytes: options.maxInFlightRequestBytes } : {}),
    shutdownDrainMs: 0,
    shutdownTimeoutMs: 2000,
    services: otlpRegistrations(receiver),
    httpRoutes: otlpHttpRoutes({ receiver, maxBodyBytes: maxRequestBytes }),
  });
  const ports = await server.start();
  server.health.setServing(true);
  return {
    grpcUrl: `http://127.0.0.1:${ports.grpc}`,
    grpcAddress: `127.0.0.1:${ports.grpc}`,
    baseUrl: `http://127.0.0.1:${ports.http}`,
    traces,
    sink,
    registry,
    close: () => server.shutdown(),
  };
}

/** Records a root span and two children through `exporter`; resolves with their ids once exported. */
export async function recordTrace(
  exporter: SpanExporter,
  serviceName: string,
): Promise<{ traceId: string; rootId: string; childIds: string[] }> {
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ 'service.name': serviceName }),
    spanProcessors: [new SimpleSpanProcessor(exporter)],
  });
  const tracer: Tracer = provider.getTracer('otlp-test');
  const root = tracer.startSpan('checkout', { attributes: { 'order.items': 3 } });
  const ctx = trace.setSpan(ROOT_CONTEXT, root);
  const a = tracer.startSpan('reserve', {}, ctx);
  a.addEvent('reserved', { sku: 'x-1' });
  a.end();
  const b = tracer.startSpan('charge', {}, ctx);
  b.end();
  root.end();
  await provider.forceFlush();
  await provider.shutdown();
  return {
    traceId: root.spanContext().traceId,
    rootId: root.spanContext().spanId,
    childIds: [a.spanContext().spanId, b.spanContext().spanId],
  };
}

/** Records a counter (2 points: two attribute sets) and a histogram through `exporter`, then flushes. */
export async function recordMetrics(exporter: PushMetricExporter, serviceName: string): Promise<void> {
  const provider = new MeterProvider({
    resource: resourceFromAttributes({ 'service.name': serviceName }),
    readers: [new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 3_600_000 })],
  });
  const meter = provider.getMeter('otlp-test');
  const counter = meter.createCounter('orders_placed');
  counter.add(2, { region: 'eu' });
  counter.add(5, { region: 'us' });
  meter.createHistogram('order_value').record(12.5);
  // shutdown() collects and exports once (a forceFlush before it would export a second time).
  await provider.shutdown();
}
