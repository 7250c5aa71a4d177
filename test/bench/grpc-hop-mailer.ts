/**
 * The email bench's second reference: nodemailer behind one bare gRPC hop, in a process of its own.
 * A raw grpc-js server (no interceptors, no auth, no validation, no store, no retries, no metrics)
 * answers `NotificationService.SendEmail` by handing the request's to / subject / text to
 * nodemailer's pooled transport and answering once the relay accepted it. It is the service's shape
 * (a client, a gRPC server process, nodemailer, the peer) with nothing of the service inside, so
 * SendEmail against it tells what the pipeline costs, apart from what the shape costs. Runs from the
 * compiled build only (`dist/test/bench/grpc-hop-mailer.js`), as the benchmarks do.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';

import * as grpc from '@grpc/grpc-js';
import { createTransport } from 'nodemailer';

import { NotificationService } from '../../shared/gen/svc/notification/v1/notification_pb';
import { createGrpcServiceDefinition } from '../../shared/rpc/grpc-adapter';

/** The running hop: its gRPC port and pid (the bench reads its CPU time from /proc). */
export interface GrpcHopMailer {
  grpcPort: number;
  pid: number | undefined;
  stop(): Promise<void>;
}

/** Forks the hop, pointed at the SMTP peer on `smtpPort` with a pool of `poolSize`, and waits for its port. */
export async function startGrpcHopMailer(
  smtpPort: number,
  poolSize: number,
  from: string,
): Promise<GrpcHopMailer> {
  const child: ChildProcess = fork(__filename, [String(smtpPort), String(poolSize), from], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const grpcPort = await new Promise<number>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`gRPC hop process exited with ${code}`)));
    child.once('message', (m: { port: number }) => resolve(m.port));
  });
  return {
    grpcPort,
    pid: child.pid,
    async stop() {
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      child.kill('SIGTERM');
      await exited;
    },
  };
}

interface EmailCall {
  to: string[];
  subject: string;
  text: string;
}

/** The child: one grpc-js server, one pooled transport. */
async function main(smtpPort: number, poolSize: number, from: string): Promise<void> {
  const transport = createTransport({
    host: '127.0.0.1',
    port: smtpPort,
    pool: true,
    maxConnections: poolSize,
    secure: false,
    ignoreTLS: true,
  });
  const server = new grpc.Server();
  server.addService(createGrpcServiceDefinition(NotificationService), {
    sendEmail: (call: grpc.ServerUnaryCall<EmailCall, unknown>, answer: grpc.sendUnaryData<unknown>) => {
      const id = randomUUID();
      const { to, subject, text } = call.request;
      transport
        .sendMail({ from, to, subject, text, messageId: `<${id}@example.com>` })
        .then(() => answer(null, { deliveryId: id, messageId: `<${id}@example.com>` }))
        .catch((err: unknown) => answer({ code: grpc.status.UNAVAILABLE, details: String(err) }));
    },
  });
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (e, p) =>
      e ? reject(e) : resolve(p),
    ),
  );
  process.on('SIGTERM', () => {
    transport.close();
    server.forceShutdown();
    process.exit(0);
  });
  process.send!({ port });
}

if (require.main === module && process.send) {
  const [smtpPort, poolSize, from] = process.argv.slice(2);
  void main(Number(smtpPort), Number(poolSize), from!);
}
