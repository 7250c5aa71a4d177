/**
 * The one home of the browser tests' Chromium setup: launching the system Chromium, a page watched
 * for CSP violations, console errors and page errors, the axe-core check, the horizontal-overflow
 * check and screenshots into test-artifacts/.
 *
 * Everything that runs in the page is evaluated as a string through the DevTools protocol: this
 * project's tsconfig has no DOM types, and a script tag would be inline script, which the pages'
 * Content-Security-Policy forbids (and the violation watch would report).
 */
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';

/** The system Chromium (playwright-core downloads no browser). */
export const CHROMIUM = '/usr/bin/chromium';

/** Where screenshots go; created on first import. */
export const ARTIFACTS = join(__dirname, '../../test-artifacts');
mkdirSync(ARTIFACTS, { recursive: true });

/** Starts headless Chromium with no sandbox, GPU, background networking or first-run work. */
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

/** A page in a fresh browser context and what it reported. */
export interface WatchedPage {
  page: Page;
  /** Console errors and warnings (less the ignored ones) and page errors, in order. */
  problems: string[];
  /** Content-Security-Policy violations the page saw, as `directive blockedURI`. */
  cspViolations(): Promise<string[]>;
  /** Closes the page's context. */
  close(): Promise<void>;
}

export interface WatchOptions {
  width?: number;
  height?: number;
  /** Console messages matching this are expected (e.g. a 404 answer the page shows) and not kept. */
  ignoreConsole?: RegExp;
}

/**
 * Opens a page (default viewport 1280 x 800) with the CSP-violation watch installed before any page
 * script runs and its console errors/warnings and page errors collected into `problems`.
 */
export async function openWatchedPage(browser: Browser, opts: WatchOptions = {}): Promise<WatchedPage> {
  const context = await browser.newContext({
    viewport: { width: opts.width ?? 1280, height: opts.height ?? 800 },
  });
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
    if (msg.type() !== 'error' && msg.type() !== 'warning') return;
    if (opts.ignoreConsole?.test(msg.text())) return;
    problems.push(msg.text());
  });
  page.on('pageerror', (err) => problems.push(err.message));
  return {
    page,
    problems,
    cspViolations: async () => (await page.evaluate('window.__csp ?? []')) as string[],
    close: () => context.close(),
  };
}

interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: { html: string }[];
}

/** The most nodes named per violation (a failure message stays readable). */
const NODES_SHOWN = 3;

/**
 * The serious and critical axe-core violations of the page as it is now, one string each: the rule
 * id first, then its impact, help text and the html of the first nodes, so that a failing
 * `expect(await axeSerious(page)).toEqual([])` says what to fix. axe-core is injected once per
 * document.
 */
export async function axeSerious(page: Page): Promise<string[]> {
  if (!(await page.evaluate("typeof axe !== 'undefined'"))) {
    await page.evaluate(readFileSync(require.resolve('axe-core'), 'utf8'));
  }
  const violations = (await page.evaluate(
    "axe.run(document, { resultTypes: ['violations'] }).then((r) => r.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map((n) => ({ html: n.html })) })))",
  )) as AxeViolation[];
  return violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => {
      const nodes = v.nodes.slice(0, NODES_SHOWN).map((n) => n.html);
      const more = v.nodes.length > NODES_SHOWN ? ` (+${v.nodes.length - NODES_SHOWN} more)` : '';
      return `${v.id} [${v.impact}] ${v.help}: ${nodes.join(' | ')}${more}`;
    });
}

/**
 * Sets the viewport to `width` x `height` and returns how far the document is wider than the window
 * (`scrollWidth - innerWidth`): 0 or less means no horizontal overflow.
 */
export async function overflowAt(page: Page, width: number, height = 800): Promise<number> {
  await page.setViewportSize({ width, height });
  return (await page.evaluate('document.documentElement.scrollWidth - window.innerWidth')) as number;
}

/** Saves a screenshot as test-artifacts/<name>.png (the full page unless told) and returns its path. */
export async function screenshot(
  page: Page,
  name: string,
  opts: { fullPage?: boolean } = {},
): Promise<string> {
  const path = join(ARTIFACTS, `${name}.png`);
  await page.screenshot({ path, fullPage: opts.fullPage ?? true });
  return path;
}
