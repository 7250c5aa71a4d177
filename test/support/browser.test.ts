/**
 * The browser kit itself (test/support/browser.ts) against a tiny page server with a strict CSP: the
 * watch reports a blocked inline script, console errors and page errors (less the ignored ones);
 * axeSerious names the rule and the offending html (at most three nodes, then a count); overflowAt
 * measures the overflow at the width asked; screenshot writes into test-artifacts/.
 */
import { existsSync, statSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser } from 'playwright-core';
import { ARTIFACTS, axeSerious, launchChromium, openWatchedPage, overflowAt, screenshot } from './browser';

const imgs = (n: number): string =>
  Array.from({ length: n }, (_, i) => `<img src="/p.png" data-n="${i}">`).join('');
const page = (body: string): string =>
  `<!doctype html><html lang="en"><head><title>kit</title><link rel="stylesheet" href="/app.css"></head><body><main><h1>Kit 😀 工具 أداة</h1>${body}</main></body></html>`;

const PAGES: Record<string, string> = {
  '/clean': page('<p>fine</p>'),
  '/wide': page('<div class="wide">wide</div>'),
  '/three': page(imgs(3)),
  '/four': page(imgs(4)),
  '/noisy': page(`<script>document.title = 'inline ran'</script><script src="/app.js"></script>`),
};

describe('the browser kit', () => {
  let server: Server;
  let base: string;
  let browser: Browser;

  beforeAll(async () => {
    server = createServer((req, res) => {
      const headers = { 'Content-Security-Policy': "default-src 'self'" };
      if (req.url === '/app.css') {
        res.writeHead(200, { ...headers, 'Content-Type': 'text/css' }).end('.wide { width: 2000px; }');
      } else if (req.url === '/app.js') {
        res
          .writeHead(200, { ...headers, 'Content-Type': 'text/javascript' })
          .end(
            "console.error('boom 💥'); console.warn('expected noise'); setTimeout(() => { throw new Error('kaboom'); });",
          );
      } else if (req.url === '/favicon.ico') {
        res.writeHead(204, headers).end();
      } else if (req.url && PAGES[req.url]) {
        res.writeHead(200, { ...headers, 'Content-Type': 'text/html; charset=utf-8' }).end(PAGES[req.url]);
      } else {
        res.writeHead(404, headers).end();
      }
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    browser = await launchChromium();
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await new Promise((resolve) => server?.close(resolve));
  });

  it('a clean page: no problems, no CSP violation, no serious axe violation, no overflow at 390 px', async () => {
    const w = await openWatchedPage(browser);
    await w.page.goto(`${base}/clean`);
    expect(await axeSerious(w.page)).toEqual([]);
    expect(await overflowAt(w.page, 390)).toBeLessThanOrEqual(0);
    expect(w.page.viewportSize()).toEqual({ width: 390, height: 800 });
    expect(await w.cspViolations()).toEqual([]);
    expect(w.problems).toEqual([]);
    await w.close();
  });

  it('reports the blocked inline script, console errors and page errors, less the ignored ones', async () => {
    const w = await openWatchedPage(browser, { width: 1100, height: 700, ignoreConsole: /^expected/ });
    expect(w.page.viewportSize()).toEqual({ width: 1100, height: 700 });
    const thrown = w.page.waitForEvent('pageerror');
    await w.page.goto(`${base}/noisy`);
    await thrown;
    expect(await w.page.title()).toBe('kit');
    expect((await w.cspViolations()).map((v) => v.split(' ')[0])).toEqual(['script-src-elem']);
    expect(w.problems).toContain('boom 💥');
    expect(w.problems).toContain('kaboom');
    expect(w.problems.filter((p) => p.startsWith('expected'))).toEqual([]);
    await w.close();
  });

  it('measures the overflow at the width asked', async () => {
    const w = await openWatchedPage(browser);
    await w.page.goto(`${base}/wide`);
    const at1280 = await overflowAt(w.page, 1280);
    const at390 = await overflowAt(w.page, 390, 600);
    expect(at1280).toBeGreaterThan(0);
    expect(at390 - at1280).toBe(1280 - 390);
    await w.close();
  });

  it('names the rule and the html of up to three offending nodes, then how many more', async () => {
    const w = await openWatchedPage(browser);
    await w.page.goto(`${base}/three`);
    const three = await axeSerious(w.page);
    expect(three).toHaveLength(1);
    expect(three[0]).toMatch(/^image-alt \[critical\] /);
    expect(three[0]).toContain('<img src="/p.png" data-n="2">');
    expect(three[0]).not.toContain('more)');
    await w.page.goto(`${base}/four`);
    const four = await axeSerious(w.page);
    expect(four[0]).toContain('<img src="/p.png" data-n="2">');
    expect(four[0]).not.toContain('data-n="3"');
    expect(four[0]).toMatch(/ \(\+1 more\)$/);
    // The 404s of the images are console errors the watch kept.
    expect(w.problems.some((p) => /404/.test(p))).toBe(true);
    await w.close();
  });

  it('saves a screenshot into test-artifacts/', async () => {
    const w = await openWatchedPage(browser);
    await w.page.goto(`${base}/clean`);
    const path = await screenshot(w.page, 'browser-kit-clean');
    expect(path.startsWith(ARTIFACTS)).toBe(true);
    expect(existsSync(path) && statSync(path).size > 0).toBe(true);
    await w.close();
  });
});
