/**
 * Starts a real service process (`node dist/services/<name>/main.js`) on free loopback ports and
 * reads the ports it bound from its structured log. Used by the e2e tests and the benchmarks, from
 * the sources (jest) and from dist (bench). The compiled build must exist: `npm test` and
 * `npm run bench` build first; when run alone, this builds once if dist is missing.
 */
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';

/** The checkout's root: the nearest directory above this file with a package.json. */
function repoRoot(): string {
  let dir = __dirname;
  while (!existsSync(join(dir, 'package.json'))) {
    const parent = dirname(dir);
    if (parent === dir) throw new Error('package.json not found above ' + __dirname);
    dir = parent;
  }
  return dir;
}

const ROOT = repoRoot();
// Generous: an embedded PGlite first start takes 20 s or more on a loaded 2-core machine; a start is
// a precondition here, never a timing assertion.
const START_TIMEOUT_MS = 90_000;

export interface ServiceProcess {
  child: ChildProcess;
  grpcPort: number;
  httpPort: number;
  /** Every line the process wrote (stdout and stderr). */
  logs: string[];
  /** Sends `signal` (SIGTERM), SIGKILL after `graceMs`; resolves with the exit code. */
  stop(signal?: NodeJS.Signals, graceMs?: number): Promise<number | null>;
}

export interface StartServiceOptions {
  /** Working directory; the checkout by default. The benchmarks use a temp dir so no local
   * ./config/application.yaml leaks into what they measure. */
  cwd?: string;
  /** How long to wait for the ports (default 30 s); a first PGlite start under load needs more. */
  startTimeoutMs?: number;
  /** Called with the child as soon as it is spawned, before it listens (its workers may already run). */
  onSpawn?: (child: ChildProcess) => void;
}

/** Builds as `npm run build` does (tsc, then the pages' static files) when `dist` lacks the service. */
function ensureBuilt(name: string): string {
  const main = join(ROOT, 'dist', 'services', name, 'main.js');
  if (!existsSync(main)) {
    const run = (args: string[]) => execFileSync(process.execPath, args, { cwd: ROOT, stdio: 'inherit' });
    run([join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.build.json']);
    run([join(ROOT, 'scripts', 'copy-assets.mjs')]);
  }
  return main;
}

export async function startServiceProcess(
  name: 'notification' | 'monitor',
  env: Record<string, string> = {},
  options: StartServiceOptions = {},
): Promise<ServiceProcess> {
  const main = ensureBuilt(name);
  const prefix = `SVC_${name.toUpperCase()}__`;
  // The monitor runs its default store (PGlite) in a data directory of its own per process, removed
  // when it exits, so test files running at once in the checkout never share ./data/monitor. A test
  // that restarts a monitor on the same data passes SVC_MONITOR__DATABASE__DATA_DIR itself; one that
  // gives a working directory of its own gets the real default, ./data/monitor under it.
  let ownDataDir: string | undefined;
  if (
    name === 'monitor' &&
    options.cwd === undefined &&
    !env[`${prefix}DATABASE__DATA_DIR`] &&
    !env[`${prefix}DATABASE__URL`]
  ) {
    ownDataDir = mkdtempSync(join(tmpdir(), 'monitor-data-'));
    env = { [`${prefix}DATABASE__DATA_DIR`]: ownDataDir, ...env };
  }
  const child = spawn(process.execPath, [main], {
    cwd: options.cwd ?? ROOT,
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
  options.onSpawn?.(child);
  const logs: string[] = [];
  const exited = new Promise<number | null>((resolve) =>
    child.once('close', (code) => {
      if (ownDataDir) rmSync(ownDataDir, { recursive: true, force: true });
      resolve(code);
    }),
  );
  const stop = async (signal: NodeJS.Signals = 'SIGTERM', graceMs = 15_000): Promise<number | null> => {
    if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    const done = await Promise.race([exited.then(() => true), sleep(graceMs, false, { ref: false })]);
    if (!done) child.kill('SIGKILL');
    return exited;
  };
  createInterface({ input: child.stderr! }).on('line', (l) => logs.push(l));
  try {
    const ports = await new Promise<{ grpc: number; http: number }>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`${name} did not start:\n${logs.join('\n')}`)),
        options.startTimeoutMs ?? START_TIMEOUT_MS,
      );
      createInterface({ input: child.stdout! }).on('line', (line) => {
        logs.push(line);
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
      void exited.then((code) => {
        clearTimeout(timer);
        reject(new Error(`${name} exited with ${code} before listening:\n${logs.join('\n')}`));
      });
    });
    return { child, grpcPort: ports.grpc, httpPort: ports.http, logs, stop };
  } catch (err) {
    await stop('SIGKILL', 1000);
    throw err;
  }
}
