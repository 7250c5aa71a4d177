/** Runs the notification service in-process on free ports, with real clients for tests. */
import { createClient, type Client } from '@connectrpc/connect';
import { createConnectTransport } from '@connectrpc/connect-node';
import { InboxService } from '../../shared/gen/svc/notification/v1/inbox_pb';
import { NotificationService } from '../../shared/gen/svc/notification/v1/notification_pb';
import { silentLogger } from '../../shared/logging/logger';
import { loadNotificationConfig, type NotificationConfigInput } from '../../services/notification/config';
import {
  createNotificationApp,
  type NotificationApp,
  type NotificationAppOptions,
} from '../../services/notification/app';
import { grpcClient, type GenericClient } from './grpc-clients';

export interface RunningNotificationApp {
  app: NotificationApp;
  grpcAddress: string;
  baseUrl: string;
  inboxGrpc: GenericClient;
  inboxConnect: Client<typeof InboxService>;
  /** NotificationService over gRPC (grpc-js) and Connect (JSON). */
  notificationGrpc: GenericClient;
  notificationConnect: Client<typeof NotificationService>;
  close(): Promise<void>;
}

/**
 * A `mailer` section with one smtp backend `name` (primary) at 127.0.0.1:`port`, short timeouts so
 * failures come quickly; `fromEmail` is the sender.
 */
export function smtpMailerConfig(
  port: number,
  opts: { name?: string; fromEmail?: string } = {},
): NonNullable<NotificationConfigInput['mailer']> {
  return {
    backends: [
      {
        name: opts.name ?? 'relay',
        primary: true,
        driver: 'smtp',
        from_email: opts.fromEmail ?? 'noreply@sender.example.com',
        smtp: {
          host: '127.0.0.1',
          port,
          pool: false,
          connection_timeout_ms: 2000,
          greeting_timeout_ms: 2000,
          socket_timeout_ms: 5000,
          health_cache_ms: 1,
        },
      },
    ],
  };
}

/** Delivery settings for tests: memory store, fast retries, a quick poll. */
export const FAST_DELIVERY: NonNullable<NotificationConfigInput['delivery']> = {
  store_backend: 'memory',
  base_delay_ms: 5,
  max_delay_ms: 20,
  poll_interval_ms: 20,
  lease_seconds: 10,
  attempt_timeout_ms: 8000,
};

export async function startNotificationApp(
  overrides: NotificationConfigInput = {},
  options: NotificationAppOptions = {},
): Promise<RunningNotificationApp> {
  const config = loadNotificationConfig(
    {
      ...overrides,
      server: { host: '127.0.0.1', grpc_port: 0, http_port: 0, shutdown_drain_ms: 0, ...overrides.server },
      inbox: { store_backend: 'memory', ...overrides.inbox },
      delivery: { store_backend: 'memory', ...overrides.delivery },
    },
    { env: {}, file: null },
  );
  const app = await createNotificationApp(config, silentLogger(), options);
  const ports = await app.start();
  const grpcAddress = `127.0.0.1:${ports.grpc}`;
  const baseUrl = `http://127.0.0.1:${ports.http}`;
  const inboxGrpc = grpcClient(InboxService, grpcAddress);
  const inboxConnect = createClient(
    InboxService,
    createConnectTransport({ baseUrl, httpVersion: '1.1', useBinaryFormat: false }),
  );
  const notificationGrpc = grpcClient(NotificationService, grpcAddress);
  const notificationConnect = createClient(
    NotificationService,
    createConnectTransport({ baseUrl, httpVersion: '1.1', useBinaryFormat: false }),
  );
  return {
    app,
    grpcAddress,
    baseUrl,
    inboxGrpc,
    inboxConnect,
    notificationGrpc,
    notificationConnect,
    async close() {
      inboxGrpc.close();
      notificationGrpc.close();
      await app.stop();
    },
  };
}
