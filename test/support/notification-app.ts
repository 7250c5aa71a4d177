/** Runs the notification service in-process on free ports, with real clients for tests. */
import { createClient, type Client } from '@connectrpc/connect';
import { createConnectTransport } from '@connectrpc/connect-node';
import { InboxService } from '../../shared/gen/svc/notification/v1/inbox_pb';
import { silentLogger } from '../../shared/logging/logger';
import { loadNotificationConfig, type NotificationConfigInput } from '../../services/notification/config';
import { createNotificationApp, type NotificationApp } from '../../services/notification/app';
import { grpcClient, type GenericClient } from './grpc-clients';

export interface RunningNotificationApp {
  app: NotificationApp;
  grpcAddress: string;
  baseUrl: string;
  inboxGrpc: GenericClient;
  inboxConnect: Client<typeof InboxService>;
  close(): Promise<void>;
}

export async function startNotificationApp(
  overrides: NotificationConfigInput = {},
): Promise<RunningNotificationApp> {
  const config = loadNotificationConfig(
    {
      ...overrides,
      server: { host: '127.0.0.1', grpc_port: 0, http_port: 0, shutdown_drain_ms: 0, ...overrides.server },
      inbox: { store_backend: 'memory', ...overrides.inbox },
    },
    { env: {}, file: null },
  );
  const app = await createNotificationApp(config, silentLogger());
  const ports = await app.start();
  const grpcAddress = `127.0.0.1:${ports.grpc}`;
  const baseUrl = `http://127.0.0.1:${ports.http}`;
  const inboxGrpc = grpcClient(InboxService, grpcAddress);
  const inboxConnect = createClient(
    InboxService,
    createConnectTransport({ baseUrl, httpVersion: '1.1', useBinaryFormat: false }),
  );
  return {
    app,
    grpcAddress,
    baseUrl,
    inboxGrpc,
    inboxConnect,
    async close() {
      inboxGrpc.close();
      await app.stop();
    },
  };
}
