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
