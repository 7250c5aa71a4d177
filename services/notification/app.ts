/**
 * Wiring of the notification service (the composition root): opens the database once and runs
 * every migration, builds the areas on it, and serves them on the two ports. The start and stop
 * order is the shared ServiceLifecycle's. Used by main.ts and by tests that run the service
 * in-process.
 */
import { Registry } from 'prom-client';
import { MetricsCollector } from '../../shared/monitoring';
import { NotificationService } from '../../shared/gen/svc/notification/v1/notification_pb';
import { InboxService as InboxServiceDesc } from '../../shared/gen/svc/notification/v1/inbox_pb';
import { RpcServer, registration, serverOptionsFromConfig } from '../../shared/rpc/server';
import type { Logger } from '../../shared/logging/logger';
import { type BoundPorts, ServiceLifecycle } from '../../shared/runtime/lifecycle';
import { ServiceObservability } from '../../shared/runtime/observability';
import { type MigrationSet, openStorage, type Storage } from '../../shared/storage/database';
import type { NotificationConfig } from './config';
import { INBOX_HEALTH_CHECK_NAME, InboxProvider, type InboxHub, type InboxService } from './inbox';
import { NOTIFICATION_MIGRATIONS_TABLE, notificationMigrations } from './migrations';
import { InboxRpc } from './rpc/inbox-rpc';
import { AdminAuth } from './admin/auth';
import { ADMIN_PATH_PREFIX, AdminGateway } from './admin/gateway';
import { SECURITY_HEADERS } from './admin/http';

/** The running notification service's parts, for main.ts and tests. */
export interface NotificationApp {
  server: RpcServer;
  registry: Registry;
  /** The service's database, or undefined when no area stores anything in it (memory stores). */
  readonly storage: Storage | undefined;
  /** The inbox domain service. */
  readonly inbox: InboxService;
  /** The inbox event hub (open watches: `watcherCount`). */
  readonly inboxHub: InboxHub;
  readonly auth: AdminAuth;
  start(): Promise<BoundPorts>;
  stop(): Promise<void>;
}

/** Every migration set of the service, in order: run at start and by `npm run migrate`. */
export const NOTIFICATION_MIGRATION_SETS: readonly MigrationSet[] = [
  { migrations: notificationMigrations, tableName: NOTIFICATION_MIGRATIONS_TABLE },
];

/** True when some area keeps its data in the database (so the service opens one). */
function needsDatabase(config: NotificationConfig): boolean {
  return config.inbox.store_backend === 'database';
}

/** Builds the notification service from its config; nothing listens until start(). */
export async function createNotificationApp(
  config: NotificationConfig,
  logger: Logger,
): Promise<NotificationApp> {
  const registry = new Registry();
  // One collector: RPC, HTTP and service metrics all get the configured prefix, labels and buckets.
  const collector = new MetricsCollector({ registry, config: config.metrics });
  const lifecycle = new ServiceLifecycle(logger);
  try {
    // The one storage root: opened once, every migration run, handed to the areas (the delivery
    // store comes next to the inbox here).
    const storage = needsDatabase(config)
      ? await lifecycle.storage('database', () =>
          openStorage(config.database, NOTIFICATION_MIGRATION_SETS, logger),
        )
      : undefined;

    // Areas start here rather than in start(): the RPC layer and the gateway need their services.
    const inboxProvider = await lifecycle.area(
      'inbox',
      new InboxProvider({ config: config.inbox, storage, logger }), // each inbox part names its own `component`
    );
    const inbox = inboxProvider.service;

    const auth = new AdminAuth({ ...config.admin.auth, environment: config.environment });

    const server = new RpcServer({
      name: 'notification',
      logger,
      registry,
      metrics: collector,
      ...serverOptionsFromConfig(config.server),
      services: [
        // Delivery RPCs are not built yet: every method answers UNIMPLEMENTED.
        registration(NotificationService, {}),
        registration(InboxServiceDesc, new InboxRpc(inbox)),
      ],
    });
    lifecycle.serve('server', server);
    const gateway = new AdminGateway({
      inbox,
      auth,
      logger,
      maxPageSize: config.inbox.max_page_size,
      shutdownSignal: server.shutdownSignal,
    });
    server.routes.add(...gateway.routes()).setHeaders(ADMIN_PATH_PREFIX, SECURITY_HEADERS);
    const observability = new ServiceObservability({
      server,
      registry,
      logger,
      health: config.health,
      metrics: config.metrics,
      collector,
    });
    lifecycle.exporter('observability', observability);
    // The spec's health fragment: the inbox store answers, with backend and latency in the details.
    observability.checker.add(INBOX_HEALTH_CHECK_NAME, async () => ({
      ...(await inboxProvider.health.check()),
    }));

    return {
      server,
      registry,
      storage,
      auth,
      inbox,
      inboxHub: inboxProvider.hub,
      start: () => lifecycle.start(),
      stop: () => lifecycle.stop(),
    };
  } catch (err) {
    // Whatever opened before the failure (the database, an area) is closed again.
    await lifecycle.stop().catch(() => undefined);
    throw err;
  }
}
