/**
 * The MonitorService RPCs (gRPC and Connect): translate wire messages to calls on the monitor's
 * areas (ingest/, traces/, alerts/, slo/, targets/) and the monitoring library, and back. No
 * business rules here: validation and limits live in the areas.
 *
 * Each area is one field of {@link MonitorRpcDeps}; each RPC is a method named after it. A method
 * not present answers UNIMPLEMENTED (the RPC kit's default).
 */
import type { ServiceImpl } from '@connectrpc/connect';
import { create, type JsonObject, type MessageInitShape } from '@bufbuild/protobuf';
import { timestampFromMs } from '@bufbuild/protobuf/wkt';
import {
  CheckHealthResponseSchema,
  MetricType,
  RecordMetricsResponseSchema,
  type RecordMetricsRequest,
  type RecordMetricsResponse,
  HealthCheckCategory as WireCategory,
  HealthStatus as WireStatus,
  type CheckHealthRequest,
  type CheckHealthResponse,
  type HealthCheckResultSchema,
  type MonitorService,
} from '../../../shared/gen/svc/monitor/v1/monitor_pb';
import {
  HealthCheckCategory,
  HealthStatus,
  type HealthReport,
  type HealthReportSource,
} from '../../../shared/monitoring/health/result';
import type { IngestMetricType, MetricIngestStore } from '../ingest/metric-store';
import { recordSamples } from '../ingest/record-metrics';

/** The monitor's areas, as the RPCs need them (built by app.ts). */
export interface MonitorRpcDeps {
  /**
   * The monitor's own health checks (process, readiness, and one per watched target), run by
   * CheckHealth. Set by app.ts once the service's observability is built.
   */
  health?: HealthReportSource;
  /** Ingested series (RecordMetrics), served again on the monitor's `/metrics`. */
  metrics?: MetricIngestStore;
}

const WIRE_STATUS: Record<HealthStatus, WireStatus> = {
  [HealthStatus.HEALTHY]: WireStatus.HEALTHY,
  [HealthStatus.DEGRADED]: WireStatus.DEGRADED,
  [HealthStatus.UNHEALTHY]: WireStatus.UNHEALTHY,
  [HealthStatus.UNKNOWN]: WireStatus.UNKNOWN,
};

const WIRE_CATEGORY: Record<HealthCheckCategory, WireCategory> = {
  [HealthCheckCategory.LIVENESS]: WireCategory.LIVENESS,
  [HealthCheckCategory.READINESS]: WireCategory.READINESS,
  [HealthCheckCategory.STARTUP]: WireCategory.STARTUP,
};

const METRIC_TYPE: Partial<Record<MetricType, IngestMetricType>> = {
  [MetricType.COUNTER]: 'counter',
  [MetricType.GAUGE]: 'gauge',
  [MetricType.HISTOGRAM]: 'histogram',
  [MetricType.SUMMARY]: 'summary',
};

/** MonitorService implementation. */
export class MonitorRpc implements Partial<ServiceImpl<typeof MonitorService>> {
  constructor(private readonly deps: MonitorRpcDeps) {}

  // --- ingest: metrics ---

  recordMetrics(req: RecordMetricsRequest): RecordMetricsResponse {
    const store = this.deps.metrics;
    if (!store) throw new Error('metrics ingest is not wired');
    const outcome = recordSamples(
      store,
      req.samples.map((s) => ({
        name: s.name,
        type: METRIC_TYPE[s.type],
        value: s.value,
        labels: s.labels,
        sourceService: s.sourceService,
        description: s.description,
      })),
      req.sourceService,
    );
    return create(RecordMetricsResponseSchema, {
      accepted: outcome.accepted,
      rejected: outcome.rejected.map((r) => ({ index: r.index, reason: `${r.reason}: ${r.message}` })),
    });
  }

  // --- health ---

  async checkHealth(req: CheckHealthRequest): Promise<CheckHealthResponse> {
    const health = this.deps.health;
    if (!health) throw new Error('health checks are not wired');
    const report = await runCategory(health, req.category);
    return create(CheckHealthResponseSchema, {
      status: WIRE_STATUS[report.status],
      checkedAt: timestampFromMs(Math.round(report.timestamp * 1000)),
      checks: Object.values(report.checks).map((r): MessageInitShape<typeof HealthCheckResultSchema> => ({
        component: r.component,
        status: WIRE_STATUS[r.status],
        // On failure only the error type, never its text (the library's rule).
        message: r.message ?? r.error ?? '',
        durationMs: r.durationMs ?? 0,
        details: r.details as JsonObject,
        checkedAt: timestampFromMs(r.checkedAt),
        category: r.category ? WIRE_CATEGORY[r.category] : WireCategory.UNSPECIFIED,
      })),
    });
  }
}

function runCategory(health: HealthReportSource, category: WireCategory): Promise<HealthReport> {
  switch (category) {
    case WireCategory.LIVENESS:
      return health.runLiveness();
    case WireCategory.READINESS:
      return health.runReadiness();
    case WireCategory.STARTUP:
      return health.runStartup();
    default:
      return health.runAllWithSummary();
  }
}
