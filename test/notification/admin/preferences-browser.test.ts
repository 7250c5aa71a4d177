/**
 * The preferences section of the management page in headless Chromium, on the real notification
 * service: a switch per category and channel, required ones disabled and marked, a change saved at
 * once and still there after a reload.
 */
import type { Browser, Page } from 'playwright-core';
import type { AdminPreferencesJson } from '../../../services/notification/admin/gateway';
import { UnsubscribeLinks } from '../../../services/notification/users/preferences';
import { silentLogger } from '../../../shared/logging/logger';
import { launchChromium, openWatchedPage, screenshot, type WatchedPage } from '../../support/browser';
import type { RunningNotificationApp } from '../../support/notification-app';
import { authed, hsToken, startAdminService } from './harness';

const USER = 'prefs-web-user';
/** Another user, who only ever uses the unsubscribe link. */
const READER = 'link-reader';
const KEY = 'browser-test-unsubscribe-key-0123456789abcdef';
const CATEGORIES = [
  { name: 'security', channels: ['inbox', 'email', 'sms'], required: true, description: 'Sign-ins' },
  {
    name: 'comments',
    channels: ['inbox', 'email', 'push'],
    defaults: { push: false },
    description: '评论 · تعليقات 💬',
  },
] as const;

describe('the preferences section in headless Chromium', () => {
  let svc: RunningNotificationApp;
  let browser: Browser;
  let page: Page;
  let watched: WatchedPage;

  async function serverView(user = USER): Promise<AdminPreferencesJson> {
    const res = await fetch(`${svc.baseUrl}/admin/notifications/preferences`, authed(await hsToken(user)));
    return (await res.json()) as AdminPreferencesJson;
  }

  beforeAll(async () => {
    svc = await startAdminService({
      notify: {
        categories: CATEGORIES.map((c) => ({ ...c, channels: [...c.channels] })),
        unsubscribe: { signing_key: KEY, public_base_url: 'https://notify.example.com' },
      },
    });
    browser = await launchChromium();
    watched = await openWatchedPage(browser, { width: 1100, height: 900 });
    page = watched.page;
    await page.goto(`${svc.baseUrl}/admin/notifications#token=${await hsToken(USER)}`);
    await page.waitForSelector('#prefs:not([hidden]) input[data-channel]');
  });

  afterAll(async () => {
    await browser?.close();
    await svc?.close();
  });

  it('shows a switch per category channel, a dash where the category does not use the channel', async () => {
    const rows = page.locator('#prefs-body tr');
    expect(await rows.count()).toBe(2);
    expect(await page.locator('tr[data-category="security"] input').count()).toBe(3);
    expect(await page.locator('tr[data-category="comments"] input').count()).toBe(3);
    expect(await page.locator('tr[data-category="comments"] td.unused').count()).toBe(1);
    expect(await page.locator('tr[data-category="comments"] .pref-description').textContent()).toBe(
      '评论 · تعليقات 💬',
    );
    expect(await page.locator('input[data-category="comments"][data-channel="push"]').isChecked()).toBe(
      false,
    );
    expect(await page.locator('input[data-category="comments"][data-channel="email"]').isChecked()).toBe(
      true,
    );
  });

  it('marks the required category and disables its switches, all on', async () => {
    expect(await page.locator('tr[data-category="security"] .required').textContent()).toBe('Required');
    const inputs = page.locator('tr[data-category="security"] input');
    for (let i = 0; i < 3; i++) {
      expect(await inputs.nth(i).isDisabled()).toBe(true);
      expect(await inputs.nth(i).isChecked()).toBe(true);
    }
    expect(await page.locator('tr[data-category="comments"] input').first().isDisabled()).toBe(false);
  });

  it('turning a switch off saves it on the service, and a reload shows it off', async () => {
    const email = page.locator('input[data-category="comments"][data-channel="email"]');
    const saved = page.waitForResponse(
      (r) => r.url().endsWith('/admin/notifications/preferences') && r.request().method() === 'PUT',
    );
    await email.click();
    expect((await saved).status()).toBe(200);
    await page.waitForSelector('#prefs-status:has-text("Saved.")');
    const comments = (await serverView()).categories.find((c) => c.name === 'comments')!;
    expect(comments.channels.find((c) => c.channel === 'email')).toEqual({
      channel: 'email',
      enabled: false,
      chosen: true,
    });

    // The token went to sessionStorage on the first load; a reload keeps the session.
    await page.reload();
    await page.waitForSelector('#prefs:not([hidden]) input[data-channel]');
    expect(await page.locator('input[data-category="comments"][data-channel="email"]').isChecked()).toBe(
      false,
    );
    await screenshot(page, 'admin-preferences');
  });

  it("the unsubscribe link's confirm page, under its own CSP, posts the one-click form when the button is pressed", async () => {
    const links = new UnsubscribeLinks({
      config: { signing_key: KEY, token_ttl_days: 1, public_base_url: 'https://notify.example.com' },
      categories: CATEGORIES.map((c) => ({ defaults: {}, required: false, ...c, channels: [...c.channels] })),
      logger: silentLogger(),
    });
    const link = /^<([^>]+)>$/.exec(links.unsubscribeHeaders(READER, 'comments')['List-Unsubscribe']!)![1]!;
    const local = `${svc.baseUrl}${new URL(link).pathname}${new URL(link).search}`;
    const tab = await browser.newPage();
    const problems: string[] = [];
    tab.on('console', (msg) => {
      if (msg.type() === 'error') problems.push(msg.text());
    });
    try {
      await tab.goto(local);
      expect(await tab.locator('h1').textContent()).toBe('Unsubscribe');
      // Opening the page (what a link scanner does) changed nothing.
      const before = (await serverView(READER)).categories.find((c) => c.name === 'comments')!;
      expect(before.channels.find((c) => c.channel === 'email')).toEqual({
        channel: 'email',
        enabled: true,
        chosen: false,
      });
      await Promise.all([tab.waitForNavigation(), tab.click('button[type="submit"]')]);
      expect(await tab.locator('p').textContent()).toBe('You will no longer receive “comments” emails.');
      expect(problems).toEqual([]);
    } finally {
      await tab.close();
    }
    const after = (await serverView(READER)).categories.find((c) => c.name === 'comments')!;
    expect(after.channels.find((c) => c.channel === 'email')).toEqual({
      channel: 'email',
      enabled: false,
      chosen: true,
    });
  });

  it('ran without CSP violations or console errors', async () => {
    expect(await watched.cspViolations()).toEqual([]);
    expect(watched.problems).toEqual([]);
  });
});
