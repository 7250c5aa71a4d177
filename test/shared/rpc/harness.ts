import { Registry } from 'prom-client';
import { createClient, type Client } from '@connectrpc/connect';
import { createConnectTransport } from '@connectrpc/connect-node';
import { EchoService } from '../../../shared/gen/svc/testing/v1/echo_pb';
import { RpcServer, registration } from '../../../shared/rpc/server';
import { silentLogger } from '../../../shared/logging/logger';
import { EchoServiceImpl } from '../../support/echo-service';
import { grpcClient, type GenericClient } from '../../support/grpc-clients';

export interface EchoHarness {
  server: RpcServer;
  impl: EchoServiceImpl;
  registry: Registry;
  grpcAddress: string;
  baseUrl: string;
  grpc: GenericClient;
  connect(headers?: Record<string, string>): Client<typeof EchoService>;
  close(): Promise<void>;
}

/** Starts the kit with the echo service on free ports, with real clients for both ports. */
export async function startEchoServer(
  opts: { apiTokens?: string[]; maxRequestBytes?: number } = {},
): Promise<EchoHarness> {
  const impl = new EchoServiceImpl();
  const registry = new Registry();
  const server = new RpcServer({
    name: 'echo-test',
    logger: silentLogger(),
    registry,
    host: '127.0.0.1',
    grpcPort: 0,
    httpPort: 0,
    apiTokens: opts.apiTokens ?? [],
    maxRequestBytes: opts.maxRequestBytes ?? 4 * 1024 * 1024,
    shutdownDrainMs: 0,
    shutdownTimeoutMs: 2000,
    services: [registration(EchoService, impl)],
  });
  const ports = await server.start();
  server.health.setServing(true);
  const grpcAddress = `127.0.0.1:${ports.grpc}`;
  const baseUrl = `http://127.0.0.1:${ports.http}`;
  const grpc = grpcClient(EchoService, grpcAddress);
  return {
    server,
    impl,
    registry,
    grpcAddress,
    baseUrl,
    grpc,
    connect(headers = {}) {
      const transport = createConnectTransport({
        baseUrl,
        httpVersion: '1.1',
        useBinaryFormat: false,
        interceptors: [
          (next) => (req) => {
            for (const [k, v] of Object.entries(headers)) req.header.set(k, v);
            return next(req);
          },
        ],
      });
      return createClient(EchoService, transport);
    },
    async close() {
      grpc.close();
      await server.shutdown();
    },
  };
}
