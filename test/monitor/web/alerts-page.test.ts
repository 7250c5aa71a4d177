/**
 * The status page's alert lifecycle in headless Chromium on a started monitor (its real alert hub):
 * alerts grouped by name with their state, acknowledge and resolve from the page, the timeline,
 * silences created and expired from the page; and the auth of those routes: a read-only page token
 * lists but cannot change anything, a server token with `monitor:alerts` can.
 */
import type { Browser } from 'playwright-core';
import { silentLogger } from '../../../shared/logging/logger';
import { startMonitorApp, type RunningMonitorApp } from '../../support/monitor-app';
import { until } from '../../support/wait';
import { launchChromium, openStatusPage, type OpenStatusPage } from './status-page-driver';

const ADMIN = 'alerts-admin-token-0123456789';
const READER = 'alerts-reader-token-0123456789';

describe('alerts and silences on the status page', () => {
  let svc: RunningMonitorApp;
  let browser: Browser;
  let opened: OpenStatusPage;

  beforeAll(async () => {
    svc = await startMonitorApp(
      {
        server: {
          api_tokens: [
            { name: 'admin', token: ADMIN, scopes: ['*'] },
            { name: 'reader', token: READER, scopes: ['monitor:read'] },
          ],
        },
      },
      silentLogger(),
    );
    const hub = svc.app.alerts.hub;
    for (const host of ['db-1', 'db-2'])
      await hub.raise({
        kind: 'generic',
        title: 'disk full',
        message: `${host} at 99% 💾`,
        severity: 'high',
        context: { host },
      });
    await hub.raise({
      kind: 'generic',
      title: 'قاعدة البيانات بطيئة',
      severity: 'low',
      context: { host: 'db-3' },
    });
    browser = await launchChromium();
    opened = await openStatusPage(browser, svc.baseUrl, { token: ADMIN });
  });

  afterAll(async () => {
    await opened?.close();
    await browser?.close();
    await svc?.close();
  });

  const group = (name: string) => opened.page.locator(`#groups .group[data-group="${name}"]`);

  it('lists the alerts grouped by name, with their state', async () => {
    const { page } = opened;
    await group('disk full').locator('.lc-alert').nth(1).waitFor();
    expect(await group('disk full').locator('.lc-alert').count()).toBe(2);
    expect(await group('disk full').locator('.lc-alert .state').allTextContents()).toEqual([
      'triggered',
      'triggered',
    ]);
    expect(await group('قاعدة البيانات بطيئة').locator('.title').textContent()).toBe('قاعدة البيانات بطيئة');
    expect(await page.locator('#groups-summary').textContent()).toBe('3 open');
  });

  it('acknowledges and resolves an alert from the page, and shows its timeline', async () => {
    const { page } = opened;
    await page.fill('#actor', 'ann@example.com');
    const first = group('disk full').locator('.lc-alert').first();
    const id = (await first.getAttribute('data-id'))!;
    const item = page.locator(`.lc-alert[data-id="${id}"]`);
    await item.locator('button.ack').click();
    await page.locator(`.lc-alert[data-id="${id}"][data-state="acknowledged"]`).waitFor();
    // The recent-alerts list and /status.json say so too (they used to keep it "triggered").
    await page.locator(`#alerts li.alert[data-id="${id}"][data-state="acknowledged"]`).waitFor();
    const status = (await (
      await fetch(`${svc.baseUrl}/status.json`, { headers: { authorization: `Bearer ${ADMIN}` } })
    ).json()) as { alerts: { id: string; state: string }[] };
    expect(status.alerts.filter((a) => a.id === id).map((a) => a.state)).toEqual(['acknowledged']);
    await page.locator(`.lc-alert[data-id="${id}"] button.resolve`).click();
    await page.locator(`.lc-alert[data-id="${id}"][data-state="resolved"]`).waitFor();
    const { entry } = await svc.app.alerts.hub.lifecycle.get(id);
    expect(entry).toMatchObject({
      state: 'resolved',
      acknowledgedBy: 'ann@example.com',
      resolvedBy: 'ann@example.com',
    });
    // The resolved notice can land after the resolve, and an update of the alert redraws its row
    // (timeline closed): read until the whole timeline is there, opening it again when redrawn.
    const timeline = page.locator(`.lc-alert[data-id="${id}"] .timeline li`);
    const expected = ['triggered', 'notified', 'acknowledged', 'resolved', 'notified'];
    let kinds: (string | null)[] = [];
    await until(
      async () => {
        if ((await timeline.count()) === 0)
          await page.locator(`.lc-alert[data-id="${id}"] button.show-timeline`).click();
        await timeline
          .nth(expected.length - 1)
          .waitFor({ timeout: 2_000 })
          .catch(() => undefined);
        kinds = await timeline.evaluateAll((lis) => lis.map((li) => li.getAttribute('data-kind')));
        return kinds.length >= expected.length;
      },
      'the whole timeline',
      30_000,
    );
    expect(kinds).toEqual(expected);
  });

  it('creates a silence from the page (the next alert it matches shows as silenced) and expires it', async () => {
    const { page } = opened;
    await page.fill('#silence-matchers', 'host="db-9"');
    await page.fill('#silence-comment', 'disk swap — 交换');
    await page.click('#silence-create');
    const row = page.locator('#silences-body tr[data-state="active"]');
    await row.waitFor();
    expect(await row.locator('.matchers').textContent()).toBe('host="db-9"');
    expect(await row.locator('.comment').textContent()).toBe('disk swap — 交换');
    const silenced = await svc.app.alerts.hub.raise({
      kind: 'generic',
      title: 'disk full',
      severity: 'high',
      context: { host: 'db-9' },
    });
    await page.locator(`.lc-alert[data-id="${silenced.id}"] .state[data-state="silenced"]`).waitFor();
    await row.locator('button.expire').click();
    await page.locator('#silences-body tr[data-state="expired"]').waitFor();
    await page.locator(`.lc-alert[data-id="${silenced.id}"] .state[data-state="triggered"]`).waitFor();
    expect(await opened.cspViolations()).toEqual([]);
    expect(opened.problems).toEqual([]);
  });

  it('a read-only token lists alerts but may not acknowledge (403, shown on the page); nothing changes', async () => {
    const reader = await openStatusPage(browser, svc.baseUrl, { token: READER });
    try {
      const { page } = reader;
      await page.fill('#actor', 'eve');
      const open = page.locator('.lc-alert[data-state="triggered"]').first();
      await open.waitFor();
      const id = (await open.getAttribute('data-id'))!;
      await open.locator('button.ack').click();
      await page.locator('#notice', { hasText: 'Not allowed' }).waitFor();
      expect((await svc.app.alerts.hub.lifecycle.get(id)).entry.state).toBe('triggered');
      const res = await fetch(`${svc.baseUrl}/status/alerts/${id}/resolve`, {
        method: 'POST',
        headers: { authorization: `Bearer ${READER}`, 'content-type': 'application/json' },
        body: JSON.stringify({ by: 'eve' }),
      });
      expect(res.status).toBe(403);
      const anonymous = await fetch(`${svc.baseUrl}/status/alerts.json`);
      expect(anonymous.status).toBe(401);
    } finally {
      await reader.close();
    }
  });
});
