/**
 * Silence reminders through the alerts area as app.ts builds it: a creator who is an email address
 * gets the reminder as an email through the `notification` channel's notifier (its idempotency key
 * names the silence and the reminder), a creator who is a name gets a log line that never carries an
 * address; the lifecycle ticker runs on the area's timers.
 */
import { Registry } from 'prom-client';
import { NoopErrorTracker } from '../../../shared/monitoring/errors/error-tracking';
import { createAlertsArea, type AlertsArea } from '../../../services/monitor/alerts/alerts-area';
import type { AlertEmail, AlertNotifier } from '../../../services/monitor/alerts/alert-notifier';
import { loadMonitorConfig } from '../../../services/monitor/config';
import { alertWebhookBodies } from '../../../services/monitor/rpc/alert-wire';
import { FakeClock, FakeTimers, captureLogger, settle } from '../../shared/monitoring/helpers';

const MIN = 60_000;

describe('silence reminders', () => {
  let area: AlertsArea;
  let clock: FakeClock;
  let timers: FakeTimers;
  const emails: AlertEmail[] = [];
  const captured = captureLogger();

  beforeEach(() => {
    emails.length = 0;
    clock = new FakeClock(0, Date.UTC(2026, 10, 30, 12, 0));
    timers = new FakeTimers(clock);
    const config = loadMonitorConfig(
      {
        alerts: {
          silences: { reminder_lead_seconds: '30m', long_hidden_seconds: '1h' },
          channels: [
            {
              name: 'ops',
              type: 'notification',
              notification: { grpc_address: '127.0.0.1:1', email_to: ['ops@example.com'] },
            },
          ],
        },
      },
      { env: {}, file: null },
    );
    const notifier: AlertNotifier = {
      sendEmail: async (email) => void emails.push(email),
      sendSms: async () => undefined,
      close: () => undefined,
    };
    area = createAlertsArea(config.alerts, {
      logger: captured.logger,
      registry: new Registry(),
      tracker: new NoopErrorTracker(),
      serviceName: 'monitor',
      clock,
      timers,
      webhookBodies: alertWebhookBodies,
      notifier: () => notifier,
    });
    area.ticker.start?.();
  });

  afterEach(async () => {
    area.ticker.stop?.();
    await area.stop();
  });

  it('emails a creator who is an address, once per reminder, with a key naming the silence', async () => {
    const lc = area.hub.lifecycle;
    const s = await lc.createSilence({
      matchers: [{ name: 'host', op: '=', value: 'db-1' }],
      startsAt: 0,
      endsAt: clock.now() + 45 * MIN,
      createdBy: 'ann@example.com',
      comment: 'disk swap',
    });
    clock.advance(16 * MIN);
    timers.advance(1000);
    await settle();
    timers.advance(1000);
    await settle();
    expect(emails).toHaveLength(1);
    expect(emails[0]).toMatchObject({
      to: 'ann@example.com',
      idempotencyKey: `monitor-silence-reminder:${s.id}:expiring`,
      subject: expect.stringContaining(s.id),
    });
  });

  it('logs the reminder of a creator who is a name, without any address', async () => {
    const lc = area.hub.lifecycle;
    const s = await lc.createSilence({
      matchers: [{ name: 'host', op: '=', value: 'db-2' }],
      startsAt: 0,
      endsAt: clock.now() + 10 * MIN,
      createdBy: 'Ann on call',
      comment: '',
    });
    timers.advance(1000);
    await settle();
    expect(emails).toHaveLength(0);
    const line = captured.lines.find((l) => l.event === 'silence_reminder');
    expect(line).toMatchObject({ reminder: `${s.id}:expiring` });
    expect(JSON.stringify(captured.lines)).not.toContain('@example.com');
  });
});
