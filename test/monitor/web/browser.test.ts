import type { Browser } from 'playwright-core';
import { screenshot } from '../../support/browser';
import { silentLogger } from '../../../shared/logging/logger';
import { startMonitorApp, type RunningMonitorApp } from '../../support/monitor-app';
import { waitFor } from '../../support/wait';
import {
  launchChromium,
  openStatusPage,
  waitForAlertTitle,
  waitForTargetState,
  type OpenStatusPage,
} from './status-page-driver';
import { StatusSourceDouble, alert, slo, target } from './status-source-double';

const HOSTILE_TITLE = '<img src=x onerror="document.title=\'pwned\'">';

describe('the status page in headless Chromium, on a started monitor', () => {
  let svc: RunningMonitorApp;
  let browser: Browser;
  let opened: OpenStatusPage;
  const source = new StatusSourceDouble({
    targets: [
      target('billing', { up: true, lastProbeAt: new Date(), lastLatencyMs: 3.2 }),
      target('search', {
        up: true,
        lastProbeAt: new Date(),
        lastLatencyMs: 7.9,
        httpUrl: 'http://search:8080/health',
      }),
    ],
    slos: [slo('checkout-latency', { burnRate: 0.4, budgetRemaining: 0.6 })],
    alerts: [alert('Nightly backup finished', { severity: 'low' })],
  });

  beforeAll(async () => {
    svc = await startMonitorApp({ web: { slo_refresh_seconds: 0.1 } }, silentLogger(), {
      statusSource: source,
    });
    browser = await launchChromium();
    opened = await openStatusPage(browser, svc.baseUrl);
  });

  afterAll(async () => {
    await browser?.close();
    await svc?.close();
  });

  it('shows the targets, the SLOs and the latest alerts of the snapshot', async () => {
    const { page } = opened;
    expect(
      await page
        .locator('#targets-body tr')
        .evaluateAll((rows) => rows.map((r) => r.getAttribute('data-target'))),
    ).toEqual(['billing', 'search']);
    expect(await page.locator('#targets-summary').textContent()).toBe('All reachable');
    expect(await page.locator('#slos-body tr[data-slo="checkout-latency"] .burn-rate').textContent()).toBe(
      '0.40',
    );
    expect(await page.locator('#slos-body tr[data-slo="checkout-latency"] .budget').textContent()).toBe(
      '60.0 %',
    );
    expect(await page.locator('#alerts .alert .title').allTextContents()).toEqual([
      'Nightly backup finished',
    ]);
  });

  it('an alert appears without a reload, its hostile title shown as text', async () => {
    const { page } = opened;
    await waitFor(() => svc.app.statusPage.feed.connectionCount === 1, 'the page to hold its stream');
    const navigations: string[] = [];
    page.on('framenavigated', (frame) => navigations.push(frame.url()));
    source.pushAlert(alert(HOSTILE_TITLE, { severity: 'critical', message: '<b>not bold</b>' }));

    const item = await waitForAlertTitle(page, HOSTILE_TITLE);
    expect(await page.locator('#alerts .alert .title').first().textContent()).toBe(HOSTILE_TITLE);
    expect(await item.locator('.message').textContent()).toBe('<b>not bold</b>');
    // Nothing was parsed as markup: no image, no bold element, no handler ran.
    expect(await page.locator('#alerts img, #alerts b').count()).toBe(0);
    expect(await page.title()).toBe('Status · Monitor');
    expect(navigations).toEqual([]);
  });

  it('a target that goes down flips its row, and the summary says so', async () => {
    const { page } = opened;
    source.setTarget(
      target('search', { up: false, consecutiveFailures: 2, lastError: 'HTTP 503', lastProbeAt: new Date() }),
    );
    await waitForTargetState(page, 'search', 'down');
    expect(await page.locator('#targets-summary').textContent()).toBe('1 of 2 down');
    expect(await page.locator('tr[data-target="search"] .error').textContent()).toBe('HTTP 503');
    source.setTarget(target('search', { up: true, lastProbeAt: new Date(), lastLatencyMs: 6 }));
    await waitForTargetState(page, 'search', 'up');
  });

  it('SLO figures follow the source on the refresh period', async () => {
    const { page } = opened;
    source.setSlos([slo('checkout-latency', { burnRate: 1.75, budgetRemaining: -0.75, measuredMs: 437.5 })]);
    await page
      .locator('#slos-body tr[data-slo="checkout-latency"] .burn-rate', { hasText: '1.75' })
      .waitFor();
    expect(await page.locator('#slos-summary').textContent()).toBe('1 burning');
    await screenshot(page, 'monitor-status-page');
  });

  it('the Content-Security-Policy produced no violations and the console stayed clean', async () => {
    expect(await opened.cspViolations()).toEqual([]);
    expect(opened.problems).toEqual([]);
  });
});

describe('the status page when the monitor asks for a token', () => {
  const TOKEN = 'status-reader-token-0123456789';
  let svc: RunningMonitorApp;
  let browser: Browser;

  beforeAll(async () => {
    const source = new StatusSourceDouble({ alerts: [alert('Visible with a token')] });
    svc = await startMonitorApp({ web: { api_tokens: [TOKEN] } }, silentLogger(), { statusSource: source });
    browser = await launchChromium();
  });

  afterAll(async () => {
    await browser?.close();
    await svc?.close();
  });

  it('without a token shows how to sign in and no data', async () => {
    const opened = await openStatusPage(browser, svc.baseUrl, { waitLive: false });
    await opened.page.locator('#notice', { hasText: 'This monitor needs a token.' }).waitFor();
    expect(await opened.page.locator('#alerts .alert').count()).toBe(0);
    await opened.close();
  });

  it('with #token= loads the data, keeps the token in sessionStorage and clears the address bar', async () => {
    const opened = await openStatusPage(browser, svc.baseUrl, { token: TOKEN });
    await waitForAlertTitle(opened.page, 'Visible with a token');
    expect(new URL(opened.page.url()).hash).toBe('');
    expect(await opened.page.evaluate("sessionStorage.getItem('svc.monitor.token')")).toBe(TOKEN);
    await opened.close();
  });
});
