/**
 * One HTTP surface per service: the route table and its path parser, one JSON error body on every
 * gateway route of both services, the connection cap answered 429, and bounded time to send a request.
 */
import { createServer, type Server } from 'node:http';
import { connect, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { HttpRouteTable } from '../../../shared/http/routes';
import { silentLogger } from '../../../shared/logging/logger';
import { createMonitorApp, type MonitorApp } from '../../../services/monitor/app';
import { loadMonitorConfig } from '../../../services/monitor/config';
import { startEchoServer, type EchoHarness } from './harness';
import { startNotificationApp, type RunningNotificationApp } from '../../support/notification-app';
import { healthCheck, healthClient } from '../../support/grpc-clients';
import { waitFor } from '../../support/wait';

const ERROR_BODY = {
  error: { code: expect.stringMatching(/^[a-z_]+$/) as unknown, message: expect.any(String) as unknown },
};

async function errorOf(res: Response): Promise<{ error: { code: string; message: string } }> {
  expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  const body = (await res.json()) as { error: { code: string; message: string } };
  expect(body).toEqual(ERROR_BODY);
  return body;
}

describe('the route table', () => {
  let server: Server;
  let base: string;
  const seen: Array<Record<string, string>> = [];
  beforeAll(async () => {
    const table = new HttpRouteTable()
      .add(
        {
          methods: ['GET'],
          path: '/things/:id',
          handler: (_req, res, { params }) => {
            seen.push({ ...params });
            res.end('thing');
          },
        },
        { methods: ['DELETE'], path: '/things/:id', handler: (_req, res) => res.end('gone') },
        {
          methods: ['GET'],
          path: '/boom',
          handler: () => {
            throw new Error('secret detail: password=hunter2');
          },
        },
      )
      .setHeaders('/things/', { 'X-Policy': 'things' });
    server = createServer((req, res) => void table.dispatch(req, res, silentLogger()));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  test('a path parameter reaches the handler decoded', async () => {
    const res = await fetch(`${base}/things/a%20b?x=1`);
    expect(await res.text()).toBe('thing');
    expect(seen.at(-1)).toEqual({ id: 'a b' });
  });

  test('a known path with another method is 405 unimplemented with Allow listing every method of the path', async () => {
    const res = await fetch(`${base}/things/1`, { method: 'POST' });
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('GET, DELETE');
    expect(res.headers.get('x-policy')).toBe('things');
    expect((await errorOf(res)).error.code).toBe('unimplemented');
  });

  test('an unknown path is 404 not_found, and so is an empty parameter', async () => {
    for (const path of ['/nothing', '/things/', '/things/1/more']) {
      const res = await fetch(base + path);
      expect(res.status).toBe(404);
      expect((await errorOf(res)).error.code).toBe('not_found');
    }
  });

  test('a parameter that is not valid percent-encoding is 400 invalid_argument', async () => {
    const res = await fetch(`${base}/things/%E0%A4%A`);
    expect(res.status).toBe(400);
    expect((await errorOf(res)).error.code).toBe('invalid_argument');
  });

  test('a route that throws answers a generic 500 without the cause', async () => {
    const res = await fetch(`${base}/boom`);
    expect(res.status).toBe(500);
    const body = await errorOf(res);
    expect(body.error).toEqual({ code: 'internal', message: 'internal error' });
  });

  test('registering the same method and path twice is refused', () => {
    const table = new HttpRouteTable().add({ methods: ['GET'], path: '/a/:x', handler: () => undefined });
    expect(() => table.add({ methods: ['GET', 'POST'], path: '/a/:x', handler: () => undefined })).toThrow(
      /registered twice/,
    );
  });
});

describe('one JSON error body on every gateway route of both services', () => {
  let notification: RunningNotificationApp;
  let monitor: MonitorApp;
  let monitorBase: string;
  beforeAll(async () => {
    notification = await startNotificationApp();
    monitor = await createMonitorApp(
      loadMonitorConfig(
        {
          server: { host: '127.0.0.1', grpc_port: 0, http_port: 0, shutdown_drain_ms: 0 },
          health: { auth_token: 'health-secret' },
          database: { store_backend: 'memory' },
        },
        { env: {}, file: null },
      ),
      silentLogger(),
    );
    monitorBase = `http://127.0.0.1:${(await monitor.start()).http}`;
  });
  afterAll(async () => {
    await notification.close();
    await monitor.stop();
  });

  test.each([
    ['notification', 'GET', '/nothing/here', 404, 'not_found', null],
    ['notification', 'POST', '/health', 405, 'unimplemented', 'GET, HEAD'],
    ['notification', 'DELETE', '/metrics', 405, 'unimplemented', 'GET, HEAD'],
    ['notification', 'GET', '/admin/notifications/read/1', 405, 'unimplemented', 'POST'],
    ['notification', 'GET', '/admin/notifications/nothing', 404, 'not_found', null],
    ['notification', 'GET', '/admin/notifications/inbox', 401, 'unauthenticated', null],
    ['monitor', 'GET', '/nothing/here', 404, 'not_found', null],
    ['monitor', 'PUT', '/health/ready', 405, 'unimplemented', 'GET, HEAD'],
    ['monitor', 'GET', '/health', 401, 'unauthenticated', null],
  ])('%s %s %s answers %i %s', async (service, method, path, status, code, allow) => {
    const base = service === 'notification' ? notification.baseUrl : monitorBase;
    const res = await fetch(base + path, { method });
    expect(res.status).toBe(status);
    expect(res.headers.get('allow')).toBe(allow);
    expect((await errorOf(res)).error.code).toBe(code);
  });

  test('admin errors answered by the table carry the admin security headers too', async () => {
    const res = await fetch(`${notification.baseUrl}/admin/notifications/nothing`);
    expect(res.headers.get('content-security-policy')).toContain("default-src 'none'");
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
  });

  test('an unknown RPC on the HTTP port is 404, which a Connect client reads as unimplemented', async () => {
    const res = await fetch(`${notification.baseUrl}/svc.notification.v1.InboxService/NoSuchMethod`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: '{}',
    });
    expect(res.status).toBe(404);
    await errorOf(res);
  });
});

/** Sends raw bytes on a fresh connection; resolves with everything the server sent until it closed. */
function rawConnection(port: number): { socket: Socket; received: Promise<string> } {
  const socket = connect(port, '127.0.0.1');
  const chunks: Buffer[] = [];
  const received = new Promise<string>((resolve) => {
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('error', () => undefined);
    socket.on('close', () => resolve(Buffer.concat(chunks).toString('latin1')));
  });
  return { socket, received };
}

describe('the HTTP connection cap (server.http_max_connections)', () => {
  let h: EchoHarness;
  let port: number;
  beforeAll(async () => {
    h = await startEchoServer({ httpMaxConnections: 2 });
    port = h.server.boundPorts.http;
  });
  afterAll(async () => {
    await h.close();
  });

  test('an extra connection is answered 429 with Retry-After and closed; the service stays healthy', async () => {
    const held = [rawConnection(port), rawConnection(port)];
    await waitFor(() => h.server.httpConnections === 2, 'two open connections');

    const extra = rawConnection(port);
    extra.socket.write('GET /nothing HTTP/1.1\r\nHost: x\r\n\r\n');
    const answer = await extra.received;
    expect(answer).toMatch(/^HTTP\/1\.1 429 /);
    expect(answer).toMatch(/\r\nRetry-After: 1\r\n/i);
    expect(answer).toMatch(/\r\nConnection: close\r\n/i);
    expect(answer).toContain('"code":"resource_exhausted"');

    // gRPC is another port: still serving; and once a held connection closes, HTTP answers again.
    const health = healthClient(h.grpcAddress);
    try {
      expect(await healthCheck(health)).toBe('SERVING');
    } finally {
      health.close();
    }
    held[0]!.socket.destroy();
    await waitFor(() => h.server.httpConnections === 1, 'the held connection to close');
    const res = await fetch(`${h.baseUrl}/nothing`, { headers: { Connection: 'close' } });
    expect(res.status).toBe(404);
    held[1]!.socket.destroy();
  });
});

describe('an RPC request without a Host header', () => {
  let h: EchoHarness;
  beforeAll(async () => {
    h = await startEchoServer();
  });
  afterAll(async () => {
    await h.close();
  });

  test('is answered 400 invalid_argument and the server keeps serving', async () => {
    const { socket, received } = rawConnection(h.server.boundPorts.http);
    socket.write(
      'POST /svc.testing.v1.EchoService/Echo HTTP/1.0\r\nContent-Type: application/json\r\n' +
        'Content-Length: 2\r\n\r\n{}',
    );
    const answer = await received;
    expect(answer).toMatch(/^HTTP\/1\.[01] 400 /);
    expect(answer).toContain('"code":"invalid_argument"');
    expect((await h.connect().echo({ message: 'alive' })).message).toBe('alive');
  });
});

describe('slow clients (slowloris)', () => {
  let h: EchoHarness;
  let port: number;
  beforeAll(async () => {
    h = await startEchoServer({ httpHeadersTimeoutMs: 1000, httpRequestTimeoutMs: 2000 });
    port = h.server.boundPorts.http;
  });
  afterAll(async () => {
    await h.close();
  });

  /** Trickles `bytes` one per 100 ms until the server closes; resolves with how many were sent. */
  async function trickle(socket: Socket, bytes: Buffer, closed: Promise<unknown>): Promise<number> {
    let open = true;
    void closed.then(() => (open = false));
    let sent = 0;
    while (open && sent < bytes.length) {
      socket.write(bytes.subarray(sent, sent + 1));
      sent++;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    return sent;
  }

  test('a body trickled byte by byte is cut off with 408 long before it is complete', async () => {
    const { socket, received } = rawConnection(port);
    socket.write(
      'POST /svc.testing.v1.EchoService/Echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n' +
        'Content-Length: 1000\r\n\r\n',
    );
    const sent = await trickle(socket, Buffer.alloc(1000, 0x20), received);
    expect(sent).toBeLessThan(1000);
    expect(await received).toMatch(/^HTTP\/1\.1 408 /);
  });

  test('headers trickled byte by byte are cut off before they are complete', async () => {
    const { socket, received } = rawConnection(port);
    const headers = Buffer.from(`GET /nothing HTTP/1.1\r\nHost: x\r\n${'X-Slow: y\r\n'.repeat(100)}\r\n`);
    const sent = await trickle(socket, headers, received);
    expect(sent).toBeLessThan(headers.length);
    expect(await received).toMatch(/^HTTP\/1\.1 408 /);
  });
});
