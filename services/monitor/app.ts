/**
 * Wiring of the monitor service (the composition root): builds its areas from the config and serves
 * them on the two ports, in the shared ServiceLifecycle's start and stop order. Its areas each have
 * a folder (ingest/, traces/, targets/, web/; see their READMEs); rpc/ puts them behind
 * MonitorService. Used by main.ts and by tests that run the service in-process.
 */
import { Registry } from 'prom-client';
import { MetricsCollector } from '../../shared/monitoring';
import { MonitorService } from '../../shared/gen/svc/monitor/v1/monitor_pb';
import { RpcServer, registration, serverOptionsFromConfig } from '../../shared/rpc/server';
import type { Logger } from '../../shared/logging/logger';
import { type BoundPorts, ServiceLifecycle } from '../../shared/runtime/lifecycle';
import { ServiceObservability } from '../../shared/runtime/observability';
import { startServiceMonitoring } from '../../shared/runtime/service-monitoring';
import type { MonitorConfig } from './config';
import { MonitorRpc, type MonitorRpcDeps } from './rpc/monitor-rpc';
import { type AlertsArea, createAlertsArea } from './alerts/alerts-area';

/** The running monitor service's parts, for main.ts and tests. */
export interface MonitorApp {
  server: RpcServer;
  registry: Registry;
  /** The alerts area (its hub: recent alerts, watchers), for tests and main.ts. */
  alerts: AlertsArea;
  start(): Promise<BoundPorts>;
  stop(): Promise<void>;
}

/** Builds the monitor service from its config; nothing listens until start(). */
export async function createMonitorApp(config: MonitorConfig, logger: Logger): Promise<MonitorApp> {
  const registry = new Registry();
  // One collector: RPC, HTTP and service metrics all get the configured prefix, labels and buckets.
  const collector = new MetricsCollector({ registry, config: config.metrics });
  const lifecycle = new ServiceLifecycle(logger);
  const monitoring = await startServiceMonitoring(lifecycle, {
    collector,
    logger,
    errorTracking: config.error_tracking,
    environment: config.environment,
  });

  // The areas behind the RPCs. Each area section below builds its part, registers what must start
  // and stop with the lifecycle, and adds itself to `deps`.
  const deps: MonitorRpcDeps = {};

  // --- ingest: metrics (RecordMetrics, OTLP metrics) ---

  // --- traces (ExportSpans, GetTrace, OTLP traces) ---

  // --- alerts (SendAlert, SendMetricAlert, WatchAlerts, CaptureException) ---
  // `alertHub` is the one AlertDispatcherProtocol of the monitor: the slo and targets areas raise
  // through it, the status page reads `alertHub.recent()` / `alertHub.subscribe()`.
  const alerts = await lifecycle.area(
    'alerts',
    createAlertsArea(config.alerts, {
      logger,
      registry,
      tracker: monitoring.tracker,
      serviceName: config.name,
    }),
  );
  const alertHub = alerts.hub;
  deps.alerts = { hub: alertHub, exceptions: alerts.exceptions };

  // --- slo (RegisterSlo, ListSlos, RecordSloSamples, EvaluateSlos) ---

  // --- targets (watched services, CheckHealth) ---

  const server = new RpcServer({
    name: 'monitor',
    logger,
    registry,
    metrics: collector,
    ...serverOptionsFromConfig(config.server),
    onUnexpectedError: monitoring.onUnexpectedError,
    services: [registration(MonitorService, new MonitorRpc(deps))],
  });
  lifecycle.serve('server', server);

  // --- HTTP routes of the areas (OTLP/HTTP, the status page) ---

  const observability = new ServiceObservability({
    server,
    registry,
    logger,
    health: config.health,
    metrics: config.metrics,
    collector,
  });
  lifecycle.exporter('observability', observability);
  deps.health = observability.checker;

  return {
    server,
    registry,
    alerts,
    start: () => lifecycle.start(),
    stop: () => lifecycle.stop(),
  };
}
