/**
 * The `notification` alert channel against the real notification service (in-process, its own
 * ports), which mails through a real SMTP peer and texts through a local Twilio-style Messages API:
 * one alert is one email per recipient and one SMS per number; the same alert sent again (a retry)
 * is still one of each; a digest is one email; a wrong token fails the batch without leaking it.
 */
import { Registry } from 'prom-client';
import { AlertTier } from '../../../shared/monitoring/alerts/tiers';
import { captureLogger, FakeClock, FakeTimers } from '../../shared/monitoring/helpers';
import { NoopErrorTracker } from '../../../shared/monitoring/errors/error-tracking';
import type { AlertBatch, AlertRecord } from '../../../shared/monitoring/alerts/channels';
import { AlertDeliveryError } from '../../../shared/monitoring/errors';
import { AlertHub, type AlertRouter } from '../../../services/monitor/alerts/alert-hub';
import { NotificationAlertChannel } from '../../../services/monitor/alerts/channels';
import { NotificationClient } from '../../../services/monitor/notification/notification-client';
import { alertWebhookBodies } from '../../../services/monitor/rpc/alert-wire';
import { createAlertsArea } from '../../../services/monitor/alerts/alerts-area';
import { notificationChannelConfigSchema } from '../../../services/monitor/alerts/config';
import { loadMonitorConfig } from '../../../services/monitor/config';
import {
  FAST_DELIVERY,
  smtpMailerConfig,
  startNotificationApp,
  type RunningNotificationApp,
} from '../../support/notification-app';
import { startSmtpPeer, type SmtpPeer } from '../../support/smtp-peer';
import { gatewayConfig, startTwilioPeer, type TwilioPeer } from '../../notification/channels/sms/twilio-peer';
import { waitFor } from '../../support/wait';

const TOKEN = 'monitor-alerts-token-0123456789';
const RECIPIENTS = ['oncall@example.com', 'lead@example.com'];
const NUMBER = '+15557654321';

/** A hub whose router records what it was given, so a test can hand the same records to a channel. */
class KeepRouter implements AlertRouter {
  readonly records: AlertRecord[] = [];
  async dispatch(record: AlertRecord): Promise<void> {
    this.records.push(record);
  }
  async shutdown(): Promise<void> {}
}

describe('notification alert channel', () => {
  let smtp: SmtpPeer;
  let sms: TwilioPeer;
  let notification: RunningNotificationApp;

  beforeAll(async () => {
    smtp = await startSmtpPeer();
    sms = await startTwilioPeer();
    notification = await startNotificationApp({
      server: { api_tokens: [TOKEN] },
      mailer: smtpMailerConfig(smtp.port, { fromEmail: 'alerts@sender.example.com' }),
      sms_backends: [{ name: 'twilio', sms_gateway: gatewayConfig(sms) }],
      delivery: FAST_DELIVERY,
    });
  });
  afterAll(async () => {
    await notification.close();
    await smtp.close();
    await sms.close();
  });

  function channel(overrides: Record<string, unknown> = {}, logger = captureLogger().logger) {
    const entry = notificationChannelConfigSchema().parse({
      name: 'oncall',
      type: 'notification',
      notification: {
        grpc_address: notification.grpcAddress,
        api_token: TOKEN,
        email_to: RECIPIENTS,
        sms_to: [NUMBER],
        ...overrides,
      },
    });
    return new NotificationAlertChannel(entry, new NotificationClient(entry.notification), {
      logger,
      sleep: async () => undefined,
    });
  }

  async function records(n: number): Promise<AlertRecord[]> {
    const router = new KeepRouter();
    const hub = new AlertHub({
      router,
      recentSize: 10,
      maxWatchers: 1,
      watchBufferSize: 1,
      defaultSource: 'monitor',
    });
    for (let i = 0; i < n; i++)
      await hub.raise({
        kind: 'generic',
        title: `disk full ${i}`,
        message: 'at 99%',
        severity: 'critical',
        context: { tier: 'P0_PAGE', host: 'db-1' },
        sourceService: 'storage',
      });
    return router.records;
  }

  const batch = (alerts: AlertRecord[], reason: AlertBatch['reason'] = 'immediate'): AlertBatch => ({
    tier: AlertTier.P0_PAGE,
    reason,
    alerts,
    dropped: 0,
  });

  it('sends one alert as one email per recipient and one SMS, and a retry of the same alert sends nothing more', async () => {
    const c = channel();
    const before = { mails: smtp.acceptedCount, texts: sms.accepted };
    const [record] = await records(1);
    try {
      await c.send(batch([record!]));
      await waitFor(
        () => smtp.acceptedCount === before.mails + 2 && sms.accepted === before.texts + 1,
        'the messages',
      );
      const mails = smtp.received.slice(-2);
      expect(mails.map((m) => m.recipients)).toEqual(
        expect.arrayContaining([[RECIPIENTS[0]], [RECIPIENTS[1]]]),
      );
      expect(mails[0]!.parsed.subject).toBe('[CRITICAL] disk full 0');
      expect(mails[0]!.parsed.text).toContain(`Alert id: ${record!.id}`);
      expect(mails[0]!.parsed.text).toContain('host: db-1');
      expect(sms.requests.at(-1)!.form).toMatchObject({ To: NUMBER, Body: '[CRITICAL] disk full 0: at 99%' });

      // The same alert again (the dispatcher or an operator retrying): same idempotency keys.
      await c.send(batch([record!]));
      await c.send(batch([record!]));
      // Something new afterwards proves the service has processed everything before it.
      const [other] = await records(1);
      await c.send(batch([other!]));
      await waitFor(() => smtp.acceptedCount === before.mails + 4, 'the next alert');
      expect(smtp.acceptedCount).toBe(before.mails + 4);
      expect(sms.accepted).toBe(before.texts + 2);
    } finally {
      c.close();
    }
  });

  it('sends a digest of several alerts as one email per recipient listing every alert', async () => {
    const c = channel({ sms_to: [] });
    const before = smtp.acceptedCount;
    const three = await records(3);
    try {
      await c.send(batch(three, 'digest'));
      await c.send(batch(three, 'digest')); // retried digest: same key
      await waitFor(() => smtp.acceptedCount === before + 2, 'the digest');
      const mail = smtp.received.at(-1)!;
      expect(mail.parsed.subject).toBe('[monitor] 3 alerts (P0_PAGE, digest)');
      for (const r of three) expect(mail.parsed.text).toContain(`Alert id: ${r.id}`);
    } finally {
      c.close();
    }
    // Nothing else arrives for the repeated digest.
    const [probe] = await records(1);
    const c2 = channel({ sms_to: [], email_to: ['probe@example.com'] });
    try {
      await c2.send(batch([probe!]));
      await waitFor(() => smtp.acceptedCount === before + 3, 'the probe');
      expect(smtp.acceptedCount).toBe(before + 3);
    } finally {
      c2.close();
    }
  });

  it('fails the batch with a wrong token (UNAUTHENTICATED is not retried) and never logs the token', async () => {
    const { logger, lines } = captureLogger();
    const c = channel({ api_token: 'wrong-token-4711', sms_to: [] }, logger);
    const [record] = await records(1);
    try {
      await expect(c.send(batch([record!]))).rejects.toBeInstanceOf(AlertDeliveryError);
    } finally {
      c.close();
    }
    const failures = lines.filter((l) => l.msg === 'alert notification attempt failed');
    expect(failures.map((l) => [l.attempt, l.code])).toEqual([
      [1, 'Unauthenticated'],
      [1, 'Unauthenticated'],
    ]);
    expect(JSON.stringify(lines)).not.toContain('wrong-token-4711');
    expect(JSON.stringify(lines)).not.toContain(RECIPIENTS[0]);
  });

  it('retries an unreachable notification service up to max_attempts, then fails the batch', async () => {
    const { logger, lines } = captureLogger();
    const c = channel(
      { grpc_address: '127.0.0.1:9', sms_to: [], email_to: ['a@example.com'], max_attempts: 3 },
      logger,
    );
    const [record] = await records(1);
    try {
      await expect(c.send(batch([record!]))).rejects.toThrow('1 of 1 messages were not accepted');
    } finally {
      c.close();
    }
    // Connect reports a refused connection as INTERNAL or UNAVAILABLE: both are worth another attempt.
    const failures = lines.filter((l) => l.msg === 'alert notification attempt failed');
    expect(failures.map((l) => l.attempt)).toEqual([1, 2, 3]);
  });

  it('is built from the config by the alerts area: a SendAlert-style raise reaches the inboxes once', async () => {
    const clock = new FakeClock(0, Date.UTC(2026, 0, 5, 10, 0));
    const config = loadMonitorConfig(
      {
        alerts: {
          channels: [
            {
              name: 'oncall',
              type: 'notification',
              min_severity: 'high',
              notification: {
                grpc_address: notification.grpcAddress,
                api_token: TOKEN,
                email_to: ['area@example.com'],
              },
            },
          ],
        },
      },
      { env: {}, file: null },
    );
    const area = createAlertsArea(config.alerts, {
      logger: captureLogger().logger,
      registry: new Registry(),
      tracker: new NoopErrorTracker(),
      serviceName: 'monitor',
      clock,
      timers: new FakeTimers(clock),
      webhookBodies: alertWebhookBodies,
      notifier: (settings) => new NotificationClient(settings),
    });
    const before = smtp.acceptedCount;
    try {
      await area.hub.raise({
        kind: 'generic',
        title: 'ignored',
        severity: 'low',
        context: { tier: 'P0_PAGE' },
      });
      const alert = await area.hub.raise({
        kind: 'generic',
        title: 'area alert',
        severity: 'high',
        context: { tier: 'P0_PAGE' },
      });
      await waitFor(() => smtp.acceptedCount === before + 1, 'the email');
      const mail = smtp.received.at(-1)!;
      expect(mail.recipients).toEqual(['area@example.com']);
      expect(mail.parsed.text).toContain(`Alert id: ${alert.id}`);
    } finally {
      await area.stop();
    }
  });
});
