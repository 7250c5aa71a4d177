/**
 * On-call escalation through the whole monitor app (issue 28, O2b): a monitor started with an
 * escalation policy and `oncall.paging` pointing at the real notification service (in-process, an
 * SMTP peer and the Twilio stand-in) pages the policy's users when an alert is raised; the status
 * page (headless Chromium) shows the escalation: policy, step, next step time, who was paged by which
 * channels, and who acknowledged and how (an SMS code). Untrusted texts (the alert title, user ids)
 * are shown as text: `<script>`, markup, emoji, CJK and right-to-left arrive verbatim and run nothing.
 */
import { createClient } from '@connectrpc/connect';
import { createConnectTransport } from '@connectrpc/connect-node';
import type { Browser } from 'playwright-core';
import { TemplateChannel, TemplateService } from '../../../shared/gen/svc/notification/v1/templates_pb';
import { UserService } from '../../../shared/gen/svc/notification/v1/users_pb';
import { silentLogger } from '../../../shared/logging/logger';
import { startMonitorApp, type RunningMonitorApp } from '../../support/monitor-app';
import {
  FAST_DELIVERY,
  smtpMailerConfig,
  startNotificationApp,
  type RunningNotificationApp,
} from '../../support/notification-app';
import { startSmtpPeer, type SmtpPeer } from '../../support/smtp-peer';
import { gatewayConfig, startTwilioPeer, type TwilioPeer } from '../../notification/channels/sms/twilio-peer';
import { waitFor } from '../../support/wait';
import { launchChromium, openStatusPage, type OpenStatusPage } from './status-page-driver';
import type { EscalationJson } from '../../../services/monitor/web/status-json';

const ADMIN = 'escalation-admin-token-0123456789';
const PAGER = 'escalation-pager-token-0123456789';
const ODD_USER = '<img src=x onerror="window.__xss=1"> 李 🦊 أمينة';
const TITLE = 'db <script>window.__xss=1</script> 🔥 数据库 قاعدة البيانات';
const ALICE_PHONE = '+34600111222';

describe('escalation in the monitor app and on the status page', () => {
  let smtp: SmtpPeer;
  let twilio: TwilioPeer;
  let notification: RunningNotificationApp;
  let svc: RunningMonitorApp;
  let browser: Browser;
  let opened: OpenStatusPage | undefined;

  beforeAll(async () => {
    smtp = await startSmtpPeer();
    twilio = await startTwilioPeer();
    notification = await startNotificationApp({
      server: {
        api_tokens: [
          { name: 'monitor', token: PAGER, scopes: ['notify:send', 'users:read'] },
          { name: 'admin', token: ADMIN, scopes: ['*'] },
        ],
      },
      mailer: smtpMailerConfig(smtp.port),
      sms_backends: [{ name: 'twilio', sms_gateway: gatewayConfig(twilio) }],
      delivery: FAST_DELIVERY,
      notify: {
        default_locale: 'en',
        categories: [{ name: 'oncall-page', required: true, channels: ['inbox', 'email', 'sms'] }],
      },
    } as never);
    const transport = createConnectTransport({
      baseUrl: notification.baseUrl,
      httpVersion: '1.1',
      interceptors: [
        (next) => (req) => {
          req.header.set('authorization', `Bearer ${ADMIN}`);
          return next(req);
        },
      ],
    });
    const templates = createClient(TemplateService, transport);
    await templates.upsertTemplate({
      category: 'oncall-page',
      channel: TemplateChannel.EMAIL,
      locale: 'en',
      content: { subject: '[{{ data.severity }}] {{ data.title }}', text: '{{ data.ack_url }}' },
    });
    await templates.upsertTemplate({
      category: 'oncall-page',
      channel: TemplateChannel.SMS,
      locale: 'en',
      content: { text: '{{ data.title | truncate: 40 }} {{ data.ack_sms }}' },
    });
    await templates.upsertTemplate({
      category: 'oncall-page',
      channel: TemplateChannel.INBOX,
      locale: 'en',
      content: { title: '{{ data.title }}', body: '{{ data.ack_url }}' },
    });
    const users = createClient(UserService, transport);
    await users.upsertUser({ userId: 'alice', emails: ['alice@example.com'], phones: [ALICE_PHONE] });
    await users.upsertUser({ userId: ODD_USER, emails: ['odd@example.com'] });

    svc = await startMonitorApp(
      {
        server: { api_tokens: [{ name: 'admin', token: ADMIN, scopes: ['*'] }] },
        oncall: {
          escalation_policies: [
            {
              name: 'db-primary',
              match: ['severity="critical"'],
              steps: [
                { targets: [{ user: 'alice' }, { user: ODD_USER }], wait_minutes: 5 },
                { targets: [{ user: 'bob' }], wait_minutes: 10 },
              ],
              repeat: 1,
            },
          ],
          paging: {
            grpc_address: notification.grpcAddress,
            api_token: PAGER,
            public_base_url: 'https://monitor.example.test',
            signing_key: 's'.repeat(40),
            tick_seconds: 1,
          },
        },
      } as never,
      silentLogger(),
    );
    browser = await launchChromium();
  }, 60_000);

  afterAll(async () => {
    await opened?.close();
    await browser?.close();
    await svc?.close();
    await notification?.close();
    await smtp?.stop();
    await twilio?.close();
  });

  async function escalations(
    token = ADMIN,
    base = svc.baseUrl,
  ): Promise<{ status: number; body: { enabled: boolean; escalations: EscalationJson[] } }> {
    const res = await fetch(`${base}/status/escalations.json`, {
      headers: token ? { authorization: `Bearer ${token}` } : {},
    });
    return {
      status: res.status,
      body: (await res.json()) as { enabled: boolean; escalations: EscalationJson[] },
    };
  }

  it('pages the policy users of a raised critical alert through the notification service; a low one is not escalated', async () => {
    const before = { mails: smtp.acceptedCount, texts: twilio.accepted };
    const hub = svc.app.alerts.hub;
    await hub.raise({ kind: 'generic', title: 'minor', severity: 'low', context: { host: 'db-2' } });
    const alert = await hub.raise({
      kind: 'generic',
      title: TITLE,
      message: 'replication lag',
      severity: 'critical',
      context: { host: 'db-1' },
    });
    await svc.app.escalation!.engine.tick();
    await waitFor(
      () => smtp.acceptedCount === before.mails + 2 && twilio.accepted === before.texts + 1,
      'two emails and one SMS',
    );
    expect(
      smtp.received
        .slice(-2)
        .map((m) => m.recipients[0])
        .sort(),
    ).toEqual(['alice@example.com', 'odd@example.com']);
    expect(smtp.received.at(-1)!.parsed.subject).toBe(`[critical] ${TITLE}`);
    expect(twilio.requests.at(-1)!.form.To).toBe(ALICE_PHONE);
    expect(twilio.requests.at(-1)!.form.Body).toMatch(/Reply ACK \d{6}$/);

    const { status, body } = await escalations();
    expect(status).toBe(200);
    expect(body).toMatchObject({ enabled: true });
    expect(body.escalations).toHaveLength(1); // the low alert matches no policy
    const e = body.escalations[0]!;
    expect(e).toMatchObject({
      alert_id: alert.id,
      title: TITLE,
      policy: 'db-primary',
      status: 'active',
      round: 1,
      step: 1,
      steps: 2,
      rounds: 2,
      next: { round: 1, step: 2 },
      acknowledged_by: null,
    });
    expect(Date.parse(e.next_step_at!) - Date.parse(e.step_started_at!)).toBe(5 * 60_000);
    expect(e.pages.map((p) => [p.user_id, p.step, p.error])).toEqual([
      ['alice', 1, null],
      [ODD_USER, 1, null],
    ]);
    expect(e.pages[0]!.channels).toEqual(expect.arrayContaining(['email', 'sms', 'inbox']));
    expect(e.pages[1]!.channels).not.toContain('sms'); // no phone

    // The page's data needs the page's token.
    expect((await escalations('')).status).toBe(401);
  });

  it('shows the escalation on the status page as text, then who acknowledged it and how', async () => {
    opened = await openStatusPage(browser, svc.baseUrl, { token: ADMIN });
    const { page } = opened;
    const item = page.locator('#escalations .escalation').first();
    await item.waitFor();
    expect(await page.locator('#escalations-section').isVisible()).toBe(true);
    expect(await item.locator('.title').textContent()).toBe(TITLE);
    expect(await item.locator('.escalation-where').textContent()).toBe(
      'policy db-primary · active · step 1/2, round 1/2',
    );
    expect(await item.locator('.escalation-next').textContent()).toMatch(/^next: step 2 at /);
    const pages = item.locator('.escalation-page');
    expect(await pages.evaluateAll((lis) => lis.map((li) => li.getAttribute('data-user')))).toEqual([
      'alice',
      ODD_USER,
    ]);
    expect(await pages.nth(1).textContent()).toContain(`step 1: ${ODD_USER} — `);
    // Nothing the texts carried became markup or ran.
    expect(await item.locator('script, img').count()).toBe(0);
    expect(await page.evaluate('window.__xss')).toBeUndefined();

    // Alice answers the SMS: the page shows who and how (masked number).
    const code = /Reply ACK (\d{6})$/.exec(twilio.requests.at(-1)!.form.Body!)![1]!;
    await expect(svc.app.escalation!.acknowledger.acknowledgeByCode(code, ALICE_PHONE)).resolves.toBe(
      'acknowledged',
    );
    await page.reload();
    await page.locator('#escalations .escalation .escalation-ack').waitFor();
    expect(await page.locator('#escalations .escalation .escalation-ack').textContent()).toBe(
      'acknowledged by alice via sms from +3460****222',
    );
    // The next tick stops the escalation (read from the shared store before each step).
    await svc.app.escalation!.engine.tick();
    const e = (await escalations()).body.escalations[0]!;
    expect(e).toMatchObject({ status: 'stopped', reason: 'acknowledged', next_step_at: null, next: null });
    expect(await opened.cspViolations()).toEqual([]);
    expect(opened.problems).toEqual([]);
  });

  it('without escalation policies the data says disabled and the page hides the block, console clean', async () => {
    const plain = await startMonitorApp(
      { server: { api_tokens: [{ name: 'admin', token: ADMIN, scopes: ['*'] }] } } as never,
      silentLogger(),
    );
    try {
      await plain.app.alerts.hub.raise({ kind: 'generic', title: 'x', severity: 'critical', context: {} });
      expect(await escalations(ADMIN, plain.baseUrl)).toEqual({
        status: 200,
        body: { enabled: false, escalations: [] },
      });
      const other = await openStatusPage(browser, plain.baseUrl, { token: ADMIN });
      try {
        // The page asked for the escalations (a resource entry ends when the response has been read).
        await other.page.waitForFunction(() =>
          (
            performance.getEntriesByType('resource') as unknown as Array<{
              name: string;
              responseEnd: number;
            }>
          ).some((e) => e.name.endsWith('/status/escalations.json') && e.responseEnd > 0),
        );
        expect(await other.page.locator('#escalations-section').isHidden()).toBe(true);
        expect(other.problems).toEqual([]);
      } finally {
        await other.close();
      }
    } finally {
      await plain.close();
    }
  });
});
