/**
 * The operator console opened on one section in headless Chromium, for the console's browser tests:
 * a fresh Chromium, a watched page (test/support/browser.ts: CSP violations, console errors), the
 * console loaded with an operator token and switched to the section.
 */
import type { Browser, Page } from 'playwright-core';
import {
  launchChromium,
  openWatchedPage,
  type WatchedPage,
  type WatchOptions,
} from '../../../support/browser';
import { operatorToken } from '../harness';

export interface ConsoleInBrowser {
  browser: Browser;
  page: Page;
  watched: WatchedPage;
}

export interface ConsoleOptions extends WatchOptions {
  /** The bearer token in the address (default: a fresh operator token). */
  token?: string;
  /** Runs on the page before it loads (e.g. `page.clock.install()`). */
  beforeLoad?: (page: Page) => Promise<void>;
}

/** Launches Chromium and opens `${baseUrl}/admin/console` on `#/<section>` once its tab is there. */
export async function openConsoleSection(
  baseUrl: string,
  section: string,
  opts: ConsoleOptions = {},
): Promise<ConsoleInBrowser> {
  const browser = await launchChromium();
  const watched = await openWatchedPage(browser, opts);
  const { page } = watched;
  await opts.beforeLoad?.(page);
  await page.goto(`${baseUrl}/admin/console#token=${opts.token ?? (await operatorToken())}`);
  await page.locator(`#tab-${section}`).waitFor();
  await page.evaluate(`location.hash = ${JSON.stringify(`#/${section}`)}`);
  return { browser, page, watched };
}
