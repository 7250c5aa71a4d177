/**
 * Wiring of the monitor service (the composition root): opens its database once (unless
 * `database.store_backend` is `memory`) and runs its migrations, builds its areas from the config and serves
 * them on the two ports, in the shared ServiceLifecycle's start and stop order. Its areas each have
 * a folder (ingest/, traces/, targets/, web/; see their READMEs); rpc/ puts them behind
 * MonitorService. Used by main.ts and by tests that run the service in-process.
 */
import { Registry } from 'prom-client';
import { MetricsCollector } from '../../shared/monitoring';
import { MonitorService } from '../../shared/gen/svc/monitor/v1/monitor_pb';
import { SECURITY_HEADERS } from '../../shared/http/security-headers';
import { RpcServer, registration, serverOptionsFromConfig } from '../../shared/rpc/server';
import type { Logger } from '../../shared/logging/logger';
import type { Clock } from '../../shared/runtime/clock';
import { type BoundPorts, ServiceLifecycle } from '../../shared/runtime/lifecycle';
import { ServiceObservability } from '../../shared/runtime/observability';
import { startServiceMonitoring } from '../../shared/runtime/service-monitoring';
import type { MonitorConfig } from './config';
import { MonitorRpc, type MonitorRpcDeps } from './rpc/monitor-rpc';
import { SloArea } from './slo/slo-area';
import { SloEvaluationWorker } from './slo/evaluation-worker';
import { STATUS_PATH_PREFIX, StatusPage } from './web/status-page';
import type { StatusSource } from './web/status-source';
import { TargetsArea } from './targets/targets-area';
import { TracingExporterRegistry } from '../../shared/monitoring/exporters';
import { SpanStore } from './traces/span-store';
import { SpanForwarder } from './traces/span-forwarder';
import { Traces } from './traces/traces';
import { OtlpReceiver, type OtlpMetricsSink } from './otlp/otlp-receiver';
import { otlpRegistrations } from './otlp/otlp-rpc';
import { otlpHttpRoutes } from './otlp/otlp-http';
import { appendToRegistry, MetricIngestStore } from './ingest/metric-store';
import { applyOtlpMetrics } from './otlp/otlp-metrics';
import { ALERT_METHOD_SCOPES, MONITOR_METHOD_SCOPES, STATUS_PAGE_SCOPE } from './rpc/scopes';
import { AlertService } from '../../shared/gen/svc/monitor/v1/alerts_pb';
import { AlertServiceRpc } from './rpc/alert-service-rpc';
import { OnCallService } from '../../shared/gen/svc/monitor/v1/oncall_pb';
import { OnCallRpc } from './rpc/oncall-rpc';
import { ONCALL_METHOD_SCOPES } from './rpc/scopes';
import { Schedules } from './oncall/schedules';
import { tokensWithScope } from '../../shared/auth/api-tokens';
import { type AlertsArea, createAlertsArea } from './alerts/alerts-area';
import { alertWebhookBodies } from './rpc/alert-wire';
import { NotificationClient } from './notification/notification-client';
import { PullMetricsBackend } from '../../shared/monitoring/backends/pull-metrics';
import { type MigrationSet, openStorage, type Storage } from '../../shared/storage/database';
import { MONITOR_MIGRATIONS_TABLE, monitorMigrations } from './migrations';
import { MONITOR_JOBS_TABLE } from './migrations/20261128500000_monitor_state';
import {
  DatabaseTargetHistoryStore,
  MemoryTargetHistoryStore,
  TargetHistoryPurger,
  type TargetHistoryStore,
} from './targets/history';
import { DatabaseJobLease, InProcessJobLease, type JobLease } from '../../shared/storage/periodic-job';
import { MemorySloStateStore } from './slo/store';
import { DatabaseSloStateStore } from './slo/database-store';
import { DatabaseTargetStateStore } from './targets/store';
import type { AlertStore } from './alerts/store';
import { DatabaseAlertStore } from './alerts/database-store';
import { DatabaseHeldAlertStore } from './alerts/held-database-store';
import { InMemoryAlertStore } from './alerts/memory-store';
import { AckLinks } from './oncall/ack-links';
import { EscalationAcknowledger, EscalationEngine } from './oncall/escalation';
import { DatabaseEscalationStore } from './oncall/escalation-database-store';
import { MemoryEscalationStore } from './oncall/escalation-store';
import { EscalationWorker } from './oncall/escalation-worker';
import type { OnCallLookup, PageAcknowledger } from './oncall/ports';
import { NotificationPager } from './notification/notification-client';
import { onCallAckRoutes } from './web/oncall-ack-routes';
import { escalationRoutes } from './web/escalation-routes';
import { InboundSmsConsumer } from './oncall/inbound-sms';
import { DatabaseInboundSmsCursor, MemoryInboundSmsCursor } from './oncall/inbound-sms-cursor';

/** The running monitor service's parts, for main.ts and tests. */
export interface MonitorApp {
  server: RpcServer;
  registry: Registry;
  /** The status page at `/` (its feed tells tests how many event streams are open). */
  statusPage: StatusPage;
  /** The ingested series (RecordMetrics and OTLP metrics). */
  metricStore: MetricIngestStore;
  /** The alerts area (its hub: recent alerts, watchers), for tests and main.ts. */
  alerts: AlertsArea;
  /** The watched targets (their states), for tests. */
  targets: TargetsArea;
  /** The on-call schedules (issue 28): the monitor's OnCallLookup. */
  schedules: Schedules;
  /** The monitor's database, or undefined with `database.store_backend: memory`. */
  readonly storage: Storage | undefined;
  /** The pull-metrics backend, when `backend_type` is `pull_metrics`. */
  pullMetrics?: PullMetricsBackend;
  /** On-call escalation (issue 28), when `oncall.escalation_policies` lists any. */
  escalation?: { engine: EscalationEngine; acknowledger: PageAcknowledger };
  /** The `ACK <code>` consumer, when `oncall.inbound_sms.enabled` and an acknowledger is wired. */
  inboundSms?: InboundSmsConsumer;
  start(): Promise<BoundPorts>;
  stop(): Promise<void>;
}

/** Every migration set of the monitor, in order: run at start and by `npm run migrate`. */
export const MONITOR_MIGRATION_SETS: readonly MigrationSet[] = [
  { migrations: monitorMigrations, tableName: MONITOR_MIGRATIONS_TABLE },
];

/** Parts a caller may supply instead of the ones built from the config (tests). */
export interface MonitorAppParts {
  /** What the status page shows; default: built from the areas (until they are wired, empty). */
  statusSource?: StatusSource;
  /** Who is on call (the schedules: `{schedule: name}` escalation targets); none: such targets page nobody. */
  onCall?: OnCallLookup;
  /**
   * What an `ACK <code>` SMS reply calls (issue 28): the escalation engine's (O2) once merged, a fake
   * in tests. Without one, `oncall.inbound_sms.enabled` logs a warning and reads nothing.
   */
  pageAcknowledger?: PageAcknowledger;
  /** Issue 29: the targets' probe history (tests seed one); default from the storage. */
  targetHistory?: TargetHistoryStore;
  /** Issue 29: "now" of the page's chart routes (tests pass a fixed clock); default Date.now. */
  chartNow?: () => number;
  /** Issue 29: the SLO area's clock (tests seed a known event history); default the system's. */
  sloClock?: Clock;
}

/** Builds the monitor service from its config; nothing listens until start(). */
/** The readiness check of the monitor's database (with `database.store_backend: database`). */
export const DATABASE_HEALTH_CHECK_NAME = 'monitor.database';

export async function createMonitorApp(
  config: MonitorConfig,
  logger: Logger,
  parts: MonitorAppParts = {},
): Promise<MonitorApp> {
  const lifecycle = new ServiceLifecycle(logger);
  try {
    return await assembleMonitorApp(config, logger, parts, lifecycle);
  } catch (err) {
    // A part that fails to build (an objective the SLO area refuses, a bad target) must not leave
    // the parts built before it running: stop whatever the lifecycle already holds.
    await lifecycle.stop().catch(() => undefined);
    throw err;
  }
}

async function assembleMonitorApp(
  config: MonitorConfig,
  logger: Logger,
  parts: MonitorAppParts,
  lifecycle: ServiceLifecycle,
): Promise<MonitorApp> {
  const registry = new Registry();
  // One collector: RPC, HTTP and service metrics all get the configured prefix, labels and buckets.
  const collector = new MetricsCollector({ registry, config: config.metrics });
  const monitoring = await startServiceMonitoring(lifecycle, {
    collector,
    logger,
    errorTracking: config.error_tracking,
    environment: config.environment,
  });

  // --- storage (issue 27, M1): the one database of the monitor, opened once, every migration run,
  // handed to the areas; nothing is opened with `database.store_backend: memory`. ---
  const storage =
    config.database.store_backend === 'database'
      ? await lifecycle.storage('database', () =>
          openStorage(config.database, MONITOR_MIGRATION_SETS, logger),
        )
      : undefined;
  if (!storage && config.database.url !== '') {
    // A URL that is not used must not look used (the password is never logged: the key only).
    logger.warn(
      { key: 'monitor.database.url', store_backend: 'memory' },
      'monitor.database.url is set but database.store_backend is memory: the monitor keeps nothing in that database',
    );
  }
  // Each periodic job (an SLO evaluation, a target's probe round) runs once per interval across the
  // replicas sharing the database, measured on the database's clock; in memory, in this process.
  const jobLease: JobLease = storage
    ? new DatabaseJobLease(storage.knex, { table: MONITOR_JOBS_TABLE, clock: 'database', logger })
    : new InProcessJobLease();

  // The areas behind the RPCs. Each area section below builds its part, registers what must start
  // and stop with the lifecycle, and adds itself to `deps`.
  const deps: MonitorRpcDeps = {};

  // --- ingest: metrics (RecordMetrics, OTLP metrics) ---
  // Ingested series live beside the monitor's own registry and are rendered after it on /metrics.
  const metricStore = new MetricIngestStore({ limits: config.metrics, registry });
  appendToRegistry(registry, metricStore);
  deps.metrics = metricStore;

  // --- traces (ExportSpans, GetTrace, OTLP traces) ---
  const spanStore = new SpanStore(
    {
      maxSpans: config.tracing.max_spans,
      maxSpansPerTrace: config.tracing.max_spans_per_trace,
      ttlSeconds: config.tracing.span_ttl_seconds,
      maxAttributes: config.tracing.max_attributes,
      maxEvents: config.tracing.max_events,
      maxLinks: config.tracing.max_links,
      maxStringLength: config.tracing.max_string_length,
      maxListLength: config.tracing.max_list_length,
      maxSpanBytes: config.tracing.max_span_bytes,
      maxStoreBytes: config.tracing.max_store_bytes,
    },
    collector,
  );
  // Stored spans go on to a collector only with the OpenTelemetry backend selected: the
  // `opentelemetry` section always has an endpoint (its default), so the endpoint alone cannot say.
  let spanForwarder: SpanForwarder | undefined;
  if (config.backend_type === 'opentelemetry') {
    const otel = config.opentelemetry;
    const exporter = TracingExporterRegistry.withDefaults().createExporter({
      type: 'otlp',
      endpoint: otel.endpoint,
      headers: otel.headers,
      timeout: otel.timeout,
      compression: otel.compression,
    });
    if (!exporter) throw new Error('the monitoring library has no otlp span exporter');
    spanForwarder = new SpanForwarder(
      exporter,
      {
        batchSize: otel.batch_size,
        maxQueue: config.tracing.forward_queue_size,
        intervalMs: Math.max(1, Math.round(otel.export_interval * 1000)),
      },
      collector,
      logger,
    );
    lifecycle.exporter('span-forwarder', spanForwarder);
  }
  deps.traces = new Traces(spanStore, spanForwarder);

  // `backend_type: pull_metrics`: the monitor's registry (its own metrics and the ingested series) is
  // also served on the backend's own port, behind the same `metrics.auth_token` as `/metrics`, and
  // pushed to `push_gateway_url`. Process metrics are in the registry already when `/metrics` is on.
  // `store_in_db` needs a database of the backend's own, which the monitor does not hand it: the
  // start fails saying so. (A root that does runs `pullMetricsMigrations(metrics_table)` from
  // shared/monitoring/migrations with its migration runner before the backend starts:
  // shared/monitoring/README.md, "Backends".)
  let pullMetrics: PullMetricsBackend | undefined;
  if (config.backend_type === 'pull_metrics') {
    const backend = new PullMetricsBackend({
      ...config.pull_metrics,
      enable_default_metrics: config.pull_metrics.enable_default_metrics && !config.metrics.enabled,
      auth_token: config.metrics.auth_token ?? null,
      registry,
      host: config.server.host,
      logger: logger.child({ component: 'pull-metrics' }),
    });
    lifecycle.exporter('pull-metrics', { start: () => backend.initialize(), stop: () => backend.shutdown() });
    pullMetrics = backend;
  }
  // OTLP sums, gauges and histograms land in the same store as RecordMetrics.
  const otlpMetrics: OtlpMetricsSink = { exportMetrics: (req) => applyOtlpMetrics(metricStore, req) };
  const otlp = new OtlpReceiver(deps.traces, otlpMetrics, collector, logger);

  // The alert lifecycle (alerts, timelines, silences, the notification log): in the monitor's
  // database (restarts keep it, replicas share it and send each notification once), or in memory.
  const alertStore: AlertStore = storage
    ? new DatabaseAlertStore(storage.knex)
    : new InMemoryAlertStore({ maxAlerts: config.alerts.max_alerts_kept });

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
      webhookBodies: alertWebhookBodies,
      notifier: (settings) => new NotificationClient(settings),
      store: alertStore,
      // P1 alerts held outside business hours and P2 alerts waiting for the digest: in the
      // database (a crash loses none; replicas send each once), or in memory.
      ...(storage ? { heldStore: new DatabaseHeldAlertStore(storage.knex) } : {}),
    }),
  );
  const alertHub = alerts.hub;
  // M2: the lifecycle's time rules (silences ending, group notifications, reminders).
  lifecycle.worker('alert-lifecycle', alerts.ticker);
  deps.alerts = { hub: alertHub, exceptions: alerts.exceptions };

  // --- slo (RegisterSlo, ListSlos, RecordSloSamples, EvaluateSlos) ---
  const slo = await lifecycle.area(
    'slo',
    new SloArea({
      config: config.slo,
      alertDispatcher: alertHub,
      collector,
      logger,
      // SLOs registered by RPC and their samples: in the database (they survive a restart and the
      // replicas share them), or in memory.
      store: storage ? new DatabaseSloStateStore(storage.knex) : new MemorySloStateStore(),
      // M2: an SLO back within budget resolves its alert.
      resolve: (key) => alertHub.resolve(key, 'slo'),
      isAlertOpen: async (key) => (await alertHub.lifecycle.store.openByKey(key)) !== undefined,
      ...(parts.sloClock ? { clock: parts.sloClock } : {}),
    }),
  );
  // Ratio SLOs with a metric_source count the increases of ingested counters.
  metricStore.addCounterListener((name, labels, increase) =>
    slo.counters.onCounterIncrease(name, labels, increase),
  );
  lifecycle.worker(
    'slo-evaluator',
    new SloEvaluationWorker({
      // Over every replica's samples; the purge of samples past their window goes with it.
      evaluate: async () => {
        await slo.evaluateNow(true);
        await slo.purge();
      },
      lease: jobLease,
      intervalSeconds: config.slo.evaluation_interval_seconds,
      collector,
      logger,
    }),
  );
  deps.slo = slo;

  // --- targets (watched services, CheckHealth) ---
  // Issue 29: each probe's result in minute buckets for the page's charts, kept 30 days (purged
  // hourly once across the replicas under the job lease).
  const targetHistory: TargetHistoryStore =
    parts.targetHistory ??
    (storage ? new DatabaseTargetHistoryStore(storage.knex) : new MemoryTargetHistoryStore());
  lifecycle.worker(
    'target-history-purge',
    new TargetHistoryPurger({ store: targetHistory, lease: jobLease, logger }),
  );
  const targets = new TargetsArea({
    targets: config.targets,
    alerts: alertHub,
    // M2: a target up again resolves its "down" alert.
    resolve: (key, recovered) => alertHub.resolve(key, 'targets', recovered),
    collector,
    logger,
    // Target state in the database (survives a restart; replicas probe once per interval between
    // them and show what the prober found); in memory, this process probes every round.
    ...(storage ? { store: new DatabaseTargetStateStore(storage.knex), lease: jobLease } : {}),
    history: targetHistory,
  });
  lifecycle.worker('targets', {
    start: async () => {
      // The health checker is built below with the server; workers start before observability, so
      // the target checks are in place before readiness is first polled.
      targets.addHealthChecks(observability.checker);
      await targets.start();
    },
    stop: () => targets.stop(),
  });

  // --- on call (issue 28): the schedules, computed from the config (WhoIsOnCall, the status page) ---
  const schedules = new Schedules(config.oncall.schedules);

  const server = new RpcServer({
    name: 'monitor',
    logger,
    registry,
    metrics: collector,
    ...serverOptionsFromConfig(config.server),
    onUnexpectedError: monitoring.onUnexpectedError,
    services: [
      registration(MonitorService, new MonitorRpc(deps), { scopes: MONITOR_METHOD_SCOPES }),
      // M2 alert lifecycle: AlertService over the hub's lifecycle.
      registration(AlertService, new AlertServiceRpc(() => alertHub.lifecycle), {
        scopes: ALERT_METHOD_SCOPES,
      }),
      // Issue 28: who is on call.
      registration(OnCallService, new OnCallRpc(schedules), { scopes: ONCALL_METHOD_SCOPES }),
      ...otlpRegistrations(otlp),
    ],
  });
  lifecycle.serve('server', server);

  // --- HTTP routes of the areas (OTLP/HTTP, the status page) ---
  server.addHttpRoutes(...otlpHttpRoutes({ receiver: otlp, maxBodyBytes: config.server.max_request_bytes }));

  // The status page reads the areas themselves (their shapes are the page's StatusSource). Its
  // streams end when the server's shutdown begins.
  const statusSource: StatusSource = parts.statusSource ?? {
    targets: () => targets.states(),
    slos: () => {
      // The figures of the last refresh; the next read sees the other replicas' samples too.
      slo.refreshSoon();
      return slo.statuses();
    },
    recentAlerts: (limit) => alertHub.recent(limit),
    onTargetChange: (listener) => targets.onChange(listener),
    onAlert: (listener) => alertHub.subscribe(listener),
    // Issue 28: who is on call now and next, for the page's on-call panel.
    onCall: () => schedules.statuses(new Date()),
  };
  const statusPage = new StatusPage({
    source: statusSource,
    settings: config.web,
    tokens: [...config.web.api_tokens, ...tokensWithScope(config.server.api_tokens, STATUS_PAGE_SCOPE)],
    logger,
    shutdownSignal: server.shutdownSignal,
    // M2: alerts grouped with their timeline, acknowledge, resolve and silences from the page.
    alerts: { lifecycle: alertHub.lifecycle, writeScope: ALERT_METHOD_SCOPES.acknowledgeAlert },
    // Issue 29: the targets' probe history for the charts.
    history: { store: targetHistory, ...(parts.chartNow ? { now: parts.chartNow } : {}) },
    // Issue 29: the SLOs' error-budget burn-down.
    sloBudget: (name) => slo.budgetHistory(name),
  });
  server.routes.add(...statusPage.routes()).setHeaders(STATUS_PATH_PREFIX, SECURITY_HEADERS);
  lifecycle.worker('status-page', statusPage);

  // --- on call: escalation (issue 28, O2; oncall/README.md "Escalation"). No policies: nothing runs. ---
  let escalation: MonitorApp['escalation'];
  if (config.oncall.escalation_policies.length > 0) {
    const paging = config.oncall.paging;
    const escalationStore = storage ? new DatabaseEscalationStore(storage.knex) : new MemoryEscalationStore();
    const links = new AckLinks({ signingKey: paging.signing_key, publicBaseUrl: paging.public_base_url });
    const pager = new NotificationPager({
      grpc_address: paging.grpc_address!,
      api_token: paging.api_token,
      timeout_ms: paging.timeout_ms,
    });
    lifecycle.worker('oncall-pager', { start: async () => undefined, stop: async () => pager.close() });
    const engine = new EscalationEngine({
      alerts: alertStore,
      store: escalationStore,
      policies: config.oncall.escalation_policies,
      pager,
      links,
      // The configured schedules answer `{schedule: name}` targets unless a test passes its own lookup.
      onCall: parts.onCall ?? schedules,
      category: paging.category,
      linkTtlMs: paging.link_ttl_minutes * 60_000,
      codeTtlMs: paging.code_ttl_minutes * 60_000,
      claimLeaseMs: paging.claim_lease_seconds * 1000,
      maxActive: paging.max_active,
      logger,
    });
    const acknowledger = new EscalationAcknowledger({
      alerts: alertStore,
      lifecycle: alertHub.lifecycle,
      store: escalationStore,
      links,
      logger,
    });
    lifecycle.worker(
      'oncall-escalation',
      new EscalationWorker(engine, jobLease, paging.tick_seconds * 1000, logger),
    );
    server.routes.add(...onCallAckRoutes({ acknowledger, alerts: alertStore, logger }));
    escalation = { engine, acknowledger };
  }
  // O2b: each open alert's escalation on the status page, from the shared store (`enabled: false`
  // without policies, so the page hides its block without a failing request).
  const escalationEngine = escalation?.engine;
  server.routes.add(
    ...escalationRoutes({
      lifecycle: alertHub.lifecycle,
      ...(escalationEngine ? { states: (ids: readonly string[]) => escalationEngine.states(ids) } : {}),
      policies: config.oncall.escalation_policies,
      authorizeRead: (req, res) => statusPage.authorizeRead(req, res),
      logger,
    }),
  );

  // --- oncall, O3: `ACK <code>` replies read from the notification service's WatchInboundSms, the
  // cursor in the monitor's database (replicas share it; each replica consumes, acknowledging twice
  // is harmless), reconnecting with backoff. ---
  let inboundSms: InboundSmsConsumer | undefined;
  // The escalation engine's acknowledger (codes it sent), unless a test passes its own.
  const pageAcknowledger = parts.pageAcknowledger ?? escalation?.acknowledger;
  const inboundSmsConfig = config.oncall.inbound_sms;
  if (inboundSmsConfig.enabled && !pageAcknowledger) {
    logger.warn(
      { key: 'monitor.oncall.inbound_sms.enabled' },
      'SMS acknowledgment is enabled but no escalation policy pages anyone: inbound SMS are not read',
    );
  } else if (inboundSmsConfig.enabled && pageAcknowledger) {
    const inboundClient = new NotificationClient({
      grpc_address: inboundSmsConfig.grpc_address!,
      api_token: inboundSmsConfig.api_token,
      timeout_ms: 5000,
    });
    const consumer = new InboundSmsConsumer({
      source: inboundClient,
      cursor: storage ? new DatabaseInboundSmsCursor(storage.knex) : new MemoryInboundSmsCursor(),
      acknowledger: pageAcknowledger,
      backoff: {
        baseMs: inboundSmsConfig.reconnect_min_ms,
        maxMs: inboundSmsConfig.reconnect_max_ms,
        jitter: 'full',
      },
      logger,
    });
    inboundSms = consumer;
    lifecycle.worker('oncall-inbound-sms', {
      start: () => consumer.start(),
      stop: async () => {
        await consumer.stop();
        inboundClient.close();
      },
    });
  }

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
  if (storage) {
    // The database keeps the alerts, silences, SLOs and escalations: while it cannot answer, the
    // monitor is not ready (gRPC health NOT_SERVING, /health 503), as the notification service with
    // its inbox store. Earlier /health stayed healthy with PostgreSQL stopped (a black-box probe).
    // One round trip; the failure says only the error's type, the cause goes to the log.
    observability.checker.add(DATABASE_HEALTH_CHECK_NAME, async () => {
      const started = performance.now();
      try {
        await storage.knex.raw('select 1');
        return {
          status: 'healthy',
          details: { engine: storage.engine, latency_ms: Math.round(performance.now() - started) },
        };
      } catch (err) {
        logger.warn({ err, check: DATABASE_HEALTH_CHECK_NAME }, 'monitor database health check failed');
        return {
          status: 'unhealthy',
          details: { engine: storage.engine },
          message: `${err instanceof Error ? err.constructor.name : 'Error'}: the database does not answer`,
        };
      }
    });
  }

  return {
    server,
    registry,
    statusPage,
    metricStore,
    alerts,
    targets,
    schedules,
    storage,
    pullMetrics,
    escalation,
    inboundSms,
    start: () => lifecycle.start(),
    stop: () => lifecycle.stop(),
  };
}
