/**
 * The console's backends section in headless Chromium on the real service: the table with health
 * and circuit badges, queue depth and outcome counts, refreshed while shown (the page's clock is
 * Playwright's fake one, run forward by hand); axe-core; 1280 and 390 px.
 */
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import type { RunningNotificationApp } from '../../../support/notification-app';
import { operatorToken, startAdminService } from '../harness';

const CHROMIUM = '/usr/bin/chromium';
const ARTIFACTS = join(__dirname, '../../../../test-artifacts');
const API_KEY = 'SG.console-browser-secret-5e6f';

describe('console backends page in headless Chromium', () => {
  let svc: RunningNotificationApp;
  let browser: Browser;
  let page: Page;
  const problems: string[] = [];

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
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: [
        '--no-sandbox',
        '--disable-gpu',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
        '--no-first-run',
      ],
    });
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    page = await context.newPage();
    await page.clock.install();
    await page.addInitScript(`
      window.__csp = [];
      window.addEventListener('securitypolicyviolation', (e) => {
        window.__csp.push(e.violatedDirective + ' ' + e.blockedURI);
      });
    `);
    page.on('console', (msg) => {
      if (msg.type() === 'error' || msg.type() === 'warning') problems.push(msg.text());
    });
    page.on('pageerror', (err) => problems.push(err.message));
    await page.goto(`${svc.baseUrl}/admin/console#token=${await operatorToken()}`);
    await page.waitForSelector('#tab-backends');
    await page.evaluate("location.hash = '#/backends'");
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await svc?.close();
  });

  afterEach(async () => {
    expect(await page.evaluate('window.__csp')).toEqual([]);
    expect(problems).toEqual([]);
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
    await page.evaluate(readFileSync(require.resolve('axe-core'), 'utf8'));
    const result = (await page.evaluate("axe.run(document, { resultTypes: ['violations'] })")) as {
      violations: { id: string; impact: string }[];
    };
    expect(result.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical')).toEqual([]);
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
    mkdirSync(ARTIFACTS, { recursive: true });
    for (const width of [1280, 390]) {
      await page.setViewportSize({ width, height: 700 });
      expect(await page.evaluate('document.documentElement.scrollWidth <= window.innerWidth')).toBe(true);
      await page.screenshot({ path: join(ARTIFACTS, `console-backends-${width}.png`), fullPage: true });
    }
  });
});
