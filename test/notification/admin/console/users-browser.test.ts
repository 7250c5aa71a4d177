/**
 * The console's users section in headless Chromium on the real service: look a user up, see the
 * card (masked contact points, devices, preferences, notifications linking to their timeline), erase
 * with the typed confirmation (a wrong text keeps the button disabled); axe-core; 1280 and 390 px.
 */
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import type { RunningNotificationApp } from '../../../support/notification-app';
import { operatorToken, startAdminService } from '../harness';

const CHROMIUM = '/usr/bin/chromium';
const ARTIFACTS = join(__dirname, '../../../../test-artifacts');
const USER = 'ユーザー-😀-משתמש';

describe('console users page in headless Chromium', () => {
  let svc: RunningNotificationApp;
  let browser: Browser;
  let page: Page;
  const problems: string[] = [];

  beforeAll(async () => {
    svc = await startAdminService({
      notify: { categories: [{ name: 'comments', channels: ['inbox'], description: '评论 💬' }] },
    });
    await svc.app.users.upsertUser({
      userId: USER,
      emails: ['jane.doe@example.com'],
      phones: ['+15550104567'],
      locale: 'he-IL',
      timeZone: 'Asia/Jerusalem',
      attributes: { plan: 'pro' },
      quietHours: { windows: [{ days: [5], start: '18:00', end: '08:00' }], holdEmail: true },
    });
    await svc.app.users.registerDevice(USER, { token: 'f'.repeat(60) + 'abcd', platform: 'apns' });
    await svc.app.notifier.notify(
      {
        userId: USER,
        topic: '',
        category: 'comments',
        data: {},
        overrides: [],
        priority: 'normal',
        idempotencyKey: 'k1',
      },
      'caller',
    );
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
    await page.addInitScript(`
      window.__csp = [];
      window.addEventListener('securitypolicyviolation', (e) => {
        window.__csp.push(e.violatedDirective + ' ' + e.blockedURI);
      });
    `);
    page.on('console', (msg) => {
      // A 404 answer of a lookup is logged by Chromium as a failed resource: expected here.
      if ((msg.type() === 'error' || msg.type() === 'warning') && !/status of 404/.test(msg.text())) {
        problems.push(msg.text());
      }
    });
    page.on('pageerror', (err) => problems.push(err.message));
    await page.goto(`${svc.baseUrl}/admin/console#token=${await operatorToken()}`);
    await page.waitForSelector('#tab-users');
    await page.evaluate("location.hash = '#/users'");
    await page.waitForSelector('#users-id');
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await svc?.close();
  });

  afterEach(async () => {
    expect(await page.evaluate('window.__csp')).toEqual([]);
    expect(problems).toEqual([]);
  });

  /** Serious or critical axe-core violations (axe evaluated as a string: the CSP refuses a script tag). */
  async function axeViolations(): Promise<{ id: string; impact: string }[]> {
    await page.evaluate(readFileSync(require.resolve('axe-core'), 'utf8'));
    const result = (await page.evaluate("axe.run(document, { resultTypes: ['violations'] })")) as {
      violations: { id: string; impact: string }[];
    };
    return result.violations
      .filter((v) => v.impact === 'serious' || v.impact === 'critical')
      .map((v) => ({ id: v.id, impact: v.impact }));
  }

  it('tells an unknown user apart', async () => {
    await page.fill('#users-id', 'nobody-here');
    await page.click('#section-users button[type=submit]');
    await page.waitForSelector('#users-card .error-text');
    expect(await page.textContent('#users-card')).toContain('No user with the id “nobody-here”');
  });

  it('looks a user up by id and shows the card, masked, with a link to each notification', async () => {
    await page.fill('#users-id', USER);
    await page.click('#section-users button[type=submit]');
    await page.waitForSelector('.user-card');
    const text = (await page.textContent('.user-card'))!;
    expect(await page.textContent('#users-card-title')).toBe(USER);
    expect(text).not.toContain('jane.doe@example.com');
    expect(text).toMatch(/j\*+@example\.com/);
    expect(text).toContain('ffff…abcd');
    expect(text).toContain('Fri 18:00–08:00 (email held too)');
    expect(text).toContain('Asia/Jerusalem');
    const links = await page.$$eval('.user-card a[href^="#/activity/notification/"]', (as) =>
      as.map((a) => a.getAttribute('href')),
    );
    expect(links).toHaveLength(1);
    expect(await page.evaluate('location.hash')).toBe(`#/users/${encodeURIComponent(USER)}`);
    expect(await axeViolations()).toEqual([]);
  });

  it('lays out at 1280 and 390 px without horizontal overflow', async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    for (const width of [1280, 390]) {
      await page.setViewportSize({ width, height: 800 });
      expect(await page.evaluate('document.documentElement.scrollWidth <= window.innerWidth')).toBe(true);
      await page.screenshot({ path: join(ARTIFACTS, `console-users-${width}.png`), fullPage: true });
    }
    await page.setViewportSize({ width: 1280, height: 800 });
  });

  it('erases only after the id is typed again: a wrong text keeps the button disabled', async () => {
    await page.click('.user-card button.danger');
    await page.waitForSelector('dialog.erase-dialog[open]');
    const erase = 'dialog.erase-dialog button.danger';
    expect(await page.isDisabled(erase)).toBe(true);
    await page.fill('#users-erase-confirm', USER.slice(0, -1));
    expect(await page.isDisabled(erase)).toBe(true);
    await page.fill('#users-erase-confirm', `${USER} `);
    expect(await page.isDisabled(erase)).toBe(true);
    expect(await axeViolations()).toEqual([]);
    mkdirSync(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: join(ARTIFACTS, 'console-users-erase-1280.png') });
    await page.fill('#users-erase-confirm', USER);
    expect(await page.isDisabled(erase)).toBe(false);
    await page.click(erase);
    await page.waitForSelector('dialog.erase-dialog', { state: 'detached' });
    await page.waitForURL(/#\/users$/);
    expect(await page.textContent('#notice')).toContain('erased');
    await expect(svc.app.users.findUser(USER)).resolves.toBeUndefined();
  });
});
