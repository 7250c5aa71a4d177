/**
 * The monitor page's charts (issue 29) in headless Chromium: a seeded probe history gives the right
 * number of uptime cells and latency points, the burn-rate windows have their threshold lines, a
 * recovered last error is shown as past, both widths fit without horizontal overflow (UP on one
 * line), screenshots kept, axe-core finds no serious or critical violation.
 */
import type { Browser } from 'playwright-core';
import { axeSerious, overflowAt, screenshot } from '../../support/browser';
import { silentLogger } from '../../../shared/logging/logger';
import { MemoryTargetHistoryStore } from '../../../services/monitor/targets/history';
import { startMonitorApp, type RunningMonitorApp } from '../../support/monitor-app';
import { launchChromium, openStatusPage, type OpenStatusPage } from './status-page-driver';
import { StatusSourceDouble, slo, target } from './status-source-double';

const NOW = Date.now();
const MIN = 60_000;
const NAME = 'search 🔍 搜索 بحث';
/** Minutes seeded: 3 hours, one probe a minute -> 12 quarter-hours of the 24h bar hold probes. */
const SEEDED_MINUTES = 180;

describe('the monitor page charts in headless Chromium', () => {
  let svc: RunningMonitorApp;
  let browser: Browser;
  let opened: OpenStatusPage;

  beforeAll(async () => {
    const history = new MemoryTargetHistoryStore();
    for (let i = 0; i < SEEDED_MINUTES; i++)
      await history.record(NAME, {
        atMs: NOW - i * MIN,
        ok: i % 30 !== 0,
        latencyMs: 5 + (i % 7),
        ...(i % 30 === 0 ? { error: 'UNAVAILABLE' } : {}),
      });
    const source = new StatusSourceDouble({
      targets: [
        // Up again after one first-probe UNAVAILABLE: the error is past.
        target(NAME, {
          up: true,
          lastProbeAt: new Date(NOW),
          lastLatencyMs: 4,
          consecutiveFailures: 0,
          lastError: 'UNAVAILABLE',
          lastErrorAt: new Date(NOW - 12 * MIN),
        }),
        target('billing', {
          up: false,
          consecutiveFailures: 3,
          lastError: 'HTTP 503',
          lastErrorAt: new Date(NOW),
        }),
      ],
      slos: [
        slo('checkout-availability', {
          kind: 'ratio',
          ratio: {
            target: 0.999,
            period: '30d',
            events: 10_000,
            badEvents: 40,
            rules: [
              {
                name: 'page',
                severity: 'critical',
                burnRate: 14.4,
                longWindowSeconds: 3600,
                shortWindowSeconds: 300,
                longBurnRate: 16,
                shortBurnRate: 20,
                firing: true,
              },
              {
                name: 'ticket',
                severity: 'low',
                burnRate: 1,
                longWindowSeconds: 259_200,
                shortWindowSeconds: 21_600,
                longBurnRate: 0.5,
                shortBurnRate: Number.NaN,
                firing: false,
              },
            ],
          },
        }),
      ],
    });
    // The double's ratio SLO is also configured: the page reads its burn-down (a name no SLO has is 404).
    svc = await startMonitorApp(
      { slo: { ratio_objectives: [{ name: 'checkout-availability', target: 0.999, period: '30d' }] } },
      silentLogger(),
      { statusSource: source, targetHistory: history },
    );
    browser = await launchChromium();
    opened = await openStatusPage(browser, svc.baseUrl);
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await svc?.close();
  });

  const box = (name: string) => `[data-target-charts="${name}"]`;

  it('draws a 24h bar of 96 cells, a 30d bar of 90, and a latency point per quarter-hour with probes', async () => {
    const { page } = opened;
    await page.waitForSelector(`${box(NAME)} [data-range="30d"] svg`);
    const count = (sel: string) => page.locator(sel).count();
    expect(await count(`${box(NAME)} [data-range="24h"] rect[data-point]`)).toBe(96);
    expect(await count(`${box(NAME)} [data-range="30d"] rect[data-point]`)).toBe(90);
    // 180 minutes span 12 or 13 quarter-hours (depending on where now falls in its quarter).
    const withProbes = await count(`${box(NAME)} [data-range="24h"] rect[data-point]:not(.none)`);
    expect([12, 13]).toContain(withProbes);
    expect(await count(`${box(NAME)} [data-range="latency"] circle[data-point]`)).toBe(withProbes);
    expect(await count(`${box(NAME)} [data-range="latency"] path.line`)).toBe(1);
    // Quarter-hours holding a failed probe are not "up"; each cell's title says its time and ratio.
    expect(
      await count(`${box(NAME)} [data-range="24h"] rect.partial, ${box(NAME)} [data-range="24h"] rect.down`),
    ).toBeGreaterThanOrEqual(6);
    const title = await page
      .locator(`${box(NAME)} [data-range="24h"] rect[data-point="95"] title`)
      .textContent();
    expect(title).toMatch(/% up$/);
    // A target without history: 96 empty cells, no line.
    await page.waitForSelector(`${box('billing')} [data-range="24h"] svg`);
    expect(await count(`${box('billing')} [data-range="24h"] rect.none`)).toBe(96);
    expect(await count(`${box('billing')} [data-range="latency"] circle`)).toBe(0);
  });

  it('shows a recovered last error as past, a current one as current', async () => {
    const { page } = opened;
    const past = page.locator(`#targets-body tr[data-target="${NAME}"] td.error`);
    expect(await past.getAttribute('data-recovered')).toBe('true');
    expect(await past.locator('.past-note').textContent()).toBe('last error 12 min ago, recovered');
    const current = page.locator('#targets-body tr[data-target="billing"] td.error');
    expect(await current.getAttribute('data-recovered')).toBeNull();
    expect(await current.textContent()).toBe('HTTP 503');
  });

  it('draws each rule window as a bar with the rule threshold line', async () => {
    const { page } = opened;
    const chart = page.locator('tr[data-slo="checkout-availability"] svg[data-chart="burn"]');
    expect(await chart.locator('rect[data-point]').count()).toBe(4);
    expect(await chart.locator('line[data-threshold]').count()).toBe(2);
    expect(await chart.locator('rect.over').count()).toBe(2);
    expect(await chart.locator('rect[data-point="page:long"] title').textContent()).toContain(
      'fires at 14.4×',
    );
  });

  for (const width of [1280, 390]) {
    it(`fits ${width} px wide: no horizontal overflow, the UP badge on one line, no serious axe violation`, async () => {
      const { page } = opened;
      await page.setViewportSize({ width, height: 900 });
      await page.waitForSelector(`${box(NAME)} [data-range="30d"] svg`);
      expect(await overflowAt(page, width, 900)).toBeLessThanOrEqual(0);
      // Evaluated as a string: this project's tsconfig has no DOM types.
      const badge = (await page.evaluate(`(() => {
        const b = document.querySelector('.state[data-state="up"]');
        const style = getComputedStyle(b);
        return { height: b.getBoundingClientRect().height, line: parseFloat(style.lineHeight) || 20, ws: style.whiteSpace };
      })()`)) as { height: number; line: number; ws: string };
      expect(badge.ws).toBe('nowrap');
      expect(badge.height).toBeLessThan(badge.line * 2);
      await screenshot(page, `monitor-charts-${width}`);
      expect(await axeSerious(page)).toEqual([]);
    });
  }

  it('reported no console error and no CSP violation', async () => {
    expect(opened.problems).toEqual([]);
    expect(await opened.cspViolations()).toEqual([]);
  });
});
