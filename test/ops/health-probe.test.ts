/**
 * The container healthcheck: the compiled gRPC health probe, run as its own process exactly as the
 * Dockerfile's HEALTHCHECK runs it, against a started service, a server that is not serving, and a
 * port where nothing listens.
 */
import * as grpc from '@grpc/grpc-js';
import { execFile, execFileSync } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { ServingStatusReporter } from '../../shared/rpc/grpc-health';
import { runHealthProbe } from '../../shared/runtime/health-probe';
import { startNotificationApp } from '../support/notification-app';
import { refusedPort } from '../support/ports';

const ROOT = join(__dirname, '..', '..');
const SOURCE = join(ROOT, 'shared', 'runtime', 'health-probe.ts');
const COMPILED = join(ROOT, 'dist', 'shared', 'runtime', 'health-probe.js');

/** The probe as the image runs it; compiles first when dist is missing or older than the source. */
function runCompiledProbe(args: string[]): Promise<{ code: number | null; output: string }> {
  if (!existsSync(COMPILED) || statSync(COMPILED).mtimeMs < statSync(SOURCE).mtimeMs) {
    execFileSync(
      process.execPath,
      [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.build.json'],
      {
        cwd: ROOT,
        stdio: 'inherit',
      },
    );
  }
  return new Promise((resolve) => {
    const child = execFile(
      process.execPath,
      [COMPILED, ...args],
      { cwd: ROOT, timeout: 30_000 },
      (_e, stdout, stderr) => resolve({ code: child.exitCode, output: `${stdout}${stderr}` }),
    );
  });
}

/** A grpc-js server with only the health service, reporting NOT_SERVING (as while starting or draining). */
async function notServingServer(): Promise<{ address: string; close(): void }> {
  const server = new grpc.Server();
  new ServingStatusReporter(['svc.notification.v1.InboxService']).addToServer(server);
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) =>
      err ? reject(err) : resolve(p),
    ),
  );
  return { address: `127.0.0.1:${port}`, close: () => server.forceShutdown() };
}

describe('the gRPC health probe of the container image', () => {
  test('When the service is SERVING, the probe process exits 0', async () => {
    const app = await startNotificationApp();
    try {
      const run = await runCompiledProbe([app.grpcAddress]);
      expect(run.output).toContain('SERVING');
      expect(run.code).toBe(0);
      // A named service of the server is probed the same way.
      expect((await runCompiledProbe([app.grpcAddress, 'svc.notification.v1.InboxService'])).code).toBe(0);
    } finally {
      await app.close();
    }
  });

  test('When the server answers NOT_SERVING, the probe process exits 1', async () => {
    const server = await notServingServer();
    try {
      const run = await runCompiledProbe([server.address]);
      expect(run.output).toContain('NOT_SERVING');
      expect(run.code).toBe(1);
    } finally {
      server.close();
    }
  });

  test('When nothing listens on the port, the probe process exits 1 saying unreachable', async () => {
    const run = await runCompiledProbe([`127.0.0.1:${await refusedPort()}`]);
    expect(run.output).toContain('unreachable');
    expect(run.code).toBe(1);
  });

  test('When the service name is unknown to the server, the probe exits 1 (NOT_FOUND)', async () => {
    const app = await startNotificationApp();
    try {
      const lines: string[] = [];
      expect(await runHealthProbe([app.grpcAddress, 'no.such.Service'], (l) => lines.push(l))).toBe(1);
      expect(lines.join('\n')).toContain('NOT_FOUND');
    } finally {
      await app.close();
    }
  });

  test('When the address is not host:port, the probe exits 2 without calling anything', async () => {
    const lines: string[] = [];
    expect(await runHealthProbe(['http://localhost:50051'], (l) => lines.push(l))).toBe(2);
    expect(lines.join('\n')).toContain('expected host:port');
    expect(await runHealthProbe(['a:1', 'b', 'c'], () => undefined)).toBe(2);
  });
});
