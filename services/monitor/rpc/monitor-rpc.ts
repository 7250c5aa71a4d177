/**
 * The MonitorService RPCs (gRPC and Connect): translate wire messages to calls on the monitor's
 * areas (ingest/, traces/, alerts/, slo/, targets/) and the monitoring library, and back. No
 * business rules here: validation and limits live in the areas.
 *
 * Each area is one field of {@link MonitorRpcDeps}; each RPC is a method named after it. A method
 * not present answers UNIMPLEMENTED (the RPC kit's default).
 */
import type { HandlerContext, ServiceImpl } from '@connectrpc/connect';
import { create, type JsonObject, type MessageInitShape } from '@bufbuild/protobuf';
import { timestampFromMs, timestampMs } from '@bufbuild/protobuf/wkt';
import {
  CaptureExceptionResponseSchema,
  SendAlertResponseSchema,
  SendMetricAlertResponseSchema,
  WatchAlertsResponseSchema,
  type CaptureExceptionRequest,
  type CaptureExceptionResponse,
  type SendAlertRequest,
  type SendAlertResponse,
  type SendMetricAlertRequest,
  type SendMetricAlertResponse,
  type WatchAlertsRequest,
  type WatchAlertsResponse,
  CheckHealthResponseSchema,
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
import type { AlertHub } from '../alerts/alert-hub';
import type { ExceptionCapture } from '../alerts/exception-capture';

/** The monitor's areas, as the RPCs need them (built by app.ts). */
export interface MonitorRpcDeps {
  /**
   * The monitor's own health checks (process, readiness, and one per watched target), run by
   * CheckHealth. Set by app.ts once the service's observability is built.
   */
  health?: HealthReportSource;
  /** The alerts area: SendAlert, SendMetricAlert, WatchAlerts (the hub) and CaptureException. */
  alerts?: { hub: AlertHub; exceptions: ExceptionCapture };
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

/** MonitorService implementation. */
export class MonitorRpc implements Partial<ServiceImpl<typeof MonitorService>> {
  constructor(private readonly deps: MonitorRpcDeps) {}

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

  // --- alerts area: SendAlert, SendMetricAlert, WatchAlerts, CaptureException ---

  private get alerts(): NonNullable<MonitorRpcDeps['alerts']> {
    const alerts = this.deps.alerts;
    if (!alerts) throw new Error('the alerts area is not wired');
    return alerts;
  }

  async sendAlert(req: SendAlertRequest): Promise<SendAlertResponse> {
    const alert = await this.alerts.hub.raise({
      kind: 'generic',
      title: req.title,
      message: req.message,
      severity: req.severity,
      context: req.context,
      sourceService: req.sourceService,
    });
    return create(SendAlertResponseSchema, { alertId: alert.id });
  }

  async sendMetricAlert(req: SendMetricAlertRequest): Promise<SendMetricAlertResponse> {
    const alert = await this.alerts.hub.raiseMetric({
      metricName: req.metricName,
      currentValue: req.currentValue,
      threshold: req.threshold,
      context: req.context,
      sourceService: req.sourceService,
    });
    return create(SendMetricAlertResponseSchema, { alertId: alert.id, severity: alert.severity });
  }

  async *watchAlerts(req: WatchAlertsRequest, ctx: HandlerContext): AsyncGenerator<WatchAlertsResponse> {
    const alerts = this.alerts.hub.watch({ severities: req.severities, signal: ctx.signal });
    for await (const alert of alerts) yield create(WatchAlertsResponseSchema, { alert });
    // The watch ends quietly when its signal aborts; tell the client why (cancelled, deadline, shutdown).
    if (ctx.signal.aborted) throw ctx.signal.reason;
  }

  async captureException(req: CaptureExceptionRequest): Promise<CaptureExceptionResponse> {
    const result = this.alerts.exceptions.capture({
      type: req.type,
      message: req.message,
      stacktrace: req.stacktrace,
      sourceService: req.sourceService,
      environment: req.environment,
      tags: req.tags,
      traceId: req.traceId,
      occurredAt: req.time ? timestampMs(req.time) : undefined,
    });
    return create(CaptureExceptionResponseSchema, result);
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
