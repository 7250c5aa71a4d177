/**
 * Wiring of the notification service: builds every component from the config and serves them on
 * the two ports. Used by main.ts and by tests that run the service in-process.
 */
import { Registry } from 'prom-client';
import { NotificationService } from '../../shared/gen/svc/notification/v1/notification_pb';
import { InboxService as InboxServiceDesc } from '../../shared/gen/svc/notification/v1/inbox_pb';
import { RpcServer, registration, serverOptionsFromConfig } from '../../shared/rpc/server';
import type { Logger } from '../../shared/logging/logger';
import { ServiceObservability } from '../../shared/runtime/observability';
import type { NotificationConfig } from './config';
import { INBOX_HEALTH_CHECK_NAME, InboxProvider, type InboxHub, type InboxService } from './inbox';
import { InboxRpc } from './rpc/inbox-rpc';
import { AdminAuth } from './admin/auth';
import { ADMIN_PATH_PREFIX, AdminGateway } from './admin/gateway';
import { SECURITY_HEADERS } from './admin/http';

export interface NotificationApp {
  server: RpcServer;
  registry: Registry;
  /** The inbox domain service. */
  readonly inbox: InboxService;
  /** The inbox event hub (open watches: `watcherCount`). */
  readonly inboxHub: InboxHub;
  readonly auth: AdminAuth;
  start(): Promise<{ grpc: number; http: number }>;
  stop(): Promise<void>;
}

export async function createNotificationApp(
  config: NotificationConfig,
  logger: Logger,
): Promise<NotificationApp> {
  const registry = new Registry();

  const inboxProvider = new InboxProvider({
    config: config.inbox,
    database: config.database,
    logger, // each inbox part names its own `component`
  });
  // Opened here rather than in start(): the RPC layer and the gateway need the service itself.
  await inboxProvider.start();
  const inbox = inboxProvider.service;

  const auth = new AdminAuth({ ...config.admin.auth, environment: config.environment });

  const server = new RpcServer({
    name: 'notification',
    logger,
    registry,
    ...serverOptionsFromConfig(config.server),
    services: [
      // Delivery RPCs are not built yet: every method answers UNIMPLEMENTED.
      registration(NotificationService, {}),
      registration(InboxServiceDesc, new InboxRpc(inbox)),
    ],
  });
  const gateway = new AdminGateway({
    inbox,
    auth,
    logger,
    maxPageSize: config.inbox.max_page_size,
    shutdownSignal: server.shutdownSignal,
  });
  server.routes.add(...gateway.routes()).setHeaders(ADMIN_PATH_PREFIX, SECURITY_HEADERS);
  const observability = new ServiceObservability({ server, registry, logger });
  // The spec's health fragment: the inbox store answers, with backend and latency in the details.
  observability.checker.add(INBOX_HEALTH_CHECK_NAME, async () => ({
    ...(await inboxProvider.health.check()),
  }));

  return {
    server,
    registry,
    auth,
    inbox,
    inboxHub: inboxProvider.hub,
    async start() {
      const ports = await server.start();
      await observability.start();
      return ports;
    },
    async stop() {
      await server.shutdown();
      observability.stop();
      await inboxProvider.stop();
    },
  };
}
