import { Registry } from 'prom-client';
import { createClient, type Client } from '@connectrpc/connect';
import { createConnectTransport } from '@connectrpc/connect-node';
import { EchoService } from '../../../shared/gen/svc/testing/v1/echo_pb';
import {
  RpcServer,
  registration,
  type RegistrationOptions,
  type RpcServerOptions,
} from '../../../shared/rpc/server';
import { createLogger, silentLogger } from '../../../shared/logging/logger';
import type { Logger } from '../../../shared/logging/logger';
import { EchoServiceImpl } from '../../support/echo-service';
import { grpcClient, type GenericClient } from '../../support/grpc-clients';

/** A logger at debug level whose JSON lines the test can read back. */
export function capturingLogger(): { logger: Logger; lines: () => Array<Record<string, unknown>> } {
  const raw: string[] = [];
  const logger = createLogger({
    name: 'test',
    level: 'debug',
    destination: { write: (line: string) => void raw.push(line) },
  });
  return { logger, lines: () => raw.map((l) => JSON.parse(l) as Record<string, unknown>) };
}

/** What a test may set on the kit besides the defaults. */
export type EchoServerOptions = Partial<
  Pick<
    RpcServerOptions,
    | 'apiTokens'
    | 'maxRequestBytes'
    | 'maxInFlightRequestBytes'
    | 'maxConcurrentStreams'
    | 'httpMaxConnections'
    | 'httpHeadersTimeoutMs'
    | 'httpRequestTimeoutMs'
    | 'logger'
    | 'onUnexpectedError'
  >
> & {
  /** Replaces EchoServiceImpl's methods (a quiet stream, say). */
  impl?: EchoServiceImpl;
  /** The echo service's scope table. */
  scopes?: RegistrationOptions<typeof EchoService>['scopes'];
  /** Echo methods that accept more than `maxRequestBytes`, bytes by method. */
  methodMaxRequestBytes?: RegistrationOptions<typeof EchoService>['maxRequestBytes'];
};

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
export async function startEchoServer(opts: EchoServerOptions = {}): Promise<EchoHarness> {
  const impl = opts.impl ?? new EchoServiceImpl();
  const registry = new Registry();
  const server = new RpcServer({
    name: 'echo-test',
    logger: opts.logger ?? silentLogger(),
    registry,
    host: '127.0.0.1',
    grpcPort: 0,
    httpPort: 0,
    apiTokens: opts.apiTokens ?? [],
    maxRequestBytes: opts.maxRequestBytes ?? 4 * 1024 * 1024,
    shutdownDrainMs: 0,
    shutdownTimeoutMs: 2000,
    ...(opts.maxConcurrentStreams !== undefined ? { maxConcurrentStreams: opts.maxConcurrentStreams } : {}),
    ...(opts.httpMaxConnections !== undefined ? { httpMaxConnections: opts.httpMaxConnections } : {}),
    ...(opts.httpHeadersTimeoutMs !== undefined ? { httpHeadersTimeoutMs: opts.httpHeadersTimeoutMs } : {}),
    ...(opts.httpRequestTimeoutMs !== undefined ? { httpRequestTimeoutMs: opts.httpRequestTimeoutMs } : {}),
    ...(opts.maxInFlightRequestBytes !== undefined
      ? { maxInFlightRequestBytes: opts.maxInFlightRequestBytes }
      : {}),
    services: [
      registration(EchoService, impl, {
        ...(opts.scopes ? { scopes: opts.scopes } : {}),
        ...(opts.methodMaxRequestBytes ? { maxRequestBytes: opts.methodMaxRequestBytes } : {}),
      }),
    ],
    ...(opts.onUnexpectedError ? { onUnexpectedError: opts.onUnexpectedError } : {}),
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
