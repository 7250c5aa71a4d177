/**
 * Child process of the inbox-scale read benchmark: the gRPC half of its baseline.
 *
 * Usage: node raw-inbox-echo-server.js <service address> <request JSON per method>
 *
 * Asks the real notification service once for each method's answer (for example the GetInbox first
 * page), then serves those captured answers from a raw grpc-js server with the same InboxService
 * definition: no adapter, no interceptors, no domain, no database. A call to it is one gRPC hop
 * carrying a response of exactly the size and shape the service sends (encoded with `toBinary` on
 * every call, like the service), so "the same SQL through pg, then this echo" is what the service's
 * call would cost with nothing in between. Prints its address as one JSON line and runs until killed.
 */
import * as grpc from '@grpc/grpc-js';
import { InboxService } from '../../shared/gen/svc/notification/v1/inbox_pb';
import { createGrpcServiceDefinition } from '../../shared/rpc/grpc-adapter';

type Unary = (req: unknown, cb: (err: grpc.ServiceError | null, res: unknown) => void) => void;

async function main(): Promise<void> {
  const [address, requestsJson] = process.argv.slice(2);
  if (!address || !requestsJson) throw new Error('usage: raw-inbox-echo-server <address> <requests JSON>');
  const requests = JSON.parse(requestsJson) as Record<string, unknown>;
  const definition = createGrpcServiceDefinition(InboxService);
  const Client = grpc.makeGenericClientConstructor(definition, InboxService.name);
  const client = new Client(address, grpc.credentials.createInsecure()) as unknown as Record<string, Unary>;
  const answers = new Map<string, unknown>();
  try {
    for (const [method, request] of Object.entries(requests)) {
      const fn = client[method];
      if (!fn) throw new Error(`raw-inbox-echo-server: no method ${method}`);
      answers.set(
        method,
        await new Promise((resolve, reject) =>
          fn.call(client, request, (err, res) => (err ? reject(err) : resolve(res))),
        ),
      );
    }
  } finally {
    (client as unknown as grpc.Client).close();
  }

  const server = new grpc.Server();
  const handlers: grpc.UntypedServiceImplementation = {};
  for (const [method, answer] of answers) {
    handlers[method] = (_call: grpc.ServerUnaryCall<unknown, unknown>, cb: grpc.sendUnaryData<unknown>) =>
      cb(null, answer);
  }
  server.addService(definition, handlers);
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (e, p) =>
      e ? reject(e) : resolve(p),
    ),
  );
  process.stdout.write(`${JSON.stringify({ address: `127.0.0.1:${port}` })}\n`);
}

for (const s of ['SIGTERM', 'SIGINT'] as const) process.on(s, () => process.exit(0));
main().catch((err: unknown) => {
  process.stderr.write(`raw-inbox-echo-server: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
