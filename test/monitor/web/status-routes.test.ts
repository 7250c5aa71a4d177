import { connect, type Socket } from 'node:net';
import type { StatusSnapshotJson } from '../../../services/monitor/web/status-json';
import type { MonitorConfigInput } from '../../../services/monitor/config';
import { silentLogger } from '../../../shared/logging/logger';
import { startMonitorApp, type RunningMonitorApp } from '../../support/monitor-app';
import { openSse, type SseConnection } from '../../support/sse-client';
import { waitFor } from '../../support/wait';
import { StatusSourceDouble, alert, slo, target } from './status-source-double';

const running: RunningMonitorApp[] = [];
const streams: SseConnection[] = [];

async function start(
  source: StatusSourceDouble = new StatusSourceDouble(),
  overrides: MonitorConfigInput = {},
): Promise<RunningMonitorApp> {
  const svc = await startMonitorApp(overrides, silentLogger(), { statusSource: source });
  running.push(svc);
  return svc;
}

async function events(svc: RunningMonitorApp, headers: Record<string, string> = {}): Promise<SseConnection> {
  const sse = await openSse(`${svc.baseUrl}/status/events`, headers);
  streams.push(sse);
  return sse;
}

function eventsNamed(sse: SseConnection, name: string): Record<string, unknown>[] {
  return sse
    .events()
    .filter((e) => e.event === name)
    .map((e) => e.data);
}

afterEach(async () => {
  for (const s of streams.splice(0)) s.close();
  await Promise.all(running.splice(0).map((r) => r.close()));
});

function expectSecurityHeaders(res: Response): void {
  const csp = res.headers.get('content-security-policy') ?? '';
  expect(csp).toContain("default-src 'none'");
  expect(csp).toContain("script-src 'self'");
  expect(csp).toContain("frame-ancestors 'none'");
  expect(res.headers.get('x-content-type-options')).toBe('nosniff');
  expect(res.headers.get('x-frame-options')).toBe('DENY');
  expect(res.headers.get('referrer-policy')).toBe('no-referrer');
}

describe('the status page routes', () => {
  it('serves the page at / as HTML with the CSP and security headers, and its two assets', async () => {
    const svc = await start();
    const page = await fetch(`${svc.baseUrl}/`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expectSecurityHeaders(page);
    const html = await page.text();
    expect(html).toContain('<script src="/status/assets/app.js" defer></script>');
    expect(html.indexOf('/status/assets/kit.js')).toBeGreaterThan(0);
    expect(html.indexOf('/status/assets/kit.js')).toBeLessThan(html.indexOf('/status/assets/app.js'));
    // No inline script or style: the CSP would block them.
    expect(html).not.toMatch(/<script>|<style|style="/);

    const js = await fetch(`${svc.baseUrl}/status/assets/app.js`);
    expect(js.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expectSecurityHeaders(js);
    expect(await js.text()).toContain('/status/events');
    const css = await fetch(`${svc.baseUrl}/status/assets/app.css`);
    expect(css.headers.get('content-type')).toBe('text/css; charset=utf-8');
    // The kit is the same file the admin page serves (one home: shared/http/page).
    const kit = await fetch(`${svc.baseUrl}/status/assets/kit.js`);
    expect(kit.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(await kit.text()).toContain('window.PageKit');
  });

  it('answers 304 to a page request that carries the current ETag', async () => {
    const svc = await start();
    const first = await fetch(`${svc.baseUrl}/`);
    const etag = first.headers.get('etag')!;
    expect(etag).toMatch(/^"[A-Za-z0-9_-]+"$/);
    const again = await fetch(`${svc.baseUrl}/`, { headers: { 'If-None-Match': etag } });
    expect(again.status).toBe(304);
  });

  it('answers unknown paths under /status and wrong methods with the JSON error body and the security headers', async () => {
    const svc = await start();
    const missing = await fetch(`${svc.baseUrl}/status/nothing-here`);
    expect(missing.status).toBe(404);
    expectSecurityHeaders(missing);
    expect(await missing.json()).toEqual({ error: { code: 'not_found', message: 'no such path' } });
    const post = await fetch(`${svc.baseUrl}/status.json`, { method: 'POST', body: '{}' });
    expect(post.status).toBe(405);
    expect(post.headers.get('allow')).toBe('GET, HEAD');
    expectSecurityHeaders(post);
  });

  it('gives scripts the whole state as JSON at /status.json', async () => {
    const probeAt = new Date('2026-11-20T10:00:00Z');
    const firedAt = Date.parse('2026-11-20T10:01:00Z');
    const source = new StatusSourceDouble({
      targets: [
        target('billing', { up: true, lastProbeAt: probeAt, lastLatencyMs: 4.5 }),
        target('search', { up: false, consecutiveFailures: 3, lastError: 'HTTP 503' }),
        target('fresh'),
      ],
      slos: [
        slo('checkout-latency'),
        slo('idle', { samples: 0, measuredMs: null, burnRate: null, budgetRemaining: null }),
      ],
      alerts: [
        alert('Disk almost full', {
          id: '5b0e5a0a-7d54-4c8e-8b7c-3a2c1f0e9d11',
          firedAt,
          context: { host: 'db-1' },
        }),
      ],
    });
    const svc = await start(source);
    const res = await fetch(`${svc.baseUrl}/status.json`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(res.headers.get('cache-control')).toBe('no-store');
    expectSecurityHeaders(res);
    const body = (await res.json()) as StatusSnapshotJson;
    expect(body.alert_limit).toBe(50);
    expect(body.targets).toEqual([
      {
        name: 'billing',
        grpc_address: 'billing.internal:50051',
        http_url: null,
        state: 'up',
        last_probe_at: '2026-11-20T10:00:00.000Z',
        last_latency_ms: 4.5,
        consecutive_failures: 0,
        last_error: null,
        last_change_at: null,
        last_error_at: null,
        last_error_recovered: false,
      },
      expect.objectContaining({
        name: 'search',
        state: 'down',
        consecutive_failures: 3,
        last_error: 'HTTP 503',
      }),
      expect.objectContaining({ name: 'fresh', state: 'unknown', last_probe_at: null }),
    ]);
    expect(body.slos).toEqual([
      {
        name: 'checkout-latency',
        metric: 'http_request_duration',
        percentile: 0.99,
        threshold_ms: 250,
        window_seconds: 300,
        tier: 'P1_BUSINESS_HOURS',
        samples: 120,
        measured_ms: 200,
        burn_rate: 0.8,
        budget_remaining: 0.2,
        kind: 'latency',
      },
      expect.objectContaining({
        name: 'idle',
        samples: 0,
        measured_ms: null,
        burn_rate: null,
        budget_remaining: null,
      }),
    ]);
    expect(body.alerts).toEqual([
      {
        id: '5b0e5a0a-7d54-4c8e-8b7c-3a2c1f0e9d11',
        alert_name: 'Disk almost full',
        kind: 'generic',
        title: 'Disk almost full',
        message: 'Disk almost full: details',
        severity: 'high',
        context: { host: 'db-1' },
        source_service: 'checkout',
        fired_at: '2026-11-20T10:01:00.000Z',
        state: 'triggered',
      },
    ]);
  });

  it('shows empty lists on a bare monitor (no areas wired)', async () => {
    const svc = await startMonitorApp({}, silentLogger());
    running.push(svc);
    const body = (await (await fetch(`${svc.baseUrl}/status.json`)).json()) as StatusSnapshotJson;
    expect(body).toMatchObject({ targets: [], slos: [], alerts: [] });
  });

  it('holds at most web.recent_alerts alerts and cuts remote texts to their bounds', async () => {
    const source = new StatusSourceDouble();
    for (let i = 0; i < 5; i++) source.pushAlert(alert(`alert ${i}`));
    source.pushAlert(alert('x'.repeat(5000), { message: 'y'.repeat(50_000) }));
    const svc = await start(source, { web: { recent_alerts: 3 } });
    const body = (await (await fetch(`${svc.baseUrl}/status.json`)).json()) as StatusSnapshotJson;
    expect(body.alerts.map((a) => a.title.slice(0, 7))).toEqual(['xxxxxxx', 'alert 4', 'alert 3']);
    expect(body.alerts[0]!.title).toHaveLength(300);
    expect(body.alerts[0]!.title.endsWith('…')).toBe(true);
    expect(body.alerts[0]!.message).toHaveLength(2000);
  });
});

describe('who may read the status data', () => {
  const WEB_TOKEN = 'status-reader-token-0123456789';
  const RPC_TOKEN = 'rpc-caller-token-0123456789abcd';

  it('asks for a bearer token on the data routes when tokens are configured, but serves the page shell', async () => {
    const svc = await start(new StatusSourceDouble(), {
      web: { api_tokens: [WEB_TOKEN] },
      server: { api_tokens: [RPC_TOKEN] },
    });
    expect((await fetch(`${svc.baseUrl}/`)).status).toBe(200);

    const anonymous = await fetch(`${svc.baseUrl}/status.json`);
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get('www-authenticate')).toBe('Bearer realm="monitor"');
    expectSecurityHeaders(anonymous);
    expect(await anonymous.json()).toEqual({
      error: { code: 'unauthenticated', message: 'a valid bearer token is required' },
    });

    const wrong = await fetch(`${svc.baseUrl}/status.json`, { headers: { Authorization: 'Bearer nope' } });
    expect(wrong.status).toBe(401);
    expect(wrong.headers.get('www-authenticate')).toContain('error="invalid_token"');

    for (const token of [WEB_TOKEN, RPC_TOKEN]) {
      const ok = await fetch(`${svc.baseUrl}/status.json`, { headers: { Authorization: `Bearer ${token}` } });
      expect(ok.status).toBe(200);
    }

    const stream = await events(svc);
    expect(stream.status).toBe(401);
    expect(svc.app.statusPage.feed.connectionCount).toBe(0);
    const authorised = await events(svc, { Authorization: `Bearer ${WEB_TOKEN}` });
    expect(authorised.status).toBe(200);
  });
});

describe('the status event stream', () => {
  it('starts with a snapshot, then sends an event per alert and per target change', async () => {
    const source = new StatusSourceDouble({ targets: [target('billing', { up: true })] });
    const svc = await start(source);
    const sse = await events(svc);
    expect(sse.status).toBe(200);
    expect(sse.headers['content-type']).toBe('text/event-stream; charset=utf-8');
    expect(sse.headers['cache-control']).toBe('no-store');
    expect(sse.headers['content-security-policy']).toContain("default-src 'none'");
    await sse.waitFor((frames) => frames.some((f) => f.event === 'snapshot'));
    expect(eventsNamed(sse, 'snapshot')[0]).toMatchObject({ targets: [{ name: 'billing', state: 'up' }] });

    const raised = source.pushAlert(alert('<img src=x onerror=alert(1)>'));
    source.setTarget(target('billing', { up: false, consecutiveFailures: 2, lastError: 'timeout' }));
    await sse.waitFor((frames) => frames.some((f) => f.event === 'targets'));
    expect(eventsNamed(sse, 'alert')).toEqual([
      { alert: expect.objectContaining({ id: raised.id, title: '<img src=x onerror=alert(1)>' }) },
    ]);
    expect(eventsNamed(sse, 'targets')).toEqual([
      { targets: [expect.objectContaining({ name: 'billing', state: 'down', last_error: 'timeout' })] },
    ]);
  });

  it('sends SLO figures again on its period, only when they changed', async () => {
    const source = new StatusSourceDouble({ slos: [slo('latency', { burnRate: 0.5 })] });
    const svc = await start(source, { web: { slo_refresh_seconds: 0.02 } });
    const sse = await events(svc);
    await sse.waitFor((frames) => frames.some((f) => f.event === 'snapshot'));
    source.setSlos([slo('latency', { burnRate: 1.6, budgetRemaining: -0.6 })]);
    await sse.waitFor((frames) => frames.some((f) => f.event === 'slos'));
    // Several more periods with unchanged figures: still exactly one `slos` event.
    await new Promise((r) => setTimeout(r, 150));
    expect(eventsNamed(sse, 'slos')).toEqual([
      { slos: [expect.objectContaining({ name: 'latency', burn_rate: 1.6, budget_remaining: -0.6 })] },
    ]);
  });

  it('sends heartbeat comments on a quiet stream', async () => {
    const svc = await start(new StatusSourceDouble(), { web: { heartbeat_seconds: 0.02 } });
    const sse = await events(svc);
    await sse.waitFor((frames) => frames.filter((f) => f.comments.includes('heartbeat')).length >= 2);
  });

  it('refuses a stream beyond web.max_sse_connections with 429 and Retry-After, and accepts again once one closes', async () => {
    const svc = await start(new StatusSourceDouble(), { web: { max_sse_connections: 2 } });
    const first = await events(svc);
    await events(svc);
    const refused = await events(svc);
    expect(refused.status).toBe(429);
    expect(refused.headers['retry-after']).toBe('5');
    expect(refused.headers['content-type']).toBe('application/json; charset=utf-8');
    await refused.ended;
    expect(svc.app.statusPage.feed.connectionCount).toBe(2);

    first.close();
    await waitFor(() => svc.app.statusPage.feed.connectionCount === 1, 'the closed stream to be forgotten');
    const again = await events(svc);
    expect(again.status).toBe(200);
  });

  it('holds one listener per source channel for all its streams, and none once they close', async () => {
    const source = new StatusSourceDouble();
    const svc = await start(source);
    expect(source.listenerCount).toBe(0);
    const a = await events(svc);
    const b = await events(svc);
    await a.waitFor((f) => f.length > 1);
    await b.waitFor((f) => f.length > 1);
    expect(source.listenerCount).toBe(2);
    a.close();
    b.close();
    await waitFor(() => source.listenerCount === 0, 'the listeners to be removed');
    expect(svc.app.statusPage.feed.connectionCount).toBe(0);
  });

  it('ends open streams when the monitor stops, and the stop completes', async () => {
    const source = new StatusSourceDouble();
    const svc = await start(source);
    const sse = await events(svc);
    await sse.waitFor((frames) => frames.some((f) => f.event === 'snapshot'));
    await svc.close();
    running.splice(running.indexOf(svc), 1);
    await sse.ended;
    expect(svc.app.statusPage.feed.connectionCount).toBe(0);
    expect(source.listenerCount).toBe(0);
  });

  it('closes a stream whose browser stopped reading once web.sse_max_buffered_bytes is waiting', async () => {
    const source = new StatusSourceDouble();
    const svc = await start(source, { web: { sse_max_buffered_bytes: 64 * 1024 } });
    const { port } = new URL(svc.baseUrl);
    // A raw client that sends its request and never reads: the kernel buffers fill, then ours.
    const socket: Socket = connect(Number(port), '127.0.0.1');
    socket.pause();
    await new Promise<void>((resolve) => socket.once('connect', resolve));
    socket.write('GET /status/events HTTP/1.1\r\nHost: localhost\r\nAccept: text/event-stream\r\n\r\n');
    await waitFor(() => svc.app.statusPage.feed.connectionCount === 1, 'the stream to open');
    const healthy = await events(svc);

    const big = 'z'.repeat(1900);
    let pushed = 0;
    while (svc.app.statusPage.feed.connectionCount === 2) {
      // Each alert is about 2 KB on the wire; loopback buffers take a few MB before ours fill.
      for (let i = 0; i < 10; i++) source.pushAlert(alert(`flood ${pushed++}`, { message: big }));
      await new Promise((r) => setImmediate(r));
      if (pushed > 20_000) throw new Error('the slow stream was never closed');
    }
    // The slow one went; the one that reads is still open and got every alert.
    expect(svc.app.statusPage.feed.connectionCount).toBe(1);
    await healthy.waitFor((frames) => frames.filter((f) => f.event === 'alert').length === pushed);
    socket.destroy();
  });
});
