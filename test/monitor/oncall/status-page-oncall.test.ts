/**
 * The status page's "On call" panel (issue 28): in headless Chromium on a started monitor whose
 * StatusSource double reads real Schedules at an instant the test sets (no sleeping on the real
 * clock), each schedule shows who is on call now (until when) and who is next (from when), an
 * override is marked, a schedule with nobody says so, names in right-to-left text, CJK and emoji and
 * a hostile one are shown as text, and a hand-off reaches the open page without a reload (the
 * `oncall` event). On the monitor built from its config, `/status.json` carries the panel's data.
 */
import type { Browser } from 'playwright-core';
import { silentLogger } from '../../../shared/logging/logger';
import {
  onCallSchedulesSchema,
  type OnCallScheduleConfigInput,
} from '../../../services/monitor/oncall/schedules-config';
import { Schedules } from '../../../services/monitor/oncall/schedules';
import type { ScheduleStatus } from '../../../services/monitor/web/status-source';
import type { StatusSnapshotJson } from '../../../services/monitor/web/status-json';
import { startMonitorApp, type RunningMonitorApp } from '../../support/monitor-app';
import { launchChromium, openStatusPage, type OpenStatusPage } from '../web/status-page-driver';
import { StatusSourceDouble } from '../web/status-source-double';

const HOSTILE = '<img src=x onerror="document.title=\'pwned\'">';

const SCHEDULES: OnCallScheduleConfigInput[] = [
  {
    name: 'primary',
    time_zone: 'Europe/Berlin',
    rotation: {
      users: ['عائشة', '李雷', HOSTILE],
      hand_off: '09:00',
      hand_off_day: 'mon',
      start: '2026-01-05',
    },
    overrides: [{ user: '🦊 fox', start: '2026-01-07T18:00:00+01:00', end: '2026-01-08T09:00:00+01:00' }],
  },
  { name: 'nobody', time_zone: 'America/New_York', rotation: { users: [], start: '2026-01-04' } },
];

/** The double with an on-call panel read from real Schedules at the instant the test sets. */
class OnCallSourceDouble extends StatusSourceDouble {
  at = new Date('2026-01-07T20:00:00Z');
  private readonly schedules = new Schedules(onCallSchedulesSchema().parse(SCHEDULES));
  onCall(): readonly ScheduleStatus[] {
    return this.schedules.statuses(this.at);
  }
}

describe('the on-call panel in headless Chromium', () => {
  let svc: RunningMonitorApp;
  let browser: Browser;
  let opened: OpenStatusPage;
  const source = new OnCallSourceDouble();

  beforeAll(async () => {
    svc = await startMonitorApp({ web: { slo_refresh_seconds: 0.1 } }, silentLogger(), {
      statusSource: source,
    });
    browser = await launchChromium();
    opened = await openStatusPage(browser, svc.baseUrl);
  });

  afterAll(async () => {
    await browser?.close();
    await svc?.close();
  });

  /** The page's own rendering of an instant (its locale and zone). */
  const shown = (iso: string) => opened.page.evaluate(`new Date(${JSON.stringify(iso)}).toLocaleString()`);

  it('shows each schedule: who is on call now and until when, who is next and from when, overrides marked', async () => {
    const { page } = opened;
    await page.locator('#oncall-body tr[data-schedule="primary"]').waitFor();
    expect(
      await page
        .locator('#oncall-body tr')
        .evaluateAll((rows) => rows.map((r) => r.getAttribute('data-schedule'))),
    ).toEqual(['primary', 'nobody']);
    const primary = page.locator('#oncall-body tr[data-schedule="primary"]');
    expect(await primary.locator('.now .user').textContent()).toBe('🦊 fox');
    expect(await primary.locator('.now .override').textContent()).toBe('override');
    expect(await primary.locator('.now .until').textContent()).toBe(
      `until ${await shown('2026-01-08T08:00:00.000Z')}`,
    );
    expect(await primary.locator('.next .user').textContent()).toBe('عائشة');
    expect(await primary.locator('.next .user').getAttribute('dir')).toBe('auto');
    expect(await primary.locator('.next .override').count()).toBe(0);
    expect(await primary.locator('.next .from').textContent()).toBe(
      `from ${await shown('2026-01-08T08:00:00.000Z')}`,
    );
    expect(await primary.locator('td').first().textContent()).toContain('Europe/Berlin');

    const nobody = page.locator('#oncall-body tr[data-schedule="nobody"]');
    expect(await nobody.locator('.now').textContent()).toBe('Nobody');
    expect(await nobody.locator('.next').textContent()).toBe('Nobody');
    expect(await page.locator('#oncall-summary').textContent()).toBe('1 with nobody on call');
  });

  it('a hand-off reaches the open page without a reload; a hostile name stays text', async () => {
    const { page } = opened;
    const navigations: string[] = [];
    page.on('framenavigated', (frame) => navigations.push(frame.url()));
    // Monday 12 January 08:00Z: 李雷's turn; the hostile id is next.
    source.at = new Date('2026-01-12T10:00:00Z');
    await page.locator('#oncall-body tr[data-schedule="primary"] .now[data-user="李雷"]').waitFor();
    const primary = page.locator('#oncall-body tr[data-schedule="primary"]');
    expect(await primary.locator('.now .override').count()).toBe(0);
    expect(await primary.locator('.next .user').textContent()).toBe(HOSTILE);
    expect(await page.locator('#oncall img').count()).toBe(0);
    expect(await page.title()).toBe('Status · Monitor');
    expect(navigations).toEqual([]);
  });

  it('the Content-Security-Policy produced no violations and the console stayed clean', async () => {
    expect(await opened.cspViolations()).toEqual([]);
    expect(opened.problems).toEqual([]);
  });
});

describe('the on-call data of /status.json on a monitor built from its config', () => {
  let svc: RunningMonitorApp;

  beforeAll(async () => {
    svc = await startMonitorApp({ oncall: { schedules: SCHEDULES } });
  });
  afterAll(async () => {
    await svc?.close();
  });

  it('lists every schedule with now and next in config order', async () => {
    const before = Date.now();
    const body = (await (await fetch(`${svc.baseUrl}/status.json`)).json()) as StatusSnapshotJson;
    expect(body.oncall.map((s) => [s.schedule, s.time_zone])).toEqual([
      ['primary', 'Europe/Berlin'],
      ['nobody', 'America/New_York'],
    ]);
    const primary = body.oncall[0]!;
    // Now is after the rotation started: someone of the rotation or an override is on call.
    expect(Date.parse(primary.current!.start)).toBeLessThanOrEqual(Date.now());
    expect(Date.parse(primary.current!.end)).toBeGreaterThan(before);
    expect(primary.next!.start).toBe(primary.current!.end);
    expect(body.oncall[1]).toEqual({
      schedule: 'nobody',
      time_zone: 'America/New_York',
      current: null,
      next: null,
    });
  });
});
