/**
 * The MonitorService RPCs (gRPC and Connect): translate wire messages to calls on the monitor's
 * areas (ingest/, traces/, alerts/, slo/, targets/) and the monitoring library, and back. No
 * business rules here: validation and limits live in the areas.
 *
 * Each area is one field of {@link MonitorRpcDeps}; each RPC is a method named after it. The class
 * implements the whole `ServiceImpl`, so an RPC added to the proto without a handler fails to compile.
 */
import { type HandlerContext, type ServiceImpl } from '@connectrpc/connect';
import { create, type JsonObject, type MessageInitShape } from '@bufbuild/protobuf';
import { durationFromMs, durationMs, timestampFromMs, timestampMs } from '@bufbuild/protobuf/wkt';
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
  EvaluateSlosResponseSchema,
  ListSlosResponseSchema,
  RecordSloSamplesResponseSchema,
  RegisterSloResponseSchema,
  RegisterRatioSloResponseSchema,
  type RegisterRatioSloRequest,
  type RegisterRatioSloResponse,
  type SloStatusSchema,
  MetricType,
  RecordMetricsResponseSchema,
  type RecordMetricsRequest,
  type RecordMetricsResponse,
  HealthCheckCategory as WireCategory,
  HealthStatus as WireStatus,
  type CheckHealthRequest,
  ExportSpansResponseSchema,
  type ExportSpansRequest,
  type ExportSpansResponse,
  GetTraceResponseSchema,
  type GetTraceRequest,
  type GetTraceResponse,
  type CheckHealthResponse,
  type EvaluateSlosRequest,
  type EvaluateSlosResponse,
  type HealthCheckResultSchema,
  type ListSlosResponse,
  type MonitorService,
  type RecordSloSamplesRequest,
  type RecordSloSamplesResponse,
  type RegisterSloRequest,
  type RegisterSloResponse,
  type Slo as WireSlo,
  type SloSchema,
} from '../../../shared/gen/svc/monitor/v1/monitor_pb';
import { InvalidArgumentError } from '../../../shared/errors';
import type { SLO } from '../../../shared/monitoring/slo/slo';
import {
  HealthCheckCategory,
  HealthStatus,
  type HealthReport,
  type HealthReportSource,
} from '../../../shared/monitoring/health/result';
import type { SloArea, SloDefinition } from '../slo/slo-area';
import { MAX_EVENT_ENTRIES_PER_CALL } from '../../../shared/monitoring/slo/monitor';
import {
  latencyStatusToWire,
  optionalCount,
  periodFromWire,
  periodToWire,
  rulesFromWire,
  rulesToWire,
  ratioSloFromWire,
  ratioSloToWire,
  ratioStatusToWire,
  sloEventsFromWire,
} from './slo-wire';
import type { Traces } from '../traces/traces';
import { spanInputOf, wireSpanOf } from './traces-wire';
import { alertToWire } from './alert-wire';
import type { IngestMetricType, MetricIngestStore } from '../ingest/metric-store';
import { recordSamples } from '../ingest/record-metrics';
import type { AlertHub } from '../alerts/alert-hub';
import type { ExceptionCapture } from '../alerts/exception-capture';

/** The monitor's areas, as the RPCs need them (built by app.ts). */
export interface MonitorRpcDeps {
  /**
   * The monitor's own health checks (process, readiness, and one per watched target), run by
   * CheckHealth. Set by app.ts once the service's observability is built.
   */
  health?: HealthReportSource;
  /** The SLO area (RegisterSlo, ListSlos, RecordSloSamples, EvaluateSlos). */
  slo?: SloArea;
  /** The span store and its forwarder (ExportSpans, GetTrace). */
  traces?: Traces;
  /** Ingested series (RecordMetrics), served again on the monitor's `/metrics`. */
  metrics?: MetricIngestStore;
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

const METRIC_TYPE: Partial<Record<MetricType, IngestMetricType>> = {
  [MetricType.COUNTER]: 'counter',
  [MetricType.GAUGE]: 'gauge',
  [MetricType.HISTOGRAM]: 'histogram',
  [MetricType.SUMMARY]: 'summary',
};

/** MonitorService implementation. */
export class MonitorRpc implements ServiceImpl<typeof MonitorService> {
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

  // --- slo: RegisterSlo, ListSlos, RecordSloSamples, EvaluateSlos (rules in ../slo) ---

  async registerSlo(req: RegisterSloRequest): Promise<RegisterSloResponse> {
    if (!req.slo) throw new InvalidArgumentError('slo is required', 'slo');
    const slo = await this.sloArea().registerSlo(sloDefinitionFromWire(req.slo));
    return create(RegisterSloResponseSchema, { slo: sloToWire(slo) });
  }

  async registerRatioSlo(req: RegisterRatioSloRequest): Promise<RegisterRatioSloResponse> {
    if (!req.slo) throw new InvalidArgumentError('slo is required', 'slo');
    const registered = await this.sloArea().registerRatioSlo(ratioSloFromWire(req.slo));
    return create(RegisterRatioSloResponseSchema, { slo: ratioSloToWire(registered) });
  }

  async listSlos(): Promise<ListSlosResponse> {
    const area = this.sloArea();
    const slos = (await area.listSlos()).map(sloToWire);
    // The window sums of every replica's events, in one read.
    await area.refresh();
    return create(ListSlosResponseSchema, {
      slos,
      ratioSlos: area.listRatio().map(ratioSloToWire),
      statuses: this.sloStatuses(area),
    });
  }

  async recordSloSamples(req: RecordSloSamplesRequest): Promise<RecordSloSamplesResponse> {
    const area = this.sloArea();
    if (req.slo !== '' || req.events.length > 0) {
      if (req.metric !== '' || req.valuesMs.length > 0)
        throw new InvalidArgumentError('give metric and values_ms, or slo and events, not both', 'slo');
      if (req.events.length > MAX_EVENT_ENTRIES_PER_CALL)
        throw new InvalidArgumentError(
          `at most ${MAX_EVENT_ENTRIES_PER_CALL} event entries per request, got ${req.events.length}`,
          'events',
        );
      const accepted = await area.recordEvents(req.slo, sloEventsFromWire(req.events));
      return create(RecordSloSamplesResponseSchema, { accepted });
    }
    const accepted = await area.record(req.metric, req.valuesMs);
    return create(RecordSloSamplesResponseSchema, { accepted });
  }

  /** Every SLO's status by name: latency SLOs over their window, ratio SLOs over their period. */
  private sloStatuses(area: SloArea): MessageInitShape<typeof SloStatusSchema>[] {
    const now = Date.now();
    return [
      ...area.monitor.latencyStatuses().map((s) => latencyStatusToWire(s, now)),
      ...area.ratioStatuses().map(ratioStatusToWire),
    ].sort((a, b) => (a.name! < b.name! ? -1 : a.name! > b.name! ? 1 : 0));
  }

  async evaluateSlos(req: EvaluateSlosRequest): Promise<EvaluateSlosResponse> {
    const area = this.sloArea();
    const results = await area.evaluateNow(req.dispatch);
    return create(EvaluateSlosResponseSchema, {
      statuses: this.sloStatuses(area),
      violations: results.map(({ violation: v, suppressed }) => ({
        slo: sloToWire(v.slo),
        measuredValue: v.measuredValue,
        burnRate: v.burnRate,
        detectedAt: timestampFromMs(v.detectedAt.getTime()),
        message: v.message,
        suppressed,
      })),
    });
  }

  // --- traces: ExportSpans, GetTrace ---

  exportSpans(req: ExportSpansRequest): ExportSpansResponse {
    const traces = this.deps.traces;
    if (!traces) throw new Error('the traces area is not wired');
    const result = traces.exportSpans(req.spans.map(spanInputOf));
    return create(ExportSpansResponseSchema, result);
  }

  getTrace(req: GetTraceRequest): GetTraceResponse {
    const traces = this.deps.traces;
    if (!traces) throw new Error('the traces area is not wired');
    const spans = traces.getTrace(req.traceId);
    return create(GetTraceResponseSchema, { spans: spans.map(wireSpanOf) });
  }

  // --- alerts area: SendAlert, SendMetricAlert, WatchAlerts, CaptureException ---

  private get alerts(): NonNullable<MonitorRpcDeps['alerts']> {
    const alerts = this.deps.alerts;
    if (!alerts) throw new Error('the alerts area is not wired');
    return alerts;
  }

  async sendAlert(req: SendAlertRequest): Promise<SendAlertResponse> {
    const { alert, opened } = await this.alerts.hub.trigger({
      kind: 'generic',
      title: req.title,
      message: req.message,
      severity: req.severity,
      context: req.context,
      sourceService: req.sourceService,
      dedupKey: req.dedupKey,
    });
    return create(SendAlertResponseSchema, { alertId: alert.id, opened });
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
    const frames = this.alerts.hub.watchFrames({
      severities: req.severities,
      after: req.afterCursor,
      signal: ctx.signal,
    });
    for await (const frame of frames) {
      // No message before the first alert: every response of a stream without a cursor is an alert.
      if (frame.type === 'live') continue;
      yield create(
        WatchAlertsResponseSchema,
        frame.type === 'alert'
          ? { alert: alertToWire(frame.alert), cursor: frame.cursor }
          : { cursor: frame.cursor, reset: true },
      );
    }
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

  private sloArea(): SloArea {
    if (!this.deps.slo) throw new Error('the SLO area is not wired');
    return this.deps.slo;
  }
}

/**
 * Wire SLO to a definition. proto3 cannot tell an unset scalar from its zero, so the zero of an
 * optional field means "use the default" (burn_rate_threshold 0, tier ""); an unset window is the
 * default window while a window set to 0 is refused by the area.
 */
function sloDefinitionFromWire(w: WireSlo): SloDefinition {
  return {
    name: w.name,
    metric: w.metric,
    percentile: w.percentile,
    thresholdMs: w.thresholdMs,
    windowSeconds: w.window ? durationMs(w.window) / 1000 : undefined,
    burnRateThreshold: w.burnRateThreshold === 0 ? undefined : w.burnRateThreshold,
    description: w.description,
    tier: w.tier === '' ? undefined : w.tier,
    owner: w.owner,
    runbookUrl: w.runbookUrl === '' ? undefined : w.runbookUrl,
    period: periodFromWire(w.period),
    rules: rulesFromWire(w.rules),
    minEvents: optionalCount(w.minEvents, 'min_events'),
  };
}

function sloToWire(slo: SLO): MessageInitShape<typeof SloSchema> {
  return {
    name: slo.name,
    metric: slo.metric,
    percentile: slo.percentile,
    thresholdMs: slo.thresholdMs,
    window: durationFromMs(slo.windowSeconds * 1000),
    burnRateThreshold: slo.burnRateThreshold,
    description: slo.description,
    tier: slo.tier,
    owner: slo.owner,
    runbookUrl: slo.runbookUrl,
    ...(slo.period
      ? {
          period: periodToWire(slo.period),
          rules: rulesToWire(slo.rules.map((r) => ({ ...r }))),
          minEvents: BigInt(slo.minEvents),
        }
      : {}),
  };
}

function runCategory(health: HealthReportSource, category: WireCategory): Promise<HealthReport> {
  switch (category) {
    case WireCategory.LIVENESS:
      return health.runLiveness();
    case WireCategory.READINESS:
      return health.runReadiness();
    case WireCategory.STARTUP:
      return health.runStartup();
    case WireCategory.UNSPECIFIED:
      return health.runAllWithSummary();
    default:
      // A number this monitor does not know (a client a proto version ahead): running every check
      // would answer a question the caller did not ask.
      throw new InvalidArgumentError(`category: unknown category ${String(category)}`, 'category');
  }
}
