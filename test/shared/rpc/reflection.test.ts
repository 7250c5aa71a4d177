/**
 * Reflection tells the whole truth: every service it lists can be described and called by a client
 * that loads nothing from the project's proto files (`buf curl` with reflection), on both services.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { createMonitorApp, type MonitorApp } from '../../../services/monitor/app';
import { loadMonitorConfig } from '../../../services/monitor/config';
import { silentLogger } from '../../../shared/logging/logger';
import { startNotificationApp, type RunningNotificationApp } from '../../support/notification-app';

const run = promisify(execFile);
const BUF = join(__dirname, '../../../node_modules/.bin/buf');

/** `buf curl` over gRPC with reflection only (no schema of ours); resolves with stdout. */
async function bufCurl(args: string[]): Promise<string> {
  const { stdout } = await run(BUF, ['curl', ...args], { timeout: 30_000 });
  return stdout;
}

const grpcCurl = (port: number, ...args: string[]) =>
  bufCurl(['--protocol', 'grpc', '--http2-prior-knowledge', ...args, `http://127.0.0.1:${port}`]);

let notification: RunningNotificationApp;
let monitor: MonitorApp;
let monitorGrpcPort: number;

beforeAll(async () => {
  notification = await startNotificationApp();
  const config = loadMonitorConfig(
    {
      server: { host: '127.0.0.1', grpc_port: 0, http_port: 0, shutdown_drain_ms: 0 },
      database: { store_backend: 'memory' },
    },
    { env: {}, file: null },
  );
  monitor = await createMonitorApp(config, silentLogger());
  monitorGrpcPort = (await monitor.start()).grpc;
});
afterAll(async () => {
  await notification.close();
  await monitor.stop();
});

function ports(): Array<[string, number]> {
  // Read lazily: the ports are known only after beforeAll.
  return [
    ['notification', notification.app.server.boundPorts.grpc],
    ['monitor', monitorGrpcPort],
  ];
}

describe.each([['notification'], ['monitor']])('reflection on the %s service', (name) => {
  const port = () => ports().find(([n]) => n === name)![1];

  test('health Check works through reflection alone', async () => {
    const out = await bufCurl([
      '--protocol',
      'grpc',
      '--http2-prior-knowledge',
      '--data',
      '{"service":""}',
      `http://127.0.0.1:${port()}/grpc.health.v1.Health/Check`,
    ]);
    expect(JSON.parse(out)).toEqual({ status: 'SERVING' });
  });

  test('every listed service can be described, down to its methods', async () => {
    const services = (await grpcCurl(port(), '--list-services')).trim().split('\n');
    expect(services).toContain('grpc.health.v1.Health');
    expect(services.length).toBeGreaterThan(1);
    // Listing methods needs every service's descriptor (and its dependencies) to resolve.
    const methods = (await grpcCurl(port(), '--list-methods')).trim().split('\n');
    for (const service of services) {
      expect(methods.some((m) => m.startsWith(`${service}/`))).toBe(true);
    }
    expect(methods).toEqual(
      expect.arrayContaining(['grpc.health.v1.Health/Check', 'grpc.health.v1.Health/Watch']),
    );
  });
});

describe('buf curl on the HTTP port, with the schema from proto/', () => {
  const ROOT = join(__dirname, '../../..');
  test.each([['connect'], ['grpcweb']])('InboxService answers over %s', async (protocol) => {
    const userId = `buf-curl-${protocol}`;
    await notification.inboxConnect.send({ userId, title: 'hello', body: 'from a test' });
    const { stdout } = await run(
      BUF,
      [
        'curl',
        '--protocol',
        protocol,
        '--schema',
        'proto',
        '--data',
        JSON.stringify({ user_id: userId }),
        `${notification.baseUrl}/svc.notification.v1.InboxService/CountUnread`,
      ],
      { cwd: ROOT, timeout: 30_000 },
    );
    expect(JSON.parse(stdout)).toEqual({ unreadCount: 1 });
  });
});
