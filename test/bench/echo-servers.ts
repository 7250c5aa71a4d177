/**
 * Child process of the RPC kit benchmark: serves the kit's EchoService and a raw grpc-js echo server,
 * prints their addresses as one JSON line, and runs until killed. Keeping servers out of the client's
 * process gives each side its own core, as in production, so the ratio measures the servers.
 */
import { Registry } from 'prom-client';
import { EchoService } from '../../shared/gen/svc/testing/v1/echo_pb';
import { RpcServer, registration } from '../../shared/rpc/server';
import { silentLogger } from '../../shared/logging/logger';
import { EchoServiceImpl } from '../support/echo-service';
import { startRawEchoServer } from './raw-echo-server';

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
  process.stdout.write(`${JSON.stringify({ kit: `127.0.0.1:${ports.grpc}`, raw: raw.address })}\n`);
}

// Exit cleanly on SIGTERM/SIGINT so profilers (node --cpu-prof) can write their output.
for (const s of ['SIGTERM', 'SIGINT'] as const) process.on(s, () => process.exit(0));
void main();
