/**
 * The console's templates section in headless Chromium, on the real notification service: open a
 * template from the list, edit its SMS text and see the preview follow (with the segment count),
 * type a syntax error and see its line and column, fix it and save; a slow older preview answer
 * never overwrites a newer one; axe-core finds no serious or critical violation; at 1280 and 390 px
 * the document does not overflow (screenshots in test-artifacts/); no CSP violation.
 */
import type { Browser, Page, Route } from 'playwright-core';
import { CONSOLE_API_PATH } from '../../../../services/notification/admin/console/console-gateway';
import { axeSerious, overflowAt, screenshot, type WatchedPage } from '../../../support/browser';
import type { RunningNotificationApp } from '../../../support/notification-app';
import { authed, operatorToken, startAdminService } from '../harness';
import { openConsoleSection } from './console-browser';

describe('the console templates section in headless Chromium', () => {
  let svc: RunningNotificationApp;
  let browser: Browser;
  let page: Page;
  let token: string;
  let watched: WatchedPage;

  const savedText = async (): Promise<string | undefined> => {
    const res = await fetch(`${svc.baseUrl}${CONSOLE_API_PATH}/templates/orders`, authed(token));
    const body = (await res.json()) as {
      variants: { channel: string; locale: string; content: { text?: string } }[];
    };
    return body.variants.find((v) => v.channel === 'sms' && v.locale === 'en')?.content.text;
  };

  beforeAll(async () => {
    svc = await startAdminService({
      notify: {
        categories: [
          { name: 'orders', channels: ['inbox', 'email', 'sms'], description: 'Orders' },
          { name: 'security', channels: ['inbox', 'email'], description: 'Sign-ins' },
        ],
      },
    });
    token = await operatorToken();
    const put = await fetch(
      `${svc.baseUrl}${CONSOLE_API_PATH}/templates/orders`,
      authed(token, {
        method: 'PUT',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({
          channel: 'sms',
          locale: 'en',
          content: { text: 'Order {{ data.id }} shipped' },
        }),
      }),
    );
    expect(put.status).toBe(201);
    ({ browser, page, watched } = await openConsoleSection(svc.baseUrl, 'templates', { token }));
  });

  afterAll(async () => {
    await browser?.close();
    await svc?.close();
  });

  it('lists the templates by name with their locales', async () => {
    await page.locator('#tpl-rows tr').nth(1).waitFor();
    expect(await page.locator('#tpl-rows tr td:first-child').allTextContents()).toEqual([
      'orders',
      'security',
    ]);
    expect(await page.locator('#tpl-rows tr').first().textContent()).toContain('inbox, email, sms');
  });

  it('opens the editor on the saved variant and previews it with the sample data', async () => {
    await page.click('#tpl-rows a >> text=orders');
    await page.locator('#tpl-part-text').waitFor();
    expect(await page.inputValue('#tpl-channel')).toBe('sms');
    expect(await page.inputValue('#tpl-part-text')).toBe('Order {{ data.id }} shipped');
    await page.fill('#tpl-data', '{"id": "A-7", "name": "山田 😀", "city": "תל אביב"}');
    await page.locator('pre[data-part=text]', { hasText: 'Order A-7 shipped' }).waitFor();
    expect(await page.locator('#tpl-sms').textContent()).toBe('1 segment · GSM-7 · 17 septets');
  });

  it('updates the preview as the operator types, with the SMS segment count', async () => {
    await page.fill('#tpl-part-text', 'Hi {{ data.name }} in {{ data.city }}: order {{ data.id }}');
    await page.locator('pre[data-part=text]', { hasText: 'Hi 山田 😀 in תל אביב: order A-7' }).waitFor();
    expect(await page.locator('#tpl-sms').textContent()).toMatch(/^1 segment · UCS-2 · \d+ UTF-16 units$/);
  });

  it('shows a syntax error with its line and column next to the editor', async () => {
    await page.fill('#tpl-part-text', 'Hi\n  {{ data.name | upcase }');
    await page.locator('#tpl-error .tpl-position', { hasText: 'template.text: line 2, column 3' }).waitFor();
    expect(await page.locator('#tpl-error').textContent()).toMatch(/line 2, column 3/);
    // The last good preview stays until the source parses again.
    expect(await page.locator('pre[data-part=text]').textContent()).toContain('Hi 山田 😀');
  });

  it('a slow answer to an older preview never overwrites the newer one', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let calls = 0;
    const handler = async (route: Route): Promise<void> => {
      calls += 1;
      if (calls === 1) await gate;
      await route.continue().catch(() => undefined);
    };
    await page.route('**/admin/console/api/templates/preview', handler);
    await page.fill('#tpl-part-text', 'OLD {{ data.id }}');
    await page.waitForTimeout(400); // past the editor's debounce, so that the first preview is asked for
    await page.fill('#tpl-part-text', 'NEW {{ data.id }}');
    await page.locator('pre[data-part=text]', { hasText: 'NEW A-7' }).waitFor();
    expect(calls).toBe(2); // the older one is still held
    release();
    await page.unroute('**/admin/console/api/templates/preview', handler);
    // Another preview round trip completes after the old answer was let go: still the newer text.
    await page.fill('#tpl-data', '{"id": "A-7"}');
    await page.locator('pre[data-part=text]', { hasText: 'NEW A-7' }).waitFor();
    expect(await page.locator('pre[data-part=text]').textContent()).toBe('NEW A-7');
  });

  it('saves the variant', async () => {
    await page.fill('#tpl-part-text', 'Your order {{ data.id }} is on its way 🚚');
    await page.click('#tpl-save');
    await page.locator('#notice', { hasText: 'Saved orders (sms, en).' }).waitFor();
    expect(await savedText()).toBe('Your order {{ data.id }} is on its way 🚚');
  });

  it('does not save a syntax error: the error shows and the stored text stays', async () => {
    await page.fill('#tpl-part-text', '{% if data.id %}no end');
    await page.click('#tpl-save');
    await page.locator('#tpl-error .tpl-position', { hasText: /line 1, column 1/ }).waitFor();
    expect(await savedText()).toBe('Your order {{ data.id }} is on its way 🚚');
    await page.fill('#tpl-part-text', 'Your order {{ data.id }} is on its way 🚚');
    await page.locator('#tpl-error .tpl-position').waitFor({ state: 'detached' });
  });

  it('has no serious or critical axe-core violation', async () => {
    expect(await axeSerious(page)).toEqual([]);
  });

  it.each([1280, 390])('does not overflow at %i px (screenshot kept)', async (width) => {
    expect(await overflowAt(page, width, 900)).toBeLessThanOrEqual(0);
    await screenshot(page, `console-templates-${width}`);
  });

  it('the Content-Security-Policy produced no violations and the console stayed clean', async () => {
    expect(await watched.cspViolations()).toEqual([]);
    // The 400s of the syntax errors are the expected network errors.
    expect(watched.problems.filter((p) => !/status of 400/.test(p))).toEqual([]);
  });
});
