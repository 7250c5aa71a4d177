/**
 * The monitor page's SLO burn-down and alerts timeline (issue 29) in headless Chromium on a started
 * monitor: a known event history (recorded through RecordSloSamples on a fixed SLO clock) gives a
 * burn-down with one point per hour of a 2-day period (90 for 30 days), the 0-budget target line and
 * no ideal line (the points are the budget left of the events so far); alerts raised and resolved through the real alert hub give one span each,
 * the open ones reaching "now" (the page's clock set 6 hours on); both widths fit, screenshots kept,
 * axe-core finds no serious or critical violation, no console error and no CSP violation.
 */
import { timestampFromMs } from '@bufbuild/protobuf/wkt';
import type { Browser } from 'playwright-core';
import { silentLogger } from '../../../shared/logging/logger';
import { startMonitorApp, type RunningMonitorApp } from '../../support/monitor-app';
import { ManualClock } from '../../support/manual-clock';
import { axeSerious, overflowAt, screenshot } from '../../support/browser';
import { launchChromium, openStatusPage, type OpenStatusPage } from './status-page-driver';

const HOUR = 3_600_000;
const NOW = Math.floor(Date.now() / 60_000) * 60_000;
const TWO_DAYS = 'checkout 🛒 结账 الدفع';
const THIRTY_DAYS = 'search 30d';
const K = 12;
const BURN = [4, 5, 6];

describe('the SLO burn-down and the alerts timeline in headless Chromium', () => {
  let svc: RunningMonitorApp;
  let browser: Browser;
  let opened: OpenStatusPage;

  beforeAll(async () => {
    svc = await startMonitorApp(
      {
        slo: {
          ratio_objectives: [
            { name: TWO_DAYS, target: 0.99, period: '2d' },
            { name: THIRTY_DAYS, target: 0.99, period: '30d' },
          ],
        },
      },
      silentLogger(),
      { sloClock: new ManualClock(new Date(NOW)) },
    );
    const nowHour = Math.floor(NOW / HOUR) * HOUR;
    for (const slo of [TWO_DAYS, THIRTY_DAYS])
      await svc.monitorConnect.recordSloSamples({
        slo,
        events: Array.from({ length: K }, (_, i) => ({
          ...(BURN.includes(i) ? { good: 0n, bad: 2n } : { good: 100n, bad: 0n }),
          time: timestampFromMs(nowHour - (K - 1 - i) * HOUR),
        })),
      });
    browser = await launchChromium();
    opened = await openStatusPage(browser, svc.baseUrl);
  }, 60_000);

  afterAll(async () => {
    await opened?.close();
    await browser?.close();
    await svc?.close();
  });

  const chart = (name: string) => `tr[data-slo="${name}"] [data-slo-budget] svg[data-chart="burndown"]`;

  it('draws the burn-down: a point per hour of a 2-day period, 90 for 30 days, and the target line (no ideal line)', async () => {
    const { page } = opened;
    await page.waitForSelector(chart(TWO_DAYS));
    await page.waitForSelector(chart(THIRTY_DAYS));
    const budget = page.locator(chart(TWO_DAYS));
    expect(await budget.locator('circle[data-point]').count()).toBe(48);
    expect(await budget.locator('line[data-target="0"]').count()).toBe(1);
    expect(await budget.locator('line[data-ideal]').count()).toBe(0);
    expect(await budget.locator('path.line').count()).toBe(1);
    expect(await page.locator(`${chart(THIRTY_DAYS)} circle[data-point]`).count()).toBe(90);
    // The burn spent the budget: its points are marked, and their titles say the figure.
    const first = 48 - K;
    expect(await budget.locator(`circle[data-point="${first + 3}"].spent`).count()).toBe(0);
    expect(await budget.locator(`circle[data-point="${first + 6}"].spent`).count()).toBe(1);
    expect(await budget.locator(`circle[data-point="${first + 6}"] title`).textContent()).toMatch(
      /: -47\.8 % of the budget left$/,
    );
    // Before any event the budget is whole: those points sit on the top edge, as the line starts.
    const cy = (i: number) => budget.locator(`circle[data-point="${i}"]`).getAttribute('cy');
    expect(await cy(0)).toBe('2.00');
    expect(await cy(first + 6)).not.toBe('2.00');
    // The existing burn-rate-per-window chart stays.
    expect(await page.locator(`tr[data-slo="${TWO_DAYS}"] svg[data-chart="burn"]`).count()).toBe(1);
  });

  it('draws an alert span per alert raised through the hub, the open ones reaching now', async () => {
    const { page } = opened;
    // Six hours on in the page: the spans start at 18/24 of the timeline's width.
    await page.clock.setFixedTime(new Date(Date.now() + 6 * HOUR));
    const hub = svc.app.alerts.hub;
    await hub.raise({ kind: 'generic', title: 'disk full 💾', severity: 'high', context: { host: 'db-1' } });
    const gone = await hub.raise({
      kind: 'generic',
      title: 'منخفض',
      severity: 'low',
      context: { host: 'db-2' },
    });
    await hub.lifecycle.resolve(gone.id, 'ops');
    await hub.raise({ kind: 'generic', title: '磁盘慢', severity: 'high', context: { host: 'db-3' } });
    const spans = page.locator('#alert-timeline svg[data-chart="timeline"] rect[data-point]');
    await page.locator('#alert-timeline svg[data-chart="timeline"] rect.open').nth(1).waitFor();
    await page.locator('#alert-timeline svg[data-chart="timeline"] rect.resolved').waitFor();
    expect(await spans.count()).toBe(3);
    const boxes =
      (await page.evaluate(`[...document.querySelectorAll('#alert-timeline rect[data-point]')].map((r) => ({
      open: r.classList.contains('open'),
      x: Number(r.getAttribute('x')),
      end: Number(r.getAttribute('x')) + Number(r.getAttribute('width')),
    }))`)) as Array<{ open: boolean; x: number; end: number }>;
    expect(boxes.filter((b) => b.open)).toHaveLength(2);
    for (const b of boxes) expect(b.x).toBeGreaterThan(170);
    for (const b of boxes.filter((x) => x.open)) expect(b.end).toBeCloseTo(240, 1);
    const resolved = boxes.find((b) => !b.open)!;
    expect(resolved.end).toBeLessThan(200);
  });

  for (const width of [1280, 390]) {
    it(`fits ${width} px wide with the charts, screenshot kept, no serious axe violation`, async () => {
      const { page } = opened;
      await page.setViewportSize({ width, height: 900 });
      await page.waitForSelector(chart(TWO_DAYS));
      expect(await overflowAt(page, width, 900)).toBeLessThanOrEqual(0);
      await screenshot(page, `monitor-slo-${width}`);
      expect(await axeSerious(page)).toEqual([]);
    });
  }

  it('reported no console error and no CSP violation', async () => {
    expect(opened.problems).toEqual([]);
    expect(await opened.cspViolations()).toEqual([]);
  });
});
