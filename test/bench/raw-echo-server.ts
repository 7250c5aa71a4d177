import { fork } from 'node:child_process';

import * as grpc from '@grpc/grpc-js';
import { EchoService } from '../../shared/gen/svc/testing/v1/echo_pb';
import { createGrpcServiceDefinition } from '../../shared/rpc/grpc-adapter';

/** A raw grpc-js server with the same message types, answering Echo directly: the baseline. */
export async function startRawEchoServer(): Promise<{ address: string; close(): void }> {
  const server = new grpc.Server();
  server.addService(createGrpcServiceDefinition(EchoService), {
    echo: (call: grpc.ServerUnaryCall<{ message: string }, unknown>, cb: grpc.sendUnaryData<unknown>) =>
      cb(null, { message: call.request.message, headerEcho: '' }),
  });
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (e, p) =>
      e ? reject(e) : resolve(p),
    ),
  );
  return { address: `127.0.0.1:${port}`, close: () => server.forceShutdown() };
}

/**
 * The raw echo in a process of its own (forked from the compiled build, `dist/test/bench/`), so it
 * has a core to itself as a service process would: the ceiling of any acknowledged unary call.
 */
export async function startRawEchoProcess(): Promise<{
  address: string;
  pid: number | undefined;
  stop(): Promise<void>;
}> {
  const child = fork(__filename, [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const address = await new Promise<string>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`raw echo process exited with ${code}`)));
    child.once('message', (m: { address: string }) => resolve(m.address));
  });
  return {
    address,
    pid: child.pid,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      child.kill('SIGTERM');
      await exited;
    },
  };
}

if (require.main === module && process.send) {
  process.on('SIGTERM', () => process.exit(0));
  void startRawEchoServer().then(({ address }) => process.send!({ address }));
}
