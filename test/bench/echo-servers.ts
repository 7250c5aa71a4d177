/**
 * Child process of the RPC benchmarks: serves the kit's EchoService, a raw grpc-js echo server and the
 * notification service (memory inbox store),
 * prints their addresses as one JSON line, and runs until killed. Keeping servers out of the client's
 * process gives each side its own core, as in production, so the ratio measures the servers.
 */
import { Registry } from 'prom-client';
import { EchoService } from '../../shared/gen/svc/testing/v1/echo_pb';
import { RpcServer, registration } from '../../shared/rpc/server';
import { silentLogger } from '../../shared/logging/logger';
import { EchoServiceImpl } from '../support/echo-service';
import { startRawEchoServer } from './raw-echo-server';
import { loadNotificationConfig } from '../../services/notification/config';
import { createNotificationApp } from '../../services/notification/app';

async function main(): Promise<void> {
  const kit = new RpcServer({
    name: 'bench',
    logger: silentLogger(),
    registry: new Registry(),
    host: '127.0.0.1',
    grpcPort: 0,
    httpPort: 0,
    apiTokens: [],
    maxRequestBytes: 4 * 1024 * 1024,
    shutdownDrainMs: 0,
    shutdownTimeoutMs: 1000,
    services: [registration(EchoService, new EchoServiceImpl())],
  });
  const ports = await kit.start();
  kit.health.setServing(true);
  const raw = await startRawEchoServer();
  // The notification service with the memory inbox store, for the inbox Send benchmark.
  const notification = await createNotificationApp(
    loadNotificationConfig(
      {
        server: { host: '127.0.0.1', grpc_port: 0, http_port: 0 },
        inbox: { store_backend: 'memory' },
        delivery: { store_backend: 'memory' },
      },
      { env: {}, file: null },
    ),
    silentLogger(),
  );
  const n = await notification.start();
  process.stdout.write(
    `${JSON.stringify({ kit: `127.0.0.1:${ports.grpc}`, raw: raw.address, notification: `127.0.0.1:${n.grpc}` })}\n`,
  );
}

// Exit cleanly on SIGTERM/SIGINT so profilers (node --cpu-prof) can write their output.
for (const s of ['SIGTERM', 'SIGINT'] as const) process.on(s, () => process.exit(0));
void main();
