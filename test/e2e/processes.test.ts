import { execFileSync, spawn } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import * as grpc from '@grpc/grpc-js';
import { NotificationService } from '../../shared/gen/svc/notification/v1/notification_pb';
import { MonitorService } from '../../shared/gen/svc/monitor/v1/monitor_pb';
import { startServiceProcess, type ServiceProcess } from '../support/service-process';
import { waitFor } from '../support/wait';
import {
  grpcClient,
  healthCheck,
  healthClient,
  listServicesByReflection,
  unary,
} from '../support/grpc-clients';

async function checkAt(address: string, service = ''): Promise<string> {
  const client = healthClient(address);
  try {
    return await healthCheck(client, service);
  } finally {
    client.close();
  }
}

// Each process answers one RPC from outside with a known error: the notification service has no SMS
// backend configured here; the monitor has no trace without an id.
describe.each([
  ['notification', NotificationService, 'sendSms', grpc.status.FAILED_PRECONDITION, 'failed_precondition'],
  ['monitor', MonitorService, 'getTrace', grpc.status.INVALID_ARGUMENT, 'invalid_argument'],
] as const)('the %s process', (name, service, method, expectedCode, codeLabel) => {
  let proc: ServiceProcess;
  beforeAll(async () => {
    proc = await startServiceProcess(
      name,
      name === 'notification'
        ? {
            SVC_NOTIFICATION__INBOX__STORE_BACKEND: 'memory',
            SVC_NOTIFICATION__DELIVERY__STORE_BACKEND: 'memory',
          }
        : {},
    );
  });
  afterAll(async () => {
    await proc.stop();
  });

  test('answers the standard health check as SERVING from outside', async () => {
    expect(await checkAt(`127.0.0.1:${proc.grpcPort}`)).toBe('SERVING');
    expect(await checkAt(`127.0.0.1:${proc.grpcPort}`, service.typeName)).toBe('SERVING');
  });

  test('lists its service through reflection', async () => {
    expect(await listServicesByReflection(`127.0.0.1:${proc.grpcPort}`)).toContain(service.typeName);
  });

  test(`answers ${method} from outside with ${codeLabel}`, async () => {
    const client = grpcClient(service, `127.0.0.1:${proc.grpcPort}`);
    try {
      await expect(unary(client, method, {})).rejects.toMatchObject({ code: expectedCode });
    } finally {
      client.close();
    }
  });

  test('serves /health, the probes and promtool-clean /metrics on its HTTP port', async () => {
    const base = `http://127.0.0.1:${proc.httpPort}`;
    const health = await fetch(`${base}/health`);
    expect(health.status).toBe(200);
    expect(((await health.json()) as { status: string }).status).toBe('healthy');
    for (const probe of ['live', 'ready', 'startup'])
      expect((await fetch(`${base}/health/${probe}`)).status).toBe(200);
    const metrics = await (await fetch(`${base}/metrics`)).text();
    expect(metrics).toMatch(/process_cpu_user_seconds_total/);
    expect(metrics).toMatch(new RegExp(`rpc_server_handled_total\\{[^}]*rpc_code="${codeLabel}"`));
    // HTTP request metrics are recorded for what this test asked the HTTP port above.
    expect(metrics).toMatch(/http_requests_total\{method="GET",route="\/health",status="200"\} 1/);
    expect(metrics).toMatch(/http_requests_total\{method="GET",route="\/health\/ready",status="200"\} 1/);
    expect(() =>
      execFileSync('promtool', ['check', 'metrics'], { input: metrics, stdio: 'pipe' }),
    ).not.toThrow();
  });

  test('logs where it listens', async () => {
    expect(proc.logs.join('\n')).toMatch(new RegExp(`${name} ready: gRPC 127.0.0.1:${proc.grpcPort}`));
  });

  test('exits 0 after a graceful shutdown on SIGTERM', async () => {
    expect(await proc.stop('SIGTERM')).toBe(0);
    expect(proc.logs.join('\n')).toMatch(/shutdown: reporting NOT_SERVING/);
  });
});

test('a process with an invalid config value exits 2 naming the key, the source and the env var', async () => {
  await expect(
    startServiceProcess('monitor', { SVC_MONITOR__SERVER__GRPC_PORT: 'not-a-port' }),
  ).rejects.toThrow(/exited with 2[\s\S]*monitor\.server\.grpc_port[\s\S]*SVC_MONITOR__SERVER__GRPC_PORT/);
});

test('secrets from the environment never appear in the logs', async () => {
  const proc = await startServiceProcess('notification', {
    SVC_NOTIFICATION__SERVER__API_TOKENS: 'super-secret-token-value',
  });
  await proc.stop();
  expect(proc.logs.join('\n')).not.toContain('super-secret-token-value');
  expect(proc.logs.join('\n')).toContain('effective configuration');
});

describe('the notification process on embedded defaults for local use', () => {
  let proc: ServiceProcess;
  beforeAll(async () => {
    proc = await startServiceProcess('notification', {
      SVC_NOTIFICATION__INBOX__STORE_BACKEND: 'memory',
      SVC_NOTIFICATION__DELIVERY__STORE_BACKEND: 'memory',
    });
  });
  afterAll(async () => {
    await proc.stop();
  });

  test('its /health includes the notifications.inbox check with the store backend', async () => {
    const body = (await (await fetch(`http://127.0.0.1:${proc.httpPort}/health`)).json()) as {
      checks: Record<string, { status: string; details: { backend: string } }>;
    };
    expect(body.checks['notifications.inbox']).toMatchObject({
      status: 'healthy',
      details: { backend: 'memory' },
    });
  });

  test('it prints a demo login link whose token opens the admin inbox', async () => {
    // Logged right after the "listening" line that startServiceProcess waits for.
    for (let i = 0; i < 200 && !proc.logs.some((l) => l.includes('admin page (demo login')); i++) {
      await new Promise((r) => setTimeout(r, 25));
    }
    const line = proc.logs.find((l) => l.includes('admin page (demo login'));
    expect(line).toBeDefined();
    const token = /#token=([A-Za-z0-9._-]+)/.exec(line!)![1]!;
    const res = await fetch(`http://127.0.0.1:${proc.httpPort}/admin/notifications/inbox`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { unread_count: number }).unread_count).toBe(0);
    const bad = await fetch(`http://127.0.0.1:${proc.httpPort}/admin/notifications/inbox`, {
      headers: { authorization: `Bearer ${token}x` },
    });
    expect(bad.status).toBe(401);
  });
});

test('in production without admin keys the notification process refuses to start', async () => {
  await expect(
    startServiceProcess('notification', {
      NODE_ENV: 'production',
      SVC_NOTIFICATION__INBOX__STORE_BACKEND: 'memory',
      SVC_NOTIFICATION__DELIVERY__STORE_BACKEND: 'memory',
    }),
  ).rejects.toThrow(/exited with 2[\s\S]*admin\.auth/);
});

describe.each(['notification', 'monitor'] as const)('the %s process in production', (name) => {
  const prefix = `SVC_${name.toUpperCase()}__`;
  // Only the API token rule is under test: the notification admin endpoints get their key.
  const production: Record<string, string> =
    name === 'notification'
      ? {
          NODE_ENV: 'production',
          [`${prefix}INBOX__STORE_BACKEND`]: 'memory',
          [`${prefix}DELIVERY__STORE_BACKEND`]: 'memory',
          [`${prefix}ADMIN__AUTH__JWT_SECRET`]: 'x'.repeat(32),
        }
      : { NODE_ENV: 'production' };

  test('without server.api_tokens refuses to start: exit 2, naming server.api_tokens', async () => {
    await expect(startServiceProcess(name, production)).rejects.toThrow(
      new RegExp(`exited with 2[\\s\\S]*${name}\\.server\\.api_tokens: in production RPCs need auth`),
    );
  });

  test('with server.allow_unauthenticated: true it starts, open on purpose, with the warning', async () => {
    const proc = await startServiceProcess(name, {
      ...production,
      [`${prefix}SERVER__ALLOW_UNAUTHENTICATED`]: 'true',
    });
    try {
      expect(await checkAt(`127.0.0.1:${proc.grpcPort}`)).toBe('SERVING');
      expect(proc.logs.join('\n')).toMatch(/no API tokens configured/);
    } finally {
      expect(await proc.stop()).toBe(0);
    }
  });

  test('with server.api_tokens it starts and RPCs need the token', async () => {
    const proc = await startServiceProcess(name, {
      ...production,
      [`${prefix}SERVER__API_TOKENS`]: 'prod-token',
    });
    try {
      const res = await fetch(
        `http://127.0.0.1:${proc.httpPort}/${name === 'notification' ? 'svc.notification.v1.InboxService/CountUnread' : 'svc.monitor.v1.MonitorService/ListSlos'}`,
        { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"userId":"u"}' },
      );
      expect(res.status).toBe(401);
    } finally {
      expect(await proc.stop()).toBe(0);
    }
  });
});

test('a SIGTERM that arrives while the process starts stops it cleanly once started (exit 0)', async () => {
  const main = join(__dirname, '..', '..', 'dist', 'services', 'monitor', 'main.js');
  const child = spawn(process.execPath, [main], {
    env: {
      PATH: process.env.PATH ?? '',
      NODE_ENV: 'test',
      SVC_MONITOR__SERVER__HOST: '127.0.0.1',
      SVC_MONITOR__SERVER__GRPC_PORT: '0',
      SVC_MONITOR__SERVER__HTTP_PORT: '0',
      SVC_MONITOR__SERVER__SHUTDOWN_DRAIN_MS: '0',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  // 'close', not 'exit': 'exit' can come before the last lines of stdout have been read.
  const exited = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
  createInterface({ input: child.stdout! }).on('line', (line) => {
    lines.push(line);
    // The first line is written before the server is built: signal right then.
    if (lines.length === 1) child.kill('SIGTERM');
  });
  expect(await exited).toBe(0);
  const messages = lines.map((l) => (JSON.parse(l) as { msg: string }).msg);
  expect(messages).toContain('shutting down once started');
  // It stopped after it was ready (the array is printed whole if not).
  const ready = messages.findIndex((m) => m.startsWith('monitor ready'));
  expect(ready).toBeGreaterThan(-1);
  expect(messages.slice(ready + 1)).toContain('stopped');
});

test('one Ctrl-C under `npm start` (SIGINT from the terminal, then from concurrently) still shuts down gracefully (exit 0)', async () => {
  // The default drain (500 ms), so the second signal comes while the shutdown is under way.
  const proc = await startServiceProcess('monitor', { SVC_MONITOR__SERVER__SHUTDOWN_DRAIN_MS: '500' });
  // The terminal signals the whole process group and concurrently forwards the same signal: two in
  // a row. Only a repeat a second or more later means "exit now".
  // (The second goes once the first was handled: two signals sent at once are merged by the kernel.)
  proc.child.kill('SIGINT');
  await waitFor(() => proc.logs.some((l) => l.includes('"msg":"shutting down"')), 'the first signal handled');
  expect(await proc.stop('SIGINT')).toBe(0);
  const messages = proc.logs.map((l) => (JSON.parse(l) as { msg: string }).msg);
  expect(messages).toContain('stopped');
  expect(messages).not.toContain('second signal: exiting now');
});
