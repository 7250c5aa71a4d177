/**
 * Drives the monitor's status page in headless Chromium (playwright-core with the system chromium).
 * Used by the page's browser test with a StatusSource test double, and meant for the end-to-end
 * version too (raise an alert over gRPC, then `waitForAlertTitle`): only the source changes.
 */
import type { Browser, Page } from 'playwright-core';
import { openWatchedPage, type WatchedPage } from '../../support/browser';

export { launchChromium } from '../../support/browser';

/** An open status page and what it reported (console problems, CSP violations). */
export type OpenStatusPage = WatchedPage;

/**
 * Opens the status page of the monitor at `baseUrl` (with `#token=` when a token is given) in a
 * fresh browser context; with `waitLive` (default) resolves once its event stream is live.
 */
export async function openStatusPage(
  browser: Browser,
  baseUrl: string,
  opts: { token?: string; waitLive?: boolean } = {},
): Promise<OpenStatusPage> {
  const opened = await openWatchedPage(browser, { width: 1100, height: 800 });
  const { page } = opened;
  const hash = opts.token ? `#token=${encodeURIComponent(opts.token)}` : '';
  await page.goto(`${baseUrl}/${hash}`);
  if (opts.waitLive ?? true) await page.waitForSelector('#live[data-state="on"]');
  return opened;
}

/**
 * Waits until an alert with exactly this title is listed, and returns its list item. A locator wait,
 * not waitForFunction: a string predicate is eval'd in the page, which the CSP forbids.
 */
export async function waitForAlertTitle(page: Page, title: string): Promise<ReturnType<Page['locator']>> {
  const item = page.locator('#alerts .alert', {
    has: page.locator('.title', { hasText: new RegExp(`^${escapeRegExp(title)}$`) }),
  });
  await item.first().waitFor();
  return item.first();
}

/** Waits until the target's row shows `state` (`up`, `down`, `unknown`). */
export async function waitForTargetState(page: Page, name: string, state: string): Promise<void> {
  await page.locator(`#targets-body tr[data-target="${name}"][data-state="${state}"]`).waitFor();
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
