/**
 * The console's backends section in headless Chromium on the real service: the table with health
 * and circuit badges, queue depth and outcome counts, refreshed while shown (the page's clock is
 * Playwright's fake one, run forward by hand); axe-core; 1280 and 390 px.
 */
import type { Browser, Page } from 'playwright-core';
import { axeSerious, overflowAt, screenshot, type WatchedPage } from '../../../support/browser';
import type { RunningNotificationApp } from '../../../support/notification-app';
import { startAdminService } from '../harness';
import { openConsoleSection } from './console-browser';

const API_KEY = 'SG.console-browser-secret-5e6f';

describe('console backends page in headless Chromium', () => {
  let svc: RunningNotificationApp;
  let browser: Browser;
  let page: Page;
  let watched: WatchedPage;

  beforeAll(async () => {
    svc = await startAdminService({
      mailer: {
        backends: [
          {
            name: 'api',
            driver: 'http_api',
            primary: true,
            from_email: 'noreply@example.com',
            http_api: { base_url: 'http://127.0.0.1:1', api_key: API_KEY, timeout_ms: 500 },
          },
        ],
      },
      delivery: {
        base_delay_ms: 600_000,
        max_delay_ms: 600_000,
        poll_interval_ms: 20,
        circuit_breaker: { failure_threshold: 1, cooldown_seconds: 3600 },
      },
    });
    ({ browser, page, watched } = await openConsoleSection(svc.baseUrl, 'backends', {
      beforeLoad: (p) => p.clock.install(),
    }));
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await svc?.close();
  });

  afterEach(async () => {
    expect(await watched.cspViolations()).toEqual([]);
    expect(watched.problems).toEqual([]);
  });

  const row = 'tr[data-backend="email/api"]';
  const cells = async (): Promise<string[]> =>
    page.$$eval(`${row} > *`, (tds) => tds.map((td) => td.textContent ?? ''));

  it('shows each backend with its badges and counts, with no secret on the page', async () => {
    await page.clock.runFor(1);
    await page.waitForSelector(row);
    const [name, channel, kind, , circuit, queued, sent, failed, retried] = await cells();
    expect([name, channel, kind]).toEqual(['api (primary)', 'email', 'http_api']);
    expect(circuit).toBe('closed');
    expect([queued, sent, failed, retried]).toEqual(['0', '0', '0', '0']);
    expect(await page.content()).not.toContain(API_KEY);
    expect(await axeSerious(page)).toEqual([]);
  });

  it('refreshes while shown: an open circuit and the queued records appear without a reload', async () => {
    for (const i of [0, 1]) {
      await svc.notificationConnect.sendEmail({ to: [`u${i}@example.com`], subject: 's', text: 't' });
      for (let n = 0; n < 500 && svc.app.deliveries.breakers.state('email', 'api') !== 'open'; n++) {
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
    }
    // Not yet: the table shows what it read last.
    expect((await cells())[4]).toBe('closed');
    await page.clock.runFor(5000);
    await page.waitForSelector(`${row} td:nth-child(5) .status[data-status="open"]`);
    const [, , , health, circuit, queued, , , retried] = await cells();
    expect(health).toMatch(/^degraded/);
    expect(circuit).toMatch(/^open\s*until /);
    expect(queued).toBe('2');
    expect(retried).toBe('1');
  });

  it('lays out at 1280 and 390 px without horizontal overflow', async () => {
    for (const width of [1280, 390]) {
      expect(await overflowAt(page, width, 700)).toBeLessThanOrEqual(0);
      await screenshot(page, `console-backends-${width}`);
    }
  });
});
