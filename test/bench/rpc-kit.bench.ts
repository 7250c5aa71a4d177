/**
 * Unary calls per second of a trivial RPC through the kit (grpc-js adapter + interceptors) against a
 * raw `@grpc/grpc-js` server answering the same message: same client, 64 calls in flight, same run.
 * Both servers run in one child process (see echo-servers.ts). Target (issue 2): at least 0.85.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { EchoService } from '../../shared/gen/svc/testing/v1/echo_pb';
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
export async function startEchoServers(): Promise<{ kit: string; raw: string; stop(): void }> {
  const child = spawn(process.execPath, [join(__dirname, 'echo-servers.js')], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const line = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout! }).once('line', resolve);
    child.once('exit', (code) => reject(new Error(`echo servers exited with ${code}`)));
  });
  const addrs = JSON.parse(line) as { kit: string; raw: string };
  return { ...addrs, stop: () => child.kill('SIGKILL') };
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
    return [
      {
        name: 'rpc kit unary echo vs raw grpc-js (calls/s, 64 in flight)',
        ...r,
        target: '>= 0.85',
        unit: 'calls/s',
      },
    ];
  } finally {
    kitClient.close();
    rawClient.close();
    servers.stop();
  }
}
