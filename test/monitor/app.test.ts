import { execFileSync } from 'node:child_process';
import * as grpc from '@grpc/grpc-js';
import { MonitorService } from '../../shared/gen/svc/monitor/v1/monitor_pb';
import { silentLogger } from '../../shared/logging/logger';
import { metered } from '../../shared/monitoring/instrumentation/metered';
import { createMonitorApp, type MonitorApp } from '../../services/monitor/app';
import { loadMonitorConfig, type MonitorConfigInput } from '../../services/monitor/config';
import { grpcClient, healthCheck, healthClient, unary } from '../support/grpc-clients';

interface Running {
  app: MonitorApp;
  base: string;
  grpcAddress: string;
}

const running: Running[] = [];

async function start(overrides: Partial<MonitorConfigInput> = {}): Promise<Running> {
  const config = loadMonitorConfig(
    {
      ...overrides,
      database: { store_backend: 'memory', ...overrides.database },
      server: { host: '127.0.0.1', grpc_port: 0, http_port: 0, shutdown_drain_ms: 0, ...overrides.server },
    },
    { env: {}, file: null },
  );
  const app = await createMonitorApp(config, silentLogger());
  const ports = await app.start();
  const r = { app, base: `http://127.0.0.1:${ports.http}`, grpcAddress: `127.0.0.1:${ports.grpc}` };
  running.push(r);
  return r;
}

afterEach(async () => {
  await Promise.all(running.splice(0).map((r) => r.app.stop()));
});

async function scrape(base: string, headers: Record<string, string> = {}): Promise<string> {
  const res = await fetch(`${base}/metrics`, { headers });
  expect(res.status).toBe(200);
  return res.text();
}

describe('the monitor app', () => {
  it('makes its collector the default of the metered helper: a metered call shows on its /metrics', async () => {
    const { base } = await start({ metrics: { prefix: 'mon' } });
    metered('wiring.check')((n: number) => n * 2)(21);
    expect(await scrape(base)).toMatch(/^mon_wiring_check_count(\{[^}]*\})? 1$/m);
  });

  it('implements every MonitorService method: none answers UNIMPLEMENTED', async () => {
    const { grpcAddress } = await start();
    const client = grpcClient(MonitorService, grpcAddress);
    try {
      for (const method of MonitorService.methods) {
        if (method.methodKind === 'server_streaming') {
          // A stream that opens is implemented; cancel it once its headers arrived.
          const call = (client[method.localName] as (req: unknown) => grpc.ClientReadableStream<unknown>)({});
          const outcome = await new Promise<string>((resolve) => {
            call.on('metadata', () => resolve('open'));
            call.on('error', (err: grpc.ServiceError) => resolve(grpc.status[err.code]));
          });
          call.cancel();
          expect([method.name, outcome]).toEqual([method.name, 'open']);
          continue;
        }
        const code = await unary(client, method.localName, {}).then(
          () => grpc.status.OK,
          (err: grpc.ServiceError) => err.code,
        );
        // An empty request is either answered or refused as bad input, never unimplemented.
        expect([method.name, grpc.status[code]]).toEqual([
          method.name,
          expect.stringMatching(/^(OK|INVALID_ARGUMENT|NOT_FOUND)$/),
        ]);
      }
    } finally {
      client.close();
    }
  });

  it('records http_requests_* for every answer of the HTTP port: Connect RPCs, /health and 404s', async () => {
    const { base } = await start();
    const rpc = await fetch(`${base}/svc.monitor.v1.MonitorService/ListSlos`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    expect(rpc.status).toBe(200);
    expect((await fetch(`${base}/health`)).status).toBe(200);
    expect((await fetch(`${base}/no/such/path`)).status).toBe(404);
    const body = await scrape(base);
    expect(body).toMatch(
      /http_requests_total\{method="POST",route="\/svc\.monitor\.v1\.MonitorService\/ListSlos",status="200"\} 1/,
    );
    expect(body).toMatch(/http_requests_total\{method="GET",route="\/health",status="200"\} 1/);
    expect(body).toMatch(/http_requests_total\{method="GET",route="\/no\/such\/path",status="404"\} 1/);
    expect(body).toMatch(
      /http_request_duration_seconds_count\{method="GET",route="\/health",status="200"\} 1/,
    );
    expect(body).toMatch(/http_requests_active\{method="GET"\} 1/); // the scrape itself
  });

  it('keeps at most 200 route labels however many distinct paths are requested', async () => {
    const { base } = await start();
    for (let i = 0; i < 210; i++) await (await fetch(`${base}/probe-${i}`)).arrayBuffer();
    const body = await scrape(base);
    const routes = new Set([...body.matchAll(/http_requests_total\{[^}]*route="([^"]*)"/g)].map((m) => m[1]));
    expect(routes.size).toBe(201); // 200 kept, the rest as "other"
    expect(body).toMatch(/http_requests_total\{method="GET",route="other",status="404"\} 10/);
  });

  it('applies metrics.prefix and metrics.default_labels to the metrics it exports, promtool-clean', async () => {
    const { base } = await start({ metrics: { prefix: 'mon', default_labels: { region: 'eu_west' } } });
    await fetch(`${base}/health`);
    const body = await scrape(base);
    expect(body).toMatch(/^mon_http_requests_total\{[^}]*region="eu_west"[^}]*route="\/health"/m);
    expect(body).toMatch(/^mon_process_cpu_user_seconds_total\{region="eu_west"\}/m);
    expect(body).not.toMatch(/^http_requests_total/m);
    expect(body).not.toMatch(/^process_cpu_user_seconds_total/m);
    expect(() =>
      execFileSync('promtool', ['check', 'metrics'], { input: body, stdio: 'pipe' }),
    ).not.toThrow();
  });

  it('with health.enabled false, serves no /health (404) while gRPC health still answers', async () => {
    const { base, grpcAddress } = await start({ health: { enabled: false } });
    expect((await fetch(`${base}/health`)).status).toBe(404);
    expect((await fetch(`${base}/health/ready`)).status).toBe(404);
    const client = healthClient(grpcAddress);
    try {
      expect(await healthCheck(client, '')).toBe('SERVING');
    } finally {
      client.close();
    }
  });

  it('with metrics.enabled false, serves no /metrics (404)', async () => {
    const { base } = await start({ metrics: { enabled: false } });
    expect((await fetch(`${base}/metrics`)).status).toBe(404);
  });

  it('with metrics.auth_token, /metrics needs the bearer token', async () => {
    const { base } = await start({ metrics: { auth_token: 'scrape-token' } });
    expect((await fetch(`${base}/metrics`)).status).toBe(401);
    expect((await fetch(`${base}/metrics`, { headers: { authorization: 'Bearer wrong' } })).status).toBe(401);
    expect(await scrape(base, { authorization: 'Bearer scrape-token' })).toContain('http_requests_total');
  });
});
