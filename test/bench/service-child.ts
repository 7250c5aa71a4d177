/**
 * A service process for benchmarks: `node dist/services/<name>/main.js` next to the compiled bench
 * (benchmarks run from dist, where test/support/service-process.ts would look for dist/dist), on
 * free loopback ports read from its "listening" log line. The working directory is the temp dir,
 * so no ./config/application.yaml of the checkout leaks into the measured configuration.
 */
import { spawn } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';

/** A running service process. */
export interface ServiceChild {
  grpcPort: number;
  httpPort: number;
  /** SIGTERM, then SIGKILL after `graceMs`; resolves once the process has exited. */
  stop(graceMs?: number): Promise<void>;
}

const START_TIMEOUT_MS = 30_000;

/** Starts `dist/services/<name>/main.js` with `SVC_<NAME>__*` settings from `env` on loopback port 0. */
export async function startServiceChild(
  name: 'notification' | 'monitor',
  env: Record<string, string>,
): Promise<ServiceChild> {
  const prefix = `SVC_${name.toUpperCase()}__`;
  const child = spawn(process.execPath, [join(__dirname, '..', '..', 'services', name, 'main.js')], {
    cwd: tmpdir(),
    env: {
      PATH: process.env.PATH ?? '',
      NODE_ENV: 'test',
      [`${prefix}SERVER__HOST`]: '127.0.0.1',
      [`${prefix}SERVER__GRPC_PORT`]: '0',
      [`${prefix}SERVER__HTTP_PORT`]: '0',
      [`${prefix}SERVER__SHUTDOWN_DRAIN_MS`]: '0',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  // Keep the last lines only, for the error message; the pipes are drained either way.
  const tail: string[] = [];
  const keep = (line: string) => {
    tail.push(line);
    if (tail.length > 50) tail.shift();
  };
  createInterface({ input: child.stderr! }).on('line', keep);
  const stop = async (graceMs = 10_000) => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    if (await Promise.race([exited.then(() => true), sleep(graceMs).then(() => false)])) return;
    child.kill('SIGKILL');
    await exited;
  };
  try {
    const ports = await new Promise<{ grpc: number; http: number }>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`${name} did not start:\n${tail.join('\n')}`)),
        START_TIMEOUT_MS,
      );
      createInterface({ input: child.stdout! }).on('line', (line) => {
        keep(line);
        try {
          const rec = JSON.parse(line) as { grpcPort?: number; httpPort?: number };
          if (rec.grpcPort && rec.httpPort) {
            clearTimeout(timer);
            resolve({ grpc: rec.grpcPort, http: rec.httpPort });
          }
        } catch {
          // not a JSON line
        }
      });
      void exited.then(() => {
        clearTimeout(timer);
        reject(new Error(`${name} exited before listening:\n${tail.join('\n')}`));
      });
    });
    return { grpcPort: ports.grpc, httpPort: ports.http, stop };
  } catch (err) {
    await stop(0);
    throw err;
  }
}
