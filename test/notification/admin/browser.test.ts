import type { Browser, Page } from 'playwright-core';
import { launchChromium, openWatchedPage, screenshot, type WatchedPage } from '../../support/browser';
import type { RunningNotificationApp } from '../../support/notification-app';
import { hsToken, sendOverGrpc, startAdminService, until } from './harness';

describe('the management page in headless Chromium, on the real notification service', () => {
  let svc: RunningNotificationApp;
  let browser: Browser;
  let page: Page;
  let watched: WatchedPage;

  beforeAll(async () => {
    svc = await startAdminService();
    browser = await launchChromium();
    for (const [title, body] of [
      ['Deploy finished', 'notification-service v1.4.2 is live in eu-west-1.'],
      ['Weekly report ready', 'Delivery success rate 99.7 %, 3 retries exhausted.'],
      ['SMS backend degraded', 'sms_gateway answered 503 for 2 minutes; fell back to the secondary.'],
    ]) {
      await sendOverGrpc(svc, 'web-user', title, body);
    }
    await sendOverGrpc(svc, 'someone-else', 'Not yours', 'hidden');

    watched = await openWatchedPage(browser, { width: 1100, height: 720 });
    page = watched.page;
    await page.goto(`${svc.baseUrl}/admin/notifications#token=${await hsToken('web-user')}`);
  });

  afterAll(async () => {
    await browser?.close();
    await svc?.close();
  });

  it("shows the user's messages, unread highlighted, with the badge count", async () => {
    await page.waitForSelector('.item:nth-child(3)');
    expect(await page.locator('.item .title').allTextContents()).toEqual([
      'SMS backend degraded',
      'Weekly report ready',
      'Deploy finished',
    ]);
    expect(await page.locator('.item.unread').count()).toBe(3);
    expect(await page.locator('#badge').textContent()).toBe('3');
  });

  it('removes the token from the address bar and keeps it in sessionStorage', async () => {
    expect(new URL(page.url()).hash).toBe('');
    expect(await page.evaluate("sessionStorage.getItem('svc.admin.token')")).toMatch(/^ey/);
  });

  it('a message sent over gRPC appears and the badge goes up without a reload', async () => {
    await page.waitForSelector('#live[data-state="on"]');
    // The page's event stream is being watched by the service's inbox hub.
    await until(() => svc.app.inboxHub.watcherCount === 1);
    const navigations: string[] = [];
    page.on('framenavigated', (frame) => navigations.push(frame.url()));
    await sendOverGrpc(svc, 'web-user', 'Disk almost full', 'db-1 at 91 %.');
    // A locator wait, not waitForFunction: a string predicate is eval'd in the page, which the CSP forbids.
    await page.locator('#badge', { hasText: /^4$/ }).waitFor();
    expect(await page.locator('.item .title').first().textContent()).toBe('Disk almost full');
    expect(await page.locator('.item.unread').count()).toBe(4);
    expect(navigations).toEqual([]);
    await screenshot(page, 'admin-page');
  });

  it('"Mark read" on one message marks it read and lowers the badge', async () => {
    await page.locator('.item.unread .mark-read').last().click();
    // A locator wait, not waitForFunction: a string predicate is eval'd in the page, which the CSP forbids.
    await page.locator('#badge', { hasText: /^3$/ }).waitFor();
    expect(await page.locator('.item.unread').count()).toBe(3);
    expect(await svc.app.inbox.countUnread('web-user')).toBe(3);
  });

  it('"Mark all read" clears the badge and the highlights', async () => {
    await page.click('#mark-all');
    await page.waitForSelector('#badge', { state: 'hidden' });
    expect(await page.locator('.item.unread').count()).toBe(0);
    expect(await svc.app.inbox.countUnread('web-user')).toBe(0);
  });

  it('the Content-Security-Policy produced no violations and the console stayed clean', async () => {
    expect(await watched.cspViolations()).toEqual([]);
    expect(watched.problems).toEqual([]);
  });
});

describe('the management page when its token expires', () => {
  let svc: RunningNotificationApp;
  let browser: Browser;

  beforeAll(async () => {
    svc = await startAdminService();
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await svc?.close();
  });

  // Long enough for the page to load and go live on a loaded machine (a 3 s token once expired
  // before the stream opened at load 19), short enough to wait out.
  const TOKEN_LIFETIME_S = 10;

  async function openWith(token: string): Promise<Page> {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(`${svc.baseUrl}/admin/notifications#token=${token}`);
    await page.waitForSelector('#live[data-state="on"]');
    return page;
  }

  it('shows that the session ended when no fresher token is there', async () => {
    const exp = Math.floor(Date.now() / 1000) + TOKEN_LIFETIME_S;
    const page = await openWith(await hsToken('expiring-user', { exp }));
    await page.locator('#notice', { hasText: 'Your session has ended.' }).waitFor({ timeout: 30_000 });
    expect(await page.locator('#live').getAttribute('data-state')).toBe('off');
    expect(await page.evaluate("sessionStorage.getItem('svc.admin.token')")).toBeNull();
    await until(() => svc.app.inboxHub.watcherCount === 0);
    await page.context().close();
  });

  it('reconnects with a fresher token from sessionStorage and keeps receiving messages', async () => {
    const exp = Math.floor(Date.now() / 1000) + TOKEN_LIFETIME_S;
    const page = await openWith(await hsToken('renewed-user', { exp }));
    const fresh = await hsToken('renewed-user');
    await page.evaluate(`sessionStorage.setItem('svc.admin.token', ${JSON.stringify(fresh)})`);
    // Wait out the first token; the stream that follows is authorised by the fresh one.
    await until(() => Date.now() > exp * 1000 + 500);
    await page.waitForSelector('#live[data-state="on"]');
    await until(() => svc.app.inboxHub.watcherCount === 1);
    await sendOverGrpc(svc, 'renewed-user', 'After renewal', 'still live');
    await page.locator('.item .title', { hasText: 'After renewal' }).waitFor();
    expect(await page.locator('#notice').isHidden()).toBe(true);
    await page.context().close();
  });
});
