/**
 * The console's Activity section in headless Chromium on the real service (memory stores, two Twilio
 * stand-ins): filters narrow the rows, a delivery sent while the page is open appears live and its
 * status changes live, the timeline shows a retry, the failover and the provider receipt; axe-core
 * finds no serious or critical violation; at 1280 px and 390 px the document does not overflow.
 */
import type { Browser, Page } from 'playwright-core';
import { axeSerious, overflowAt, screenshot, type WatchedPage } from '../../../support/browser';
import { FAST_DELIVERY, type RunningNotificationApp } from '../../../support/notification-app';
import { startReceiptStandIns, type ReceiptStandIns } from '../../../support/receipt-stand-ins';
import { sendStatusCallback, twilioError } from '../../channels/sms/twilio-peer';
import { startAdminService, until } from '../harness';
import { openConsoleSection } from './console-browser';

const LIVE = '🔴 ライブ مباشر';

describe('the console Activity section in headless Chromium', () => {
  let standIns: ReceiptStandIns;
  let svc: RunningNotificationApp;
  let browser: Browser;
  let page: Page;
  let watched: WatchedPage;

  const submit = (to: string, category: string, userId = 'user-1') =>
    svc.app.deliveries.submit({
      channel: 'sms',
      recipient: to,
      payload: { to, body: 'code 123456' },
      scope: 'caller-a',
      userId,
      category,
    });

  async function settled(id: string, status: string): Promise<void> {
    for (let i = 0; i < 1000; i++) {
      if ((await svc.app.deliveries.get(id)).status === status) return;
      await new Promise((r) => setTimeout(r, 10));
    }
    throw new Error(`delivery ${id} never became ${status}`);
  }

  beforeAll(async () => {
    standIns = await startReceiptStandIns();
    svc = await startAdminService({
      delivery: { ...FAST_DELIVERY, routing: { email: 'primary', sms: 'fallback', push: 'primary' } },
      webhooks: { public_base_url: 'https://notify.example.com' },
      ...standIns.config,
    });
    for (const [i, category] of ['billing', 'billing', '安全 🔔', 'security'].entries()) {
      await settled((await submit(`+1555020000${i}`, category)).delivery.id, 'sent');
    }
    ({ browser, page, watched } = await openConsoleSection(svc.baseUrl, 'activity'));
  });

  afterAll(async () => {
    await browser?.close();
    await svc?.close();
    await standIns?.close();
  });

  const rows = () => page.locator('#activity-table tbody tr');

  it('lists the deliveries newest first, recipients masked', async () => {
    await rows().nth(3).waitFor();
    expect(await rows().count()).toBe(4);
    expect(await page.locator('#activity-table tbody tr td:nth-child(7)').allTextContents()).toEqual([
      'security',
      '安全 🔔',
      'billing',
      'billing',
    ]);
    expect(await page.locator('#activity-table').textContent()).toContain('+1555****000');
    expect(await page.locator('#activity-table').textContent()).not.toContain('+15550200000');
  });

  it('filters narrow the rows', async () => {
    await page.fill('#activity-category', 'billing');
    await page.click('form.filters button[type=submit]');
    await page.locator('#activity-table tbody tr', { hasText: 'security' }).waitFor({ state: 'detached' });
    expect(await rows().count()).toBe(2);
    await page.fill('#activity-category', '');
    await page.fill('#activity-recipient', '+1 555 020 0002');
    await page.click('form.filters button[type=submit]');
    await page
      .locator('#activity-table tbody tr', { hasText: 'billing' })
      .first()
      .waitFor({ state: 'detached' });
    expect(await page.locator('#activity-table tbody tr td:nth-child(7)').allTextContents()).toEqual([
      '安全 🔔',
    ]);
  });

  it('a delivery sent while the page is open appears live, its status changes live, and its timeline shows retry, failover and receipt', async () => {
    await page.fill('#activity-recipient', '');
    await page.fill('#activity-category', LIVE);
    await page.click('form.filters button[type=submit]');
    await page.locator('.activity-live[data-state="live"]').waitFor();
    await until(() => svc.app.deliveryWatch.watcherCount === 1);
    expect(await rows().count()).toBe(0);

    const a = standIns.twilio['twilio-a'];
    const b = standIns.twilio['twilio-b'];
    a.script.push(twilioError(503, 20500, 'unavailable'));
    const before = b.requests.length;
    const navigations: string[] = [];
    page.on('framenavigated', (frame) => navigations.push(frame.url()));
    const { delivery } = await submit('+15550209999', LIVE, 'مستخدم');
    await submit('+15550208888', 'not this one');
    const row = page.locator(`#activity-table tbody tr[data-id="${delivery.id}"]`);
    await row.locator('.status[data-status="sent"]').waitFor();
    expect(await rows().count()).toBe(1);

    // A provider receipt moves it to delivered: the row changes in place.
    const sid = (await svc.app.deliveries.get(delivery.id)).providerReference!;
    expect(
      (await sendStatusCallback(b.requests[before]!, sid, 'delivered', svc.baseUrl)).status,
    ).toBeLessThan(300);
    await row.locator('.status[data-status="delivered"]').waitFor();
    expect(navigations).toEqual([]);
    expect(await row.locator('td:nth-child(4)').textContent()).toBe('twilio-b');
    expect(await row.locator('td:nth-child(8)').textContent()).toBe('2');

    await row.click();
    await page.locator('#activity-detail .timeline li[data-kind="receipt"]').waitFor();
    expect(page.url()).toContain(`#/activity/delivery/${delivery.id}`);
    expect(
      await page
        .locator('#activity-detail .timeline li')
        .evaluateAll((lis) => lis.map((li) => li.getAttribute('data-kind'))),
    ).toEqual(['submitted', 'attempt', 'failover', 'attempt', 'sent', 'receipt', 'delivered']);
    const text = await page.locator('#activity-detail').textContent();
    expect(text).toContain('Failover from twilio-a to twilio-b');
    expect(text).toContain('retryable');
    expect(text).not.toContain('0209999');
  });

  async function check(width: number): Promise<void> {
    const overflow = await overflowAt(page, width, 800);
    expect({ width, overflow: overflow <= 0 }).toEqual({ width, overflow: true });
    expect({ width, bad: await axeSerious(page) }).toEqual({ width, bad: [] });
  }

  it('no serious or critical axe violation and no overflow at 1280 px and 390 px, timeline and list', async () => {
    for (const width of [1280, 390]) {
      await check(width);
      await screenshot(page, `console-activity-timeline-${width}`);
    }
    await page.evaluate("location.hash = '#/activity'");
    await page.fill('#activity-category', '');
    await page.click('form.filters button[type=submit]');
    await rows().nth(4).waitFor();
    for (const width of [1280, 390]) {
      await check(width);
      await screenshot(page, `console-activity-${width}`);
    }
  });

  it('the Content-Security-Policy produced no violations and the console stayed clean', async () => {
    expect(await watched.cspViolations()).toEqual([]);
    expect(watched.problems).toEqual([]);
  });
});
