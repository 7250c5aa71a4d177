import type { IncomingMessage, ServerResponse } from 'node:http';
import { Registry } from 'prom-client';
import { MetricsCollector } from '../../../shared/monitoring/collector';
import {
  OPENMETRICS_CONTENT_TYPE,
  PROMETHEUS_CONTENT_TYPE,
  toOpenMetrics,
} from '../../../shared/monitoring/exposition';
import { MetricsMiddleware } from '../../../shared/monitoring/http/metrics-middleware';
import { absentPromClient } from '../../../shared/monitoring/prom-loader';
import { FakeClock, listen, promtool, type TestServer } from './helpers';

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

function appHandler(_req: IncomingMessage, res: ServerResponse): void {
  res.writeHead(201, { 'Content-Type': 'text/plain' });
  res.end('created');
}

describe('MetricsMiddleware /metrics', () => {
  it('answers the text format 0.0.4 by default and the output passes promtool', async () => {
    const registry = new Registry();
    const collector = new MetricsCollector({ registry, config: { prefix: 'svc' } });
    collector.createCounter('jobs', 'Jobs run').increment(2, { kind: 'a "quoted"\\ one' });
    const mw = new MetricsMiddleware({ registry });
    server = await listen(mw.middleware(appHandler));
    await fetch(`${server.url}/inbox`);
    const res = await fetch(`${server.url}/metrics`);
    const body = await res.text();
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe(PROMETHEUS_CONTENT_TYPE);
    expect(body).toContain('svc_jobs_total{kind="a \\"quoted\\"\\\\ one"} 2');
    expect(promtool(body)).toEqual({ status: 0, output: '' });
  });

  it('answers OpenMetrics when the Accept header asks for it', async () => {
    const registry = new Registry();
    new MetricsCollector({ registry }).createCounter('jobs', 'Jobs run').increment(3);
    server = await listen(new MetricsMiddleware({ registry }).middleware());
    const res = await fetch(`${server.url}/metrics`, {
      headers: { Accept: 'application/openmetrics-text;version=1.0.0;q=0.5,text/plain;version=0.0.4;q=0.3' },
    });
    const body = await res.text();
    expect(res.headers.get('content-type')).toBe(OPENMETRICS_CONTENT_TYPE);
    expect(body).toContain('# TYPE jobs counter\njobs_total 3');
    expect(body.endsWith('# EOF\n')).toBe(true);
  });

  it('keeps answering the text format with _total names after an OpenMetrics scrape', async () => {
    const registry = new Registry();
    new MetricsCollector({ registry }).createCounter('jobs', 'Jobs run').increment();
    server = await listen(new MetricsMiddleware({ registry }).middleware());
    await fetch(`${server.url}/metrics`, { headers: { Accept: 'application/openmetrics-text' } });
    const body = await (await fetch(`${server.url}/metrics`)).text();
    expect(body).toContain('# TYPE jobs_total counter');
  });

  it('with auth_token set, a request without the bearer header gets 401 and WWW-Authenticate: Bearer', async () => {
    server = await listen(new MetricsMiddleware({ auth_token: 's3cret' }).middleware());
    const res = await fetch(`${server.url}/metrics`);
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toBe('Bearer');
  });

  it('with auth_token set, a wrong token gets 401', async () => {
    server = await listen(new MetricsMiddleware({ auth_token: 's3cret' }).middleware());
    const res = await fetch(`${server.url}/metrics`, { headers: { Authorization: 'Bearer nope' } });
    expect(res.status).toBe(401);
  });

  it('with auth_token set, the right bearer token gets the metrics', async () => {
    server = await listen(new MetricsMiddleware({ auth_token: 's3cret' }).middleware());
    const res = await fetch(`${server.url}/metrics`, { headers: { Authorization: 'Bearer s3cret' } });
    expect(res.status).toBe(200);
    expect(await res.text()).toContain('http_requests_total');
  });

  it('answers 404 JSON for another path when there is no next handler', async () => {
    server = await listen(new MetricsMiddleware().middleware());
    const res = await fetch(`${server.url}/elsewhere`);
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({ error: { code: 'not_found', message: 'no such path' } });
  });

  it('serves a custom path', async () => {
    server = await listen(new MetricsMiddleware({ path: '/internal/metrics' }).middleware());
    expect((await fetch(`${server.url}/internal/metrics`)).status).toBe(200);
    expect((await fetch(`${server.url}/metrics`)).status).toBe(404);
  });
});

describe('MetricsMiddleware request metrics', () => {
  it('counts wrapped requests by method, route and status', async () => {
    const mw = new MetricsMiddleware();
    server = await listen(mw.middleware(appHandler));
    await fetch(`${server.url}/inbox?x=1`);
    await fetch(`${server.url}/inbox`);
    const body = await (await fetch(`${server.url}/metrics`)).text();
    expect(body).toContain('http_requests_total{method="GET",route="/inbox",status="201"} 2');
  });

  it('observes request durations from the injected clock', async () => {
    const clock = new FakeClock();
    const mw = new MetricsMiddleware({ clock, buckets: [0.1, 1] });
    server = await listen(
      mw.middleware((_req, res) => {
        clock.advance(250);
        appHandler(_req, res);
      }),
    );
    await fetch(`${server.url}/slow`);
    const body = await (await fetch(`${server.url}/metrics`)).text();
    expect(body).toContain(
      'http_request_duration_seconds_bucket{le="0.1",method="GET",route="/slow",status="201"} 0',
    );
    expect(body).toContain(
      'http_request_duration_seconds_bucket{le="1",method="GET",route="/slow",status="201"} 1',
    );
    expect(body).toContain('http_request_duration_seconds_sum{method="GET",route="/slow",status="201"} 0.25');
  });

  it('tracks active requests while a wrapped handler is running', async () => {
    const mw = new MetricsMiddleware();
    let release: () => void = () => undefined;
    let arrived: () => void = () => undefined;
    const arrival = new Promise<void>((r) => (arrived = r));
    server = await listen(
      mw.wrap((_req, res) => {
        release = () => appHandler(_req, res);
        arrived();
      }),
    );
    const pending = fetch(`${server.url}/hold`);
    await arrival;
    const during = (await mw.render(undefined)).body;
    release();
    await pending;
    const after = (await mw.render(undefined)).body;
    expect(during).toContain('http_requests_active{method="GET"} 1');
    expect(after).toContain('http_requests_active{method="GET"} 0');
  });

  it('reports routes beyond maxRoutes as other', async () => {
    const mw = new MetricsMiddleware({ maxRoutes: 1 });
    server = await listen(mw.middleware(appHandler));
    await fetch(`${server.url}/a`);
    await fetch(`${server.url}/b`);
    const body = (await mw.render(undefined)).body;
    expect(body).toContain('route="other"');
    expect(body).not.toContain('route="/b"');
  });

  it('without the client library, records through the given collector and /metrics answers 503', async () => {
    const calls: string[] = [];
    const collector = {
      increment: (name: string) => void calls.push(`increment:${name}`),
      gauge: (name: string) => void calls.push(`gauge:${name}`),
      histogram: (name: string) => void calls.push(`histogram:${name}`),
    };
    const mw = new MetricsMiddleware({ loader: absentPromClient, collector });
    server = await listen(mw.middleware(appHandler));
    await fetch(`${server.url}/inbox`);
    const res = await fetch(`${server.url}/metrics`);
    expect(res.status).toBe(503);
    expect(calls).toEqual(
      expect.arrayContaining(['increment:http_requests', 'histogram:http_request_duration_seconds']),
    );
  });
});

describe('toOpenMetrics', () => {
  it('names a counter family without _total and appends it to samples that lack it', () => {
    const om = toOpenMetrics('# HELP hits Hits\n# TYPE hits counter\nhits{a="b"} 1\n');
    expect(om).toBe('# HELP hits Hits\n# TYPE hits counter\nhits_total{a="b"} 1\n# EOF\n');
  });
});
