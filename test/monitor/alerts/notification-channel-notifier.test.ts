/**
 * The `notification` alert channel speaks to the notification service only through its domain
 * interface, AlertNotifier: these tests hand it a notifier that records the calls and answers as
 * told, and check what the channel asks for (one email per address, one SMS per number, each with
 * its idempotency key), which failures it retries with the same key, and that it closes the notifier.
 */
import type { AlertBatch, AlertRecord } from '../../../shared/monitoring/alerts/channels';
import { AlertTier } from '../../../shared/monitoring/alerts/tiers';
import { AlertDeliveryError } from '../../../shared/monitoring/errors';
import {
  type AlertEmail,
  type AlertNotifier,
  AlertNotifierError,
  type AlertSms,
} from '../../../services/monitor/alerts/alert-notifier';
import { NotificationAlertChannel, alertIdempotencyKey } from '../../../services/monitor/alerts/channels';
import { notificationChannelConfigSchema } from '../../../services/monitor/alerts/config';
import { captureLogger } from '../../shared/monitoring/helpers';

/** Records every call; fails the first `failures` calls with the given error. */
class RecordingNotifier implements AlertNotifier {
  readonly emails: AlertEmail[] = [];
  readonly texts: AlertSms[] = [];
  closed = 0;
  constructor(private failures: Array<Error> = []) {}
  async sendEmail(email: AlertEmail): Promise<void> {
    this.emails.push(email);
    const failure = this.failures.shift();
    if (failure) throw failure;
  }
  async sendSms(sms: AlertSms): Promise<void> {
    this.texts.push(sms);
    const failure = this.failures.shift();
    if (failure) throw failure;
  }
  close(): void {
    this.closed++;
  }
}

const entry = (notification: Record<string, unknown>) =>
  notificationChannelConfigSchema().parse({
    name: 'oncall',
    type: 'notification',
    notification: { grpc_address: '127.0.0.1:9', ...notification },
  });

const record: AlertRecord = {
  id: 'a1b2c3d4-0000-4000-8000-000000000001',
  kind: 'alert',
  title: 'Disk full 💾',
  message: 'at 99%',
  severity: 'critical',
  context: { host: 'db-1' },
  tier: AlertTier.P0_PAGE,
  raisedAt: Date.UTC(2026, 10, 26, 12, 0),
  sourceService: 'storage',
};
const batch: AlertBatch = { tier: AlertTier.P0_PAGE, reason: 'immediate', alerts: [record], dropped: 0 };

describe('NotificationAlertChannel through an AlertNotifier', () => {
  it("keys a resolved notification's messages by its record id (not the firing alert's), also when the record was read back from a store", async () => {
    const notifier = new RecordingNotifier();
    const channel = new NotificationAlertChannel(entry({ email_to: ['a@example.com'] }), notifier);
    const resolved: AlertRecord = {
      ...record,
      id: `${record.id}:resolved`,
      context: { ...record.context, alert_state: 'resolved' },
    };
    await channel.send(batch);
    await channel.send({ ...batch, alerts: [resolved] });
    // Resent after a crash: the record as the outbox kept it (JSON), the same keys.
    await channel.send({ ...batch, alerts: [JSON.parse(JSON.stringify(resolved)) as AlertRecord] });
    expect(notifier.emails.map((e) => e.idempotencyKey)).toEqual([
      alertIdempotencyKey(record.id!, 'email', 'a@example.com'),
      alertIdempotencyKey(`${record.id}:resolved`, 'email', 'a@example.com'),
      alertIdempotencyKey(`${record.id}:resolved`, 'email', 'a@example.com'),
    ]);
  });

  it('asks for one email per address and one SMS per number, each with its idempotency key and backend', async () => {
    const notifier = new RecordingNotifier();
    const channel = new NotificationAlertChannel(
      entry({
        email_to: ['a@example.com', 'b@example.com'],
        sms_to: ['+15557654321'],
        sms_backend: 'twilio',
      }),
      notifier,
    );
    await channel.send(batch);
    expect(notifier.emails).toEqual([
      expect.objectContaining({
        to: 'a@example.com',
        subject: '[CRITICAL] Disk full 💾',
        backend: undefined,
        idempotencyKey: alertIdempotencyKey(record.id!, 'email', 'a@example.com'),
      }),
      expect.objectContaining({
        to: 'b@example.com',
        idempotencyKey: alertIdempotencyKey(record.id!, 'email', 'b@example.com'),
      }),
    ]);
    expect(notifier.emails[0]!.text).toContain(`Alert id: ${record.id}`);
    expect(notifier.texts).toEqual([
      {
        to: '+15557654321',
        body: '[CRITICAL] Disk full 💾: at 99%',
        backend: 'twilio',
        idempotencyKey: alertIdempotencyKey(record.id!, 'sms', '+15557654321'),
      },
    ]);
  });

  it('retries a retryable failure with the same key, and logs only the code', async () => {
    const { logger, lines } = captureLogger();
    const notifier = new RecordingNotifier([new AlertNotifierError('down', 'Unavailable', true)]);
    const channel = new NotificationAlertChannel(entry({ email_to: ['a@example.com'] }), notifier, {
      logger,
      sleep: async () => undefined,
    });
    await channel.send(batch);
    expect(notifier.emails).toHaveLength(2);
    expect(notifier.emails[1]!.idempotencyKey).toBe(notifier.emails[0]!.idempotencyKey);
    const failures = lines.filter((l) => l.msg === 'alert notification attempt failed');
    expect(failures.map((l) => [l.attempt, l.code])).toEqual([[1, 'Unavailable']]);
    expect(JSON.stringify(lines)).not.toContain('a@example.com');
  });

  it('does not retry a failure that is not retryable, and fails the batch', async () => {
    const notifier = new RecordingNotifier([new AlertNotifierError('no', 'PermissionDenied', false)]);
    const channel = new NotificationAlertChannel(entry({ email_to: ['a@example.com'] }), notifier, {
      sleep: async () => undefined,
    });
    await expect(channel.send(batch)).rejects.toBeInstanceOf(AlertDeliveryError);
    expect(notifier.emails).toHaveLength(1);
  });

  it('closes the notifier when it is closed', () => {
    const notifier = new RecordingNotifier();
    new NotificationAlertChannel(entry({ email_to: ['a@example.com'] }), notifier).close();
    expect(notifier.closed).toBe(1);
  });
});
