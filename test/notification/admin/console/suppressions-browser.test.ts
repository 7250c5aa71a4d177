/**
 * The console's suppressions section in headless Chromium, on the real notification service: add a
 * suppression through the form, find it by exact search, remove it with a reason after confirming;
 * axe-core finds no serious or critical violation; at 1280 and 390 px the document does not overflow
 * (screenshots in test-artifacts/); no CSP violation, no console error.
 */
import type { Browser, Page } from 'playwright-core';
import { axeSerious, overflowAt, screenshot, type WatchedPage } from '../../../support/browser';
import type { RunningNotificationApp } from '../../../support/notification-app';
import { startAdminService, until } from '../harness';
import { openConsoleSection } from './console-browser';

describe('the console suppressions section in headless Chromium', () => {
  let svc: RunningNotificationApp;
  let browser: Browser;
  let page: Page;
  let watched: WatchedPage;

  beforeAll(async () => {
    svc = await startAdminService();
    for (const n of ['+15550002001', '+15550002002']) {
      await svc.app.suppressions.add({
        channel: 'sms',
        recipient: n,
        reason: 'unsubscribed',
        source: 'receipt:twilio',
      });
      // The next entry strictly newer (within one millisecond the list orders by id).
      const addedAt = Date.now();
      await until(() => Date.now() > addedAt);
    }
    ({ browser, page, watched } = await openConsoleSection(svc.baseUrl, 'suppressions'));
  });

  afterAll(async () => {
    await browser?.close();
    await svc?.close();
  });

  it('lists the entries newest first, masked', async () => {
    await page.locator('#sup-rows tr').nth(1).waitFor();
    expect(await page.locator('#sup-rows .sup-recipient').allTextContents()).toEqual([
      '+1555****002',
      '+1555****001',
    ]);
  });

  it('adds a suppression through the form; the row appears masked', async () => {
    await page.selectOption('#sup-add-channel', 'email');
    await page.fill('#sup-add-recipient', 'Zoe.Test@Example.com');
    await page.fill('#sup-add-reason', 'asked by phone 📞 通话 طلب');
    await page.click('#sup-add button[type=submit]');
    await page.locator('#sup-rows .sup-recipient', { hasText: 'z***@example.com' }).waitFor();
    expect(await page.locator('#notice').textContent()).toBe('Suppressed z***@example.com on email.');
    expect(await page.locator('#sup-rows tr').first().textContent()).toContain(
      'api:console:ops-ann: asked by phone 📞 通话 طلب',
    );
    expect(await svc.app.suppressions.isSuppressed('email', 'zoe.test@example.com')).toBe(true);
  });

  it('shows the server’s message for a bad recipient', async () => {
    await page.selectOption('#sup-add-channel', 'sms');
    await page.fill('#sup-add-recipient', '555-1234');
    await page.fill('#sup-add-reason', 'typo');
    await page.click('#sup-add button[type=submit]');
    await page.locator('#sup-error', { hasText: /E\.164/ }).waitFor();
  });

  it('finds it by exact search and removes it with a reason after confirming', async () => {
    await page.fill('#sup-q', 'ZOE.test@example.com');
    await page.click('#sup-filters button[type=submit]');
    await page.locator('#sup-rows tr').first().waitFor();
    expect(await page.locator('#sup-rows tr').count()).toBe(1);
    await page.click('#sup-rows tr button.danger');
    expect(await page.inputValue('#sup-remove-recipient')).toBe('ZOE.test@example.com');
    expect(await page.inputValue('#sup-remove-channel')).toBe('email');
    await page.fill('#sup-remove-reason', 'customer re-subscribed ✅');
    await page.click('#sup-remove button[type=submit]');
    // Nothing is removed until the operator confirms.
    await page.locator('#sup-confirm').waitFor();
    expect(await svc.app.suppressions.isSuppressed('email', 'zoe.test@example.com')).toBe(true);
    await page.click('#sup-confirm-yes');
    await page.locator('#notice', { hasText: 'Suppression removed.' }).waitFor();
    await page.locator('#sup-empty').waitFor();
    expect(await svc.app.suppressions.isSuppressed('email', 'zoe.test@example.com')).toBe(false);
  });

  it('has no serious or critical axe-core violation', async () => {
    expect(await axeSerious(page)).toEqual([]);
  });

  it.each([1280, 390])('does not overflow at %i px (screenshot kept)', async (width) => {
    await page.click('#sup-clear');
    await page.locator('#sup-rows tr').nth(1).waitFor();
    expect(await overflowAt(page, width, 800)).toBeLessThanOrEqual(0);
    await screenshot(page, `console-suppressions-${width}`);
  });

  it('the Content-Security-Policy produced no violations and the console stayed clean', async () => {
    expect(await watched.cspViolations()).toEqual([]);
    // The 400 of the bad recipient is the one expected network error.
    expect(watched.problems.filter((p) => !/status of 400/.test(p))).toEqual([]);
  });
});
