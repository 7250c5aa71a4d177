/**
 * The real status page of a started monitor (its own areas, the real AlertHub, no test double) in
 * headless Chromium, driven only from outside: alerts, SLOs and samples arrive over gRPC (grpc-js),
 * and a watched grpc-health-check server goes down and comes back. The page shows each change live,
 * without a reload, behind a read-only token.
 */
import type { Browser } from 'playwright-core';
import { MonitorService } from '../../../shared/gen/svc/monitor/v1/monitor_pb';
import { silentLogger } from '../../../shared/logging/logger';
import { grpcClient, unary, type GenericClient } from '../../support/grpc-clients';
import { startMonitorApp, type RunningMonitorApp } from '../../support/monitor-app';
import { startHealthServer, type HealthServer } from '../targets/health-server';
import {
  launchChromium,
  openStatusPage,
  waitForAlertTitle,
  waitForTargetState,
  type OpenStatusPage,
} from './status-page-driver';

const TOKEN = 'status-e2e-reader-token-42';

describe('the status page of a started monitor, fed over gRPC', () => {
  let target: HealthServer;
  let svc: RunningMonitorApp;
  let client: GenericClient;
  let browser: Browser;
  let opened: OpenStatusPage;
  const navigations: string[] = [];

  beforeAll(async () => {
    target = await startHealthServer('SERVING');
    svc = await startMonitorApp(
      {
        targets: [{ name: 'orders', grpc_address: target.address, interval_seconds: 0.2, timeout_ms: 2000 }],
        web: { slo_refresh_seconds: 0.1, api_tokens: [TOKEN] },
      },
      silentLogger(),
    );
    // A client of its own, as another service would be (not the in-process helper's).
    client = grpcClient(MonitorService, svc.grpcAddress);
    browser = await launchChromium();
    opened = await openStatusPage(browser, svc.baseUrl, { token: TOKEN });
    opened.page.on('framenavigated', (frame) => navigations.push(frame.url()));
  });

  afterAll(async () => {
    await browser?.close();
    client?.close();
    await svc?.close();
    target?.stop();
  });

  it('an alert raised with SendAlert appears without a reload', async () => {
    const { response } = await unary<{ alertId: string }>(client, 'sendAlert', {
      title: 'payment queue backing up',
      message: '1,204 jobs waiting',
      severity: 'critical',
      sourceService: 'payments',
      context: { tier: 'P0_PAGE' },
    });
    const item = await waitForAlertTitle(opened.page, 'payment queue backing up');
    expect(await item.locator('.message').textContent()).toBe('1,204 jobs waiting');
    expect(await item.locator('.severity').getAttribute('data-level')).toBe('critical');
    // The page lists the hub's alert, not a copy: same id in /status.json.
    const status = (await (
      await fetch(`${svc.baseUrl}/status.json`, { headers: { authorization: `Bearer ${TOKEN}` } })
    ).json()) as { alerts: Array<{ id: string; title: string }> };
    expect(status.alerts.find((a) => a.title === 'payment queue backing up')?.id).toBe(response.alertId);
    expect(navigations).toEqual([]);
  });

  it('an SLO registered and fed over gRPC shows its burn rate', async () => {
    await unary(client, 'registerSlo', {
      slo: { name: 'checkout-p99', metric: 'checkout.latency', percentile: 0.99, thresholdMs: 200 },
    });
    const row = opened.page.locator('#slos-body tr[data-slo="checkout-p99"]');
    await row.waitFor();
    // p99 of [100, 500] is 500 ms (nearest rank): burn rate 500 / 200.
    await unary(client, 'recordSloSamples', { metric: 'checkout.latency', valuesMs: [100, 500] });
    await row.locator('.burn-rate', { hasText: '2.50' }).waitFor();
    expect(await opened.page.locator('#slos-summary').textContent()).toBe('1 burning');
    expect(navigations).toEqual([]);
  });

  it('a ratio SLO shows its period budget and which burn-rate rule fires, its name in any script intact', async () => {
    const name = '결제-✅-دفع';
    await unary(client, 'registerRatioSlo', { slo: { name, target: 0.999 } });
    const row = opened.page.locator(`#slos-body tr[data-slo="${name}"]`);
    await row.waitFor();
    expect(await row.locator('.name').textContent()).toBe(name);
    expect(await row.locator('.rule[data-rule="page-1h-5m"]').getAttribute('data-firing')).toBe('false');
    // 200 bad events: every rule burns at 1000x with more than the 100 events the guard asks.
    await unary(client, 'recordSloSamples', { slo: name, events: [{ good: 0, bad: 200 }] });
    await row.locator('.rule[data-rule="page-1h-5m"][data-firing="true"]').waitFor();
    expect(await row.locator('.measured').textContent()).toBe('200 bad of 200');
    expect(await row.locator('.budget').textContent()).toMatch(/^-99[0-9,.]*\s?%$/);
    expect(await row.locator('.burn-rate').textContent()).toBe('page-1h-5m, page-6h-30m, ticket-3d-6h');
    expect(await opened.page.locator('#slos-summary').textContent()).toBe('2 burning');
    expect(navigations).toEqual([]);
  });

  it("a watched target's state shows, goes down with its alert, and comes back", async () => {
    await waitForTargetState(opened.page, 'orders', 'up');
    target.stop();
    await waitForTargetState(opened.page, 'orders', 'down');
    await waitForAlertTitle(opened.page, 'target orders is down');
    expect(await opened.page.locator('#targets-summary').textContent()).toBe('1 of 1 down');
    await target.restart();
    await waitForTargetState(opened.page, 'orders', 'up');
    await waitForAlertTitle(opened.page, 'target orders recovered');
    expect(navigations).toEqual([]);
  });

  it('the page stayed clean: no CSP violation, no console error', async () => {
    expect(await opened.cspViolations()).toEqual([]);
    expect(opened.problems).toEqual([]);
  });
});
