/**
 * A small real gRPC server for the targets tests: grpc-health-check's HealthImplementation on
 * 127.0.0.1, with a count of Check calls, that can be stopped and started again on the same port.
 */
import * as grpc from '@grpc/grpc-js';
import { HealthImplementation, type ServingStatus } from 'grpc-health-check';

/** A health server the test drives. */
export interface HealthServer {
  readonly port: number;
  readonly address: string;
  /** Check calls answered since the server was first started. */
  readonly checks: number;
  setStatus(status: ServingStatus): void;
  /** Stops listening (open connections are cut). */
  stop(): void;
  /** Listens again on the same port, with the status it had. */
  restart(): Promise<void>;
}

async function bind(
  port: number,
  health: HealthImplementation,
  onCheck: () => void,
): Promise<{
  server: grpc.Server;
  port: number;
}> {
  const server = new grpc.Server();
  // Count calls through the standard implementation: wrap its server registration.
  health.addToServer({
    addService: (service, impl) => {
      const check = impl.check as grpc.handleUnaryCall<unknown, unknown>;
      server.addService(service, {
        ...impl,
        check: (call: grpc.ServerUnaryCall<unknown, unknown>, cb: grpc.sendUnaryData<unknown>) => {
          onCheck();
          check(call, cb);
        },
      });
    },
  } as grpc.Server);
  const bound = await new Promise<number>((resolve, reject) =>
    server.bindAsync(`127.0.0.1:${port}`, grpc.ServerCredentials.createInsecure(), (err, p) =>
      err ? reject(err) : resolve(p),
    ),
  );
  return { server, port: bound };
}

/** Starts a health server on a free port, serving `status` for service "". */
export async function startHealthServer(status: ServingStatus = 'SERVING'): Promise<HealthServer> {
  const health = new HealthImplementation({ '': status });
  let checks = 0;
  const onCheck = (): void => void checks++;
  let current = await bind(0, health, onCheck);
  const port = current.port;
  let running: grpc.Server | undefined = current.server;
  return {
    port,
    address: `127.0.0.1:${port}`,
    get checks() {
      return checks;
    },
    setStatus: (s) => health.setStatus('', s),
    stop() {
      running?.forceShutdown();
      running = undefined;
    },
    async restart() {
      current = await bind(port, health, onCheck);
      running = current.server;
    },
  };
}
