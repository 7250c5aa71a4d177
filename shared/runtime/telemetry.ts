/**
 * Starts the OpenTelemetry SDK of a service process, with the gRPC and pg instrumentations, so gRPC
 * server and client calls and SQL queries become spans and a trace crosses process boundaries.
 *
 * It must run before `@grpc/grpc-js` (and `pg`) are first required: the instrumentations patch a
 * module when it is loaded, and one loaded earlier stays unpatched. So a service's `main` loads its
 * config, calls {@link startTelemetry}, and only then requires its composition root. This file
 * imports neither module, and nothing here loads them.
 *
 * The SDK starts only when `tracing.enabled` is true and `tracing.exporter` is `console` or `otlp`;
 * otherwise nothing is patched and tracing costs nothing.
 */
import { diag, type DiagLogger, DiagLogLevel } from '@opentelemetry/api';
import { GrpcInstrumentation } from '@opentelemetry/instrumentation-grpc';
import { PgInstrumentation } from '@opentelemetry/instrumentation-pg';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { NodeSDK } from '@opentelemetry/sdk-node';
import { BatchSpanProcessor, type SpanExporter } from '@opentelemetry/sdk-trace-base';
import type { Logger } from '../logging/logger';
import type { OpenTelemetrySectionConfig, TracingConfig } from '../monitoring/config';
import { TracingExporterRegistry } from '../monitoring/exporters';
import { spanContextManager } from '../monitoring/tracing/context';
import { createPropagator } from '../monitoring/tracing/propagation';
import { createSampler } from '../monitoring/tracing/samplers';

/** What {@link startTelemetry} reads of a service's config. */
export interface TelemetryConfig {
  tracing: TracingConfig;
  opentelemetry: OpenTelemetrySectionConfig;
}

/** The running SDK. */
export interface Telemetry {
  /**
   * Exports what is pending (bounded by `opentelemetry.timeout`) and stops the SDK. Never rejects: a
   * collector that is unreachable at that moment loses the last spans (logged), it does not turn a
   * clean stop into exit code 1.
   */
  shutdown(): Promise<void>;
}

/** The span exporter `tracing.exporter` names, built by the monitoring library's registry. */
export function createTraceExporter(config: TelemetryConfig): SpanExporter | undefined {
  const o = config.opentelemetry;
  return TracingExporterRegistry.withDefaults().createExporter({
    type: config.tracing.exporter,
    endpoint: o.endpoint,
    headers: o.headers,
    timeout: o.timeout,
    compression: o.compression,
  });
}

/** Sends the SDK's own warnings (failed exports) to the service log, not to stdout. */
function diagLogger(logger: Logger): DiagLogger {
  const log = logger.child({ component: 'opentelemetry' });
  return {
    error: (message) => log.warn(message),
    warn: (message) => log.warn(message),
    info: () => undefined,
    debug: () => undefined,
    verbose: () => undefined,
  };
}

/**
 * Starts the SDK when the config asks for it; null when it does not. Call once, first thing in a
 * service's `main`, before the composition root is required.
 */
export function startTelemetry(config: TelemetryConfig, logger: Logger): Telemetry | null {
  const t = config.tracing;
  if (!t.enabled || t.exporter === 'none') return null;
  const exporter = createTraceExporter(config);
  if (!exporter) return null;
  diag.setLogger(diagLogger(logger), DiagLogLevel.WARN);
  const o = config.opentelemetry;
  const sdk = new NodeSDK({
    resource: resourceFromAttributes({ 'service.name': t.service_name }),
    // No host or environment detectors: the process reads its settings from our config only.
    resourceDetectors: [],
    sampler: createSampler(t),
    spanLimits: {
      attributeCountLimit: t.max_attributes,
      eventCountLimit: t.max_events,
      linkCountLimit: t.max_links,
    },
    textMapPropagator: createPropagator(t.propagation_formats),
    // The same AsyncLocalStorage as our Tracer and the logger's trace ids.
    contextManager: spanContextManager(false),
    spanProcessors: [
      new BatchSpanProcessor(exporter, {
        maxExportBatchSize: o.batch_size,
        maxQueueSize: Math.max(2048, o.batch_size),
        scheduledDelayMillis: Math.round(o.export_interval * 1000),
        exportTimeoutMillis: Math.round(o.timeout * 1000),
      }),
    ],
    instrumentations: [new GrpcInstrumentation(), new PgInstrumentation()],
    // Metrics are served on /metrics (prom-client) and nothing logs through OpenTelemetry. Without
    // these, the SDK adds its default OTLP metric reader and log exporter, which ignore our config,
    // post to localhost:4318 and hold the shutdown for their export timeout.
    metricReaders: [],
    logRecordProcessors: [],
  });
  sdk.start();
  logger.info(
    {
      exporter: t.exporter,
      sampler: t.sampler_type,
      endpoint: t.exporter === 'otlp' ? o.endpoint : undefined,
    },
    'tracing started',
  );
  return {
    // Found by the pair e2e test: the final flush to an endpoint that had gone (the monitor
    // exporting to its own, already closed, HTTP port; equally a collector restarting) rejected,
    // and the service exited 1 after a clean shutdown, which orchestrators read as a crash.
    shutdown: () =>
      sdk.shutdown().catch((err: unknown) => logger.warn({ err }, 'tracing: the final span export was lost')),
  };
}
