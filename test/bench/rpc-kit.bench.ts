/**
 * Unary calls per second of a trivial RPC through the kit (grpc-js adapter + interceptors) against a
 * raw `@grpc/grpc-js` server answering the same message: same client, 64 calls in flight, same run.
 * Both servers run in one child process (see echo-servers.ts). Target (issue 2): at least 0.85.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { EchoService } from '../../shared/gen/svc/testing/v1/echo_pb';
import { InboxService } from '../../shared/gen/svc/notification/v1/inbox_pb';
import { grpcClient, type GenericClient } from '../support/grpc-clients';
import { compareThroughput, throughput, type BenchRow } from './measure';

export const CONCURRENCY = 64;

export function unaryEcho(client: GenericClient): () => Promise<unknown> {
  const echo = client.echo as unknown as (req: unknown, cb: (e: Error | null, r: unknown) => void) => void;
  const req = { message: 'ping' };
  return () =>
    new Promise((resolve, reject) => echo.call(client, req, (e, r) => (e ? reject(e) : resolve(r))));
}

/** Starts the echo servers' child process; resolves with their addresses and a stop function. */
export async function startEchoServers(): Promise<{
  kit: string;
  raw: string;
  notification: string;
  stop(): void;
}> {
  const child = spawn(process.execPath, [join(__dirname, 'echo-servers.js')], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const line = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout! }).once('line', resolve);
    child.once('exit', (code) => reject(new Error(`echo servers exited with ${code}`)));
  });
  const addrs = JSON.parse(line) as { kit: string; raw: string; notification: string };
  // SIGTERM: the child exits cleanly, so a profiler preloaded through NODE_OPTIONS writes its output.
  return { ...addrs, stop: () => child.kill('SIGTERM') };
}

export async function runRpcKitBench(durationMs = 3000): Promise<BenchRow[]> {
  const servers = await startEchoServers();
  const kitClient = grpcClient(EchoService, servers.kit);
  const rawClient = grpcClient(EchoService, servers.raw);
  try {
    const r = await compareThroughput(
      () => throughput(unaryEcho(kitClient), CONCURRENCY, durationMs),
      () => throughput(unaryEcho(rawClient), CONCURRENCY, durationMs),
    );
    // Issue 4: inbox Send (memory store) against the same raw baseline, same client and concurrency.
    const inboxClient = grpcClient(InboxService, servers.notification);
    const send = inboxClient.send as unknown as (
      req: unknown,
      cb: (e: Error | null, r: unknown) => void,
    ) => void;
    let i = 0;
    const sendOne = () =>
      new Promise((resolve, reject) =>
        send.call(
          inboxClient,
          { userId: `bench-${i++ % 1000}`, title: 'Build finished', body: 'ok' },
          (e, res) => (e ? reject(e) : resolve(res)),
        ),
      );
    const s = await compareThroughput(
      () => throughput(sendOne, CONCURRENCY, durationMs),
      () => throughput(unaryEcho(rawClient), CONCURRENCY, durationMs),
    );
    inboxClient.close();
    return [
      {
        name: 'rpc kit unary echo vs raw grpc-js (calls/s, 64 in flight)',
        ...r,
        target: '>= 0.85',
        unit: 'calls/s',
      },
      {
        name: 'inbox Send over gRPC, memory store, vs raw grpc-js echo (calls/s, 64 in flight)',
        ...s,
        target: '>= 0.8',
        unit: 'calls/s',
      },
    ];
  } finally {
    kitClient.close();
    rawClient.close();
    servers.stop();
  }
}
