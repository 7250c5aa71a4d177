/**
 * What the OTLP endpoints do with a decoded export request, whichever transport brought it
 * (gRPC, Connect, gRPC-Web, OTLP/HTTP protobuf or JSON): spans go to the traces area (the same
 * store as ExportSpans), metrics to an {@link OtlpMetricsSink}.
 */
import type { ExportMetricsServiceRequest } from '../../../shared/gen/opentelemetry/proto/collector/metrics/v1/metrics_service_pb';
import type { ExportTraceServiceRequest } from '../../../shared/gen/opentelemetry/proto/collector/trace/v1/trace_service_pb';
import type { Logger } from '../../../shared/logging/logger';
import type { MetricsCollector } from '../../../shared/monitoring';
import type { Counter } from '../../../shared/monitoring/instruments';
import type { ExportResult, Traces } from '../traces/traces';
import { spansOfRequest } from './otlp-spans';
import { cutText } from '../../../shared/text/cut';

/** What a metrics sink reports about one OTLP metrics export. */
export interface OtlpMetricsOutcome {
  /** Data points not applied (an invalid name, a type conflict, a cap reached, ...). */
  rejectedDataPoints: number;
  /** Why, for the log; empty when nothing was rejected. */
  errorMessage: string;
}

/**
 * Where OTLP metrics go: the metrics ingest's `applyOtlpMetrics(store, request)`, bound to the
 * monitor's metric store by app.ts.
 */
export interface OtlpMetricsSink {
  exportMetrics(request: ExportMetricsServiceRequest): OtlpMetricsOutcome;
}

/** The OTLP endpoints' shared core. */
export class OtlpReceiver {
  private readonly rejectedPoints: Counter;

  constructor(
    private readonly traces: Traces,
    private readonly metrics: OtlpMetricsSink,
    collector: MetricsCollector,
    private readonly logger: Logger,
  ) {
    this.rejectedPoints = collector.createCounter(
      'monitor_otlp_metric_points_rejected',
      'OTLP metric data points the metrics ingest did not apply (the export itself succeeds)',
    );
  }

  /** Stores the request's spans: all or none (INVALID_ARGUMENT naming the first bad span). */
  exportTraces(request: ExportTraceServiceRequest): ExportResult {
    const { spans, describe } = spansOfRequest(request);
    return this.traces.exportSpans(spans, describe);
  }

  /**
   * Applies the request's metrics. The vendored OTLP version has no `partial_success`, so rejected
   * data points are counted on /metrics and logged (debug: a noisy client must not flood the log),
   * and the export is answered as accepted.
   */
  exportMetrics(request: ExportMetricsServiceRequest): OtlpMetricsOutcome {
    const outcome = this.metrics.exportMetrics(request);
    if (outcome.rejectedDataPoints > 0) {
      this.rejectedPoints.record(outcome.rejectedDataPoints);
      this.logger.debug(
        { rejectedDataPoints: outcome.rejectedDataPoints, reason: cutText(outcome.errorMessage, 512) },
        'OTLP metric data points rejected',
      );
    }
    return outcome;
  }
}

/** Data points in an OTLP metrics request (every kind of metric, every scope). */
export function countDataPoints(request: ExportMetricsServiceRequest): number {
  let n = 0;
  for (const rm of request.resourceMetrics) {
    for (const scope of [...rm.scopeMetrics, ...rm.instrumentationLibraryMetrics]) {
      for (const metric of scope.metrics) n += metric.data.value?.dataPoints.length ?? 0;
    }
  }
  return n;
}
