/**
 * The monitor's API scopes and the one scope of every RPC method it serves (MonitorService and the
 * two OTLP collector services): the table `server.api_tokens` entries are checked against
 * (shared/rpc/access.ts). A method missing here fails the type check and the server's start; the
 * isolation suite calls every method with a token lacking its scope. The README's production
 * checklist lists the same table.
 */
import type { MetricsService } from '../../../shared/gen/opentelemetry/proto/collector/metrics/v1/metrics_service_pb';
import type { TraceService } from '../../../shared/gen/opentelemetry/proto/collector/trace/v1/trace_service_pb';
import type { MonitorService } from '../../../shared/gen/svc/monitor/v1/monitor_pb';
import type { AlertService } from '../../../shared/gen/svc/monitor/v1/alerts_pb';
import type { OnCallService } from '../../../shared/gen/svc/monitor/v1/oncall_pb';
import type { MethodScopes } from '../../../shared/rpc/access';

/** Every scope a monitor API token may hold (`*`: all of them). */
export const MONITOR_SCOPES = ['monitor:ingest', 'monitor:alerts', 'monitor:read'] as const;

/** One scope of the monitor. */
export type MonitorScope = (typeof MONITOR_SCOPES)[number];

type Table<
  S extends
    | typeof MonitorService
    | typeof AlertService
    | typeof TraceService
    | typeof MetricsService
    | typeof OnCallService,
> = MethodScopes<S> & {
  readonly [K in keyof S['method']]: MonitorScope;
};

/**
 * MonitorService. `monitor:ingest`: what a watched service pushes (metrics, spans, its SLOs and
 * their samples, exceptions); `monitor:alerts`: raising alerts and running an SLO evaluation (which
 * dispatches them); `monitor:read`: traces, SLOs, the alert stream, health. The status page's data
 * routes accept tokens with `monitor:read`.
 */
export const MONITOR_METHOD_SCOPES: Table<typeof MonitorService> = {
  recordMetrics: 'monitor:ingest',
  exportSpans: 'monitor:ingest',
  getTrace: 'monitor:read',
  registerSlo: 'monitor:ingest',
  registerRatioSlo: 'monitor:ingest',
  listSlos: 'monitor:read',
  recordSloSamples: 'monitor:ingest',
  evaluateSlos: 'monitor:alerts',
  sendAlert: 'monitor:alerts',
  sendMetricAlert: 'monitor:alerts',
  watchAlerts: 'monitor:read',
  captureException: 'monitor:ingest',
  checkHealth: 'monitor:read',
};

/**
 * AlertService (the alert lifecycle): `monitor:read` lists and reads alerts and silences;
 * `monitor:alerts` acknowledges, resolves, silences and expires silences.
 */
export const ALERT_METHOD_SCOPES: Table<typeof AlertService> = {
  acknowledgeAlert: 'monitor:alerts',
  resolveAlert: 'monitor:alerts',
  listAlerts: 'monitor:read',
  getAlert: 'monitor:read',
  createSilence: 'monitor:alerts',
  listSilences: 'monitor:read',
  expireSilence: 'monitor:alerts',
};

/** OnCallService (issue 28): who is on call is read with `monitor:read`. */
export const ONCALL_METHOD_SCOPES: Table<typeof OnCallService> = {
  whoIsOnCall: 'monitor:read',
  listSchedules: 'monitor:read',
};

/** OTLP trace export (gRPC, Connect and OTLP/HTTP alike). */
export const OTLP_TRACE_METHOD_SCOPES: Table<typeof TraceService> = { export: 'monitor:ingest' };

/** OTLP metrics export (gRPC, Connect and OTLP/HTTP alike). */
export const OTLP_METRICS_METHOD_SCOPES: Table<typeof MetricsService> = { export: 'monitor:ingest' };

/** The scope of the OTLP/HTTP routes. */
export const OTLP_HTTP_SCOPE: MonitorScope = 'monitor:ingest';

/** The scope a server token needs to read the status page's data routes. */
export const STATUS_PAGE_SCOPE: MonitorScope = 'monitor:read';
