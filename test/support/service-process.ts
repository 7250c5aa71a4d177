/**
 * Starts a real service process (`node dist/services/<name>/main.js`) on free ports and reads the
 * ports it bound from its structured log. The compiled build must exist: `npm test` builds first;
 * when run alone, this builds once if dist is missing.
 */
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

const ROOT = join(__dirname, '..', '..');

export interface ServiceProcess {
  child: ChildProcess;
  grpcPort: number;
  httpPort: number;
  logs: string[];
  /** Sends SIGTERM and resolves with the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

function ensureBuilt(name: string): string {
  const main = join(ROOT, 'dist', 'services', name, 'main.js');
  if (!existsSync(main)) {
    execFileSync(
      process.execPath,
      [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.build.json'],
      {
        cwd: ROOT,
        stdio: 'inherit',
      },
    );
  }
  return main;
}

export async function startServiceProcess(
  name: 'notification' | 'monitor',
  env: Record<string, string> = {},
): Promise<ServiceProcess> {
  const main = ensureBuilt(name);
  const prefix = `SVC_${name.toUpperCase()}__`;
  const child = spawn(process.execPath, [main], {
    cwd: ROOT,
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
  const logs: string[] = [];
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  createInterface({ input: child.stderr! }).on('line', (l) => logs.push(l));
  const ports = await new Promise<{ grpc: number; http: number }>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${name} did not start:\n${logs.join('\n')}`)), 30_000);
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
  return {
    child,
    grpcPort: ports.grpc,
    httpPort: ports.http,
    logs,
    async stop(signal = 'SIGTERM') {
      if (child.exitCode === null) child.kill(signal);
      return exited;
    },
  };
}
