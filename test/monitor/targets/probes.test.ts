import { getEventListeners } from 'node:events';
import * as grpc from '@grpc/grpc-js';
import { service as healthServiceDefinition } from 'grpc-health-check';
import { GrpcHealthProbe, MAX_HTTP_BODY_BYTES, probeHttp } from '../../../services/monitor/targets/probes';
import { listen, type TestServer } from '../../shared/monitoring/helpers';
import { startHealthServer, type HealthServer } from './health-server';

const never = new AbortController().signal;
const closers: Array<() => unknown> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

async function health(status: 'SERVING' | 'NOT_SERVING' = 'SERVING'): Promise<HealthServer> {
  const s = await startHealthServer(status);
  closers.push(() => s.stop());
  return s;
}

function grpcProbe(address: string): GrpcHealthProbe {
  const p = new GrpcHealthProbe(address, 100);
  closers.push(() => p.close());
  return p;
}

async function http(handler: Parameters<typeof listen>[0]): Promise<TestServer> {
  const s = await listen(handler);
  closers.push(() => s.close());
  return s;
}

describe('the gRPC health probe', () => {
  it('is up when the target answers SERVING, over one reused channel', async () => {
    const server = await health();
    const probe = grpcProbe(server.address);
    expect(await probe.check(2000, never)).toEqual({ ok: true });
    expect(await probe.check(2000, never)).toEqual({ ok: true });
    expect(server.checks).toBe(2);
    // The long-lived stop signal keeps no listener per finished probe.
    expect(getEventListeners(never, 'abort')).toHaveLength(0);
  });

  it('fails with NOT_SERVING when the target says so', async () => {
    const server = await health('NOT_SERVING');
    expect(await grpcProbe(server.address).check(2000, never)).toEqual({ ok: false, reason: 'NOT_SERVING' });
  });

  it('fails with UNAVAILABLE when nothing listens, and is up again once the server is back on the port', async () => {
    const server = await health();
    const probe = grpcProbe(server.address);
    expect((await probe.check(2000, never)).ok).toBe(true);
    server.stop();
    expect(await probe.check(2000, never)).toEqual({ ok: false, reason: 'UNAVAILABLE' });
    await server.restart();
    // The channel reconnects within its capped backoff; poll, never a timing assertion.
    let outcome = await probe.check(2000, never);
    for (let i = 0; i < 50 && !outcome.ok; i++) {
      await new Promise((r) => setTimeout(r, 50));
      outcome = await probe.check(2000, never);
    }
    expect(outcome).toEqual({ ok: true });
  });

  it('fails with "timeout" when the target does not answer within the deadline', async () => {
    const server = new grpc.Server();
    server.addService(healthServiceDefinition as never, { check: () => undefined, watch: () => undefined });
    const port = await new Promise<number>((resolve, reject) =>
      server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (e, p) =>
        e ? reject(e) : resolve(p),
      ),
    );
    closers.push(() => server.forceShutdown());
    expect(await grpcProbe(`127.0.0.1:${port}`).check(100, never)).toEqual({ ok: false, reason: 'timeout' });
  });

  it('is cancelled by the stop signal', async () => {
    const server = new grpc.Server();
    server.addService(healthServiceDefinition as never, { check: () => undefined, watch: () => undefined });
    const port = await new Promise<number>((resolve, reject) =>
      server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (e, p) =>
        e ? reject(e) : resolve(p),
      ),
    );
    closers.push(() => server.forceShutdown());
    const stop = new AbortController();
    const pending = grpcProbe(`127.0.0.1:${port}`).check(60_000, stop.signal);
    await new Promise((r) => setTimeout(r, 50));
    stop.abort();
    expect(await pending).toEqual({ ok: false, reason: 'CANCELLED' });
  });
});

describe('the HTTP health probe', () => {
  it('is up on a 2xx answer and sends the health request as a GET', async () => {
    const seen: string[] = [];
    const server = await http((req, res) => {
      seen.push(`${req.method} ${req.url}`);
      res.writeHead(204).end();
    });
    expect(await probeHttp(`${server.url}/health`, 2000, never)).toEqual({ ok: true });
    expect(seen).toEqual(['GET /health']);
    expect(getEventListeners(never, 'abort')).toHaveLength(0);
  });

  it('fails with the status on a non-2xx answer', async () => {
    const server = await http((_req, res) => res.writeHead(503).end('{"status":"unhealthy"}'));
    expect(await probeHttp(`${server.url}/health`, 2000, never)).toEqual({ ok: false, reason: 'HTTP 503' });
  });

  it('reads at most the bounded body of an endless answer and closes the connection', async () => {
    let written = 0;
    let closed!: Promise<void>;
    const server = await http((req, res) => {
      closed = new Promise((resolve) => req.socket.once('close', () => resolve()));
      res.writeHead(200, { 'content-type': 'text/plain' });
      const chunk = Buffer.alloc(1024, 'x');
      const pump = (): void => {
        while (!res.destroyed && res.write(chunk)) written += chunk.length;
        if (!res.destroyed) res.once('drain', pump);
      };
      pump();
    });
    expect(await probeHttp(`${server.url}/health`, 5000, never)).toEqual({ ok: true });
    await closed;
    // Up (not "timeout") on a body that never ends: the probe read a bounded part and hung up.
    expect(written).toBeGreaterThanOrEqual(MAX_HTTP_BODY_BYTES);
  });

  it('fails with "timeout" when the answer does not come in time', async () => {
    const server = await http(() => undefined);
    expect(await probeHttp(`${server.url}/health`, 100, never)).toEqual({ ok: false, reason: 'timeout' });
  });

  it('fails with the error code when nothing listens', async () => {
    const server = await http((_req, res) => res.end());
    const url = `${server.url}/health`;
    await server.close();
    expect(await probeHttp(url, 2000, never)).toEqual({ ok: false, reason: 'ECONNREFUSED' });
  });

  it('fails (does not throw) on a URL node:http cannot use', async () => {
    expect(await probeHttp('http://[::1/health', 2000, never)).toEqual({
      ok: false,
      reason: 'ERR_INVALID_URL',
    });
  });

  it('does not start when the stop signal is already raised', async () => {
    const stop = new AbortController();
    stop.abort();
    expect(await probeHttp('http://127.0.0.1:1/health', 60_000, stop.signal)).toEqual({
      ok: false,
      reason: 'stopped',
    });
  });

  it('is cut short by the stop signal', async () => {
    const server = await http(() => undefined);
    const stop = new AbortController();
    const pending = probeHttp(`${server.url}/health`, 60_000, stop.signal);
    stop.abort();
    expect(await pending).toEqual({ ok: false, reason: 'stopped' });
  });
});
