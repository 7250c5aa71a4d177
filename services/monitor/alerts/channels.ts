/**
 * The monitor's `notification` alert channel, which delivers alerts as email and SMS through the
 * notification service (an {@link AlertNotifier}, the client in ../notification/) with idempotency
 * keys derived from the alert ids, so a retried batch is never mailed twice. (The webhook channel's
 * body, the proto `Alert` as JSON, is wire and lives in ../rpc/alert-wire.ts.)
 */
import { createHash } from 'node:crypto';
import { SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { type Logger, silentLogger } from '../../../shared/logging/logger';
import type { AlertBatch, AlertChannel, AlertRecord } from '../../../shared/monitoring/alerts/channels';
import { AlertDeliveryError } from '../../../shared/monitoring/errors';
import type { Alert } from './alert';
import { alertOf } from './alert-hub';
import { type AlertNotifier, AlertNotifierError } from './alert-notifier';
import type { NotificationChannelConfig } from './config';
import { cutText } from '../../../shared/text/cut';
import { Backoff } from '../../../shared/runtime/backoff';

/** Longest subject we write (the notification service allows one RFC 5322 line). */
const SUBJECT_CHARS = 200;
/** Longest SMS we write: two segments, enough for a page. */
const SMS_CHARS = 320;
/** The tracer of the alert channels (the process SDK's, or a no-op without one). */
const tracer = trace.getTracer('svc.monitor.alerts');

function oneLine(text: string, max: number): string {
  const flat = text.replace(/[\r\n\t]+/g, ' ').trim();
  return cutText(flat, max, { unit: 'code_point', ellipsis: '…' });
}

function kindName(kind: Alert['kind']): string {
  return kind === 'generic' ? 'alert' : kind;
}

function firedAt(alert: Alert): string {
  return new Date(alert.firedAt).toISOString();
}

function alertText(alert: Alert, tier: string): string {
  const lines = [
    alert.message || alert.title,
    '',
    `Severity: ${alert.severity}`,
    `Alert: ${alert.alertName} (${kindName(alert.kind)})`,
    `Source: ${alert.sourceService}`,
    `Fired at: ${firedAt(alert)}`,
    `Tier: ${tier}`,
    `Alert id: ${alert.id}`,
  ];
  const context = Object.entries(alert.context);
  if (context.length > 0) lines.push('Context:', ...context.map(([k, v]) => `  ${k}: ${v}`));
  return lines.join('\n');
}

/** What one batch becomes for people: one subject, one text, one short SMS. */
export interface AlertMessage {
  /** Identity of the batch: the alert id, or a hash of the ids of a digest. */
  key: string;
  subject: string;
  text: string;
  sms: string;
}

/** The email and SMS of a batch: a single alert as itself, several (held, digest) as one summary. */
export function alertMessage(batch: AlertBatch): AlertMessage {
  const alerts = batch.alerts.map(alertOf);
  if (alerts.length === 1 && batch.dropped === 0) {
    const a = alerts[0]!;
    return {
      // The record's id, not the alert's: a resolved notification is routed as `<alert id>:resolved`,
      // so its messages are not taken for retries of the firing ones; a record read back from a
      // store (resent after a crash) keeps it, and so its keys.
      key: batch.alerts[0]!.id || a.id || digestKey(batch.alerts),
      subject: oneLine(`[${a.severity.toUpperCase()}] ${a.title}`, SUBJECT_CHARS),
      text: alertText(a, batch.tier),
      sms: oneLine(`[${a.severity.toUpperCase()}] ${a.title}: ${a.message}`, SMS_CHARS),
    };
  }
  const head = `${alerts.length} alerts (${batch.tier}, ${batch.reason.replace(/_/g, ' ')})`;
  const dropped =
    batch.dropped > 0 ? [`${batch.dropped} older alerts were dropped because the buffer was full.`, ''] : [];
  return {
    key: digestKey(batch.alerts),
    subject: oneLine(`[monitor] ${head}`, SUBJECT_CHARS),
    text: [
      ...dropped,
      ...alerts.map((a) => alertText(a, batch.tier)).flatMap((t) => [t, '', '---', '']),
    ].join('\n'),
    sms: oneLine(`${head}: ${alerts.map((a) => `[${a.severity}] ${a.title}`).join('; ')}`, SMS_CHARS),
  };
}

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/** A batch's identity from its alerts (ids, else content and time), the same for the same batch. */
function digestKey(records: readonly AlertRecord[]): string {
  const parts = records.map((r) => r.id ?? `${r.raisedAt}|${r.title}|${r.message}|${r.severity}`);
  return `d-${sha256(parts.join('\n')).slice(0, 40)}`;
}

/**
 * The idempotency key of one message: the batch's key (the alert id), the medium and the recipient
 * (hashed, so a key stays short and holds no address). The same alert to the same person is the
 * same key, so the notification service sends it once however often we retry.
 */
export function alertIdempotencyKey(batchKey: string, medium: 'email' | 'sms', recipient: string): string {
  return `monitor-alert:${batchKey}:${medium}:${sha256(recipient.toLowerCase()).slice(0, 16)}`;
}

/** The wait between attempts of one message: 200 ms doubled per attempt, at most 5 s. */
const ATTEMPT_BACKOFF = new Backoff({ baseMs: 200, maxMs: 5000 });

/** Options of NotificationAlertChannel beyond its config entry. */
export interface NotificationAlertChannelOptions {
  logger?: Logger;
  /** Wait between attempts (tests inject one); default 200 ms doubled per attempt. */
  sleep?: (attempt: number) => Promise<void>;
}

/**
 * Sends each batch to the configured recipients through the notification service (the
 * {@link AlertNotifier} it is given): one email per email recipient, one SMS per number, each with
 * its idempotency key. A call that fails with a transient code is retried with the same key; the
 * batch fails (AlertDeliveryError, logged by the dispatcher) when a recipient could not be reached.
 * Logs name the channel and counts, never the token or an address.
 */
export class NotificationAlertChannel implements AlertChannel {
  readonly name: string;
  private readonly logger: Logger;
  private readonly sleep: (attempt: number) => Promise<void>;

  constructor(
    private readonly entry: NotificationChannelConfig,
    private readonly notifier: AlertNotifier,
    options: NotificationAlertChannelOptions = {},
  ) {
    this.name = entry.name;
    this.logger = options.logger ?? silentLogger();
    this.sleep = options.sleep ?? ((attempt) => ATTEMPT_BACKOFF.sleep(attempt + 1));
  }

  /**
   * Sends inside a CLIENT span "send alert notification" (a child of the caller's span, if any) whose
   * context the notifier sends along as `traceparent`: Connect's transport is not seen by the gRPC instrumentation,
   * so without this the notification service's SendEmail would start a trace of its own and the
   * alert could not be followed from the monitor to the mail relay (issue 15, the pair e2e test).
   * No-op without an OpenTelemetry SDK in the process.
   */
  send(batch: AlertBatch): Promise<void> {
    if (batch.alerts.length === 0) return Promise.resolve();
    return tracer.startActiveSpan(
      'send alert notification',
      {
        kind: SpanKind.CLIENT,
        attributes: { 'monitor.alert_channel': this.name, 'monitor.alerts': batch.alerts.length },
      },
      async (span) => {
        try {
          await this.sendTraced(batch);
        } catch (err) {
          span.setStatus({ code: SpanStatusCode.ERROR, message: (err as Error).message });
          throw err;
        } finally {
          span.end();
        }
      },
    );
  }

  private async sendTraced(batch: AlertBatch): Promise<void> {
    const n = this.entry.notification;
    const message = alertMessage(batch);
    const calls: Array<Promise<boolean>> = [];
    for (const to of n.email_to) {
      calls.push(
        this.attempt('email', () =>
          this.notifier.sendEmail({
            to,
            subject: message.subject,
            text: message.text,
            backend: n.email_backend,
            idempotencyKey: alertIdempotencyKey(message.key, 'email', to),
          }),
        ),
      );
    }
    for (const to of n.sms_to) {
      calls.push(
        this.attempt('sms', () =>
          this.notifier.sendSms({
            to,
            body: message.sms,
            backend: n.sms_backend,
            idempotencyKey: alertIdempotencyKey(message.key, 'sms', to),
          }),
        ),
      );
    }
    const results = await Promise.all(calls);
    const failed = results.filter((ok) => !ok).length;
    if (failed > 0)
      throw new AlertDeliveryError(
        `alert channel ${this.name}: ${failed} of ${results.length} messages were not accepted`,
      );
  }

  /** One message with retries; true once the notification service accepted it. */
  private async attempt(medium: 'email' | 'sms', call: () => Promise<unknown>): Promise<boolean> {
    const max = this.entry.notification.max_attempts;
    for (let attempt = 0; attempt < max; attempt++) {
      if (attempt > 0) await this.sleep(attempt - 1);
      try {
        await call();
        return true;
      } catch (err) {
        // A notifier reports what went wrong as an AlertNotifierError; anything else is unknown,
        // and worth another attempt like any unknown failure.
        const failure =
          err instanceof AlertNotifierError
            ? err
            : new AlertNotifierError('notifier failed', 'Unknown', true);
        // Only the code: the message of a peer is not ours to log, and may echo what we sent.
        this.logger.warn(
          { channel: this.name, medium, attempt: attempt + 1, code: failure.code },
          'alert notification attempt failed',
        );
        if (!failure.retryable) return false;
      }
    }
    return false;
  }

  /** Closes the connection to the notification service. */
  close(): void {
    this.notifier.close();
  }
}
