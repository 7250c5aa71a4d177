/**
 * Drives the monitor's status page in headless Chromium (playwright-core with the system chromium).
 * Used by the page's browser test with a StatusSource test double, and meant for the end-to-end
 * version too (raise an alert over gRPC, then `waitForAlertTitle`): only the source changes.
 */
import { chromium, type Browser, type Page } from 'playwright-core';

const CHROMIUM = '/usr/bin/chromium';

/** Starts headless Chromium. */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
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
}

/** An open status page and what it reported. */
export interface OpenStatusPage {
  page: Page;
  /** Console errors and warnings, page errors. */
  problems: string[];
  /** Content-Security-Policy violations seen by the page. */
  cspViolations(): Promise<string[]>;
  close(): Promise<void>;
}

/**
 * Opens the status page of the monitor at `baseUrl` (with `#token=` when a token is given) in a
 * fresh browser context; with `waitLive` (default) resolves once its event stream is live.
 */
export async function openStatusPage(
  browser: Browser,
  baseUrl: string,
  opts: { token?: string; waitLive?: boolean } = {},
): Promise<OpenStatusPage> {
  const context = await browser.newContext({ viewport: { width: 1100, height: 800 } });
  const page = await context.newPage();
  const problems: string[] = [];
  // Installed through the DevTools protocol, so the page's CSP does not apply to it.
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
  const hash = opts.token ? `#token=${encodeURIComponent(opts.token)}` : '';
  await page.goto(`${baseUrl}/${hash}`);
  if (opts.waitLive ?? true) await page.waitForSelector('#live[data-state="on"]');
  return {
    page,
    problems,
    cspViolations: async () => (await page.evaluate('window.__csp')) as string[],
    close: () => context.close(),
  };
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
