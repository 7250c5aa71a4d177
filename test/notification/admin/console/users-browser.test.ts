/**
 * The console's users section in headless Chromium on the real service: look a user up, see the
 * card (masked contact points, devices, preferences, notifications linking to their timeline), erase
 * with the typed confirmation (a wrong text keeps the button disabled); axe-core; 1280 and 390 px.
 */
import type { Browser, Page } from 'playwright-core';
import { axeSerious, overflowAt, screenshot, type WatchedPage } from '../../../support/browser';
import type { RunningNotificationApp } from '../../../support/notification-app';
import { startAdminService } from '../harness';
import { openConsoleSection } from './console-browser';

const USER = 'ユーザー-😀-משתמש';

describe('console users page in headless Chromium', () => {
  let svc: RunningNotificationApp;
  let browser: Browser;
  let page: Page;
  let watched: WatchedPage;

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
    // A 404 answer of a lookup is logged by Chromium as a failed resource: expected here.
    ({ browser, page, watched } = await openConsoleSection(svc.baseUrl, 'users', {
      ignoreConsole: /status of 404/,
    }));
    await page.waitForSelector('#users-id');
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await svc?.close();
  });

  afterEach(async () => {
    expect(await watched.cspViolations()).toEqual([]);
    expect(watched.problems).toEqual([]);
  });

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
    expect(await axeSerious(page)).toEqual([]);
  });

  it('lays out at 1280 and 390 px without horizontal overflow', async () => {
    for (const width of [1280, 390]) {
      expect(await overflowAt(page, width, 800)).toBeLessThanOrEqual(0);
      await screenshot(page, `console-users-${width}`);
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
    expect(await axeSerious(page)).toEqual([]);
    await screenshot(page, 'console-users-erase-1280', { fullPage: false });
    await page.fill('#users-erase-confirm', USER);
    expect(await page.isDisabled(erase)).toBe(false);
    await page.click(erase);
    await page.waitForSelector('dialog.erase-dialog', { state: 'detached' });
    await page.waitForURL(/#\/users$/);
    expect(await page.textContent('#notice')).toContain('erased');
    await expect(svc.app.users.findUser(USER)).resolves.toBeUndefined();
  });
});
