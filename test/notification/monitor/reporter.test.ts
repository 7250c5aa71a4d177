/**
 * The notification service reports to the monitor: delivery latency samples, SLO declarations and
 * captured exceptions reach a stand-in MonitorService (a real grpc-js server) from the real app,
 * sending emails into a real SMTP peer; with the monitor down sends still succeed and drops are
 * counted; the buffer holds at its bound; the bearer token arrives and is never logged.
 */
import { create } from '@bufbuild/protobuf';
import { Registry } from 'prom-client';
import { SloSchema } from '../../../shared/gen/svc/monitor/v1/monitor_pb';
import { MonitorReporterConfigSchema } from '../../../services/notification/monitor/config';
import {
  MAX_SAMPLES_PER_CALL,
  MonitorClient,
  MonitorReporter,
  deliveryLatencyMetric,
  errorType,
  scrubText,
  stackFrames,
} from '../../../services/notification/monitor';
import { ExceptionCapture } from '../../../services/monitor/alerts/exception-capture';
import { NoopErrorTracker } from '../../../shared/monitoring/errors/error-tracking';
import type { DeliveryOutcome } from '../../../services/notification/delivery';
import { FAST_DELIVERY, smtpMailerConfig } from '../../support/notification-app';
import { createTestDatabase } from '../../support/database';
import { reservePort, startSmtpPeer, type SmtpPeer } from '../../support/smtp-peer';
import { waitFor } from '../../support/wait';
import { createStandInMonitor, startStandInMonitor, type StandInMonitor } from './stand-in-monitor';
import { startReportingApp, type ReportingApp } from './support';

const TOKEN = 'monitor-token-5f1c2d3e4a5b6c7d';
const EMAIL_METRIC = 'notification_delivery_latency_email_ms';
/** The README's example: email delivery p99 under 30 s over 1 h. */
const EMAIL_SLO = {
  name: 'notification-email-delivery-p99',
  metric: EMAIL_METRIC,
  percentile: 0.99,
  threshold_ms: 30_000,
  window: '1h',
  tier: 'P1_BUSINESS_HOURS',
  description: 'email delivery p99 under 30 s over 1 h',
  owner: 'notifications',
  runbook_url: 'https://runbooks.example.com/email-latency',
};
const SMS_SLO = {
  name: 'notification-sms-delivery-p95',
  metric: 'notification_delivery_latency_sms_ms',
  threshold_ms: 10_000,
  percentile: 0.95,
};
const DROPPED_SEND_FAILED =
  'notification_monitor_reports_dropped_total{kind="latency_sample",reason="send_failed"}';

let peer: SmtpPeer;
const open: { close(): Promise<void> }[] = [];
const monitors: StandInMonitor[] = [];

beforeAll(async () => {
  peer = await startSmtpPeer();
});
afterEach(async () => {
  for (const o of open.splice(0)) await o.close();
  for (const m of monitors.splice(0)) await m.stop();
});
afterAll(async () => {
  await peer.close();
});

async function reportingApp(
  monitor: Record<string, unknown>,
  extra: Record<string, unknown> = {},
): Promise<ReportingApp> {
  const app = await startReportingApp({
    mailer: smtpMailerConfig(peer.port),
    delivery: FAST_DELIVERY,
    monitor,
    ...extra,
  });
  open.push(app);
  return app;
}

/** Polls `/metrics` until `series` has `value` (a deadline against hangs, not a timing assertion). */
async function metricReaches(n: ReportingApp, series: string, value: number): Promise<void> {
  const deadline = Date.now() + 15_000;
  let last = await n.metric(series);
  while (last !== value && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 20));
    last = await n.metric(series);
  }
  expect(last).toBe(value);
}

function outcome(extra: Partial<DeliveryOutcome> = {}): DeliveryOutcome {
  const acceptedAt = new Date('2026-11-23T10:00:00Z');
  return {
    deliveryId: '00000000-0000-4000-8000-000000000001',
    channel: 'email',
    backend: 'relay',
    status: 'sent',
    failure: null,
    attempts: 1,
    acceptedAt,
    finishedAt: new Date(acceptedAt.getTime() + 250),
    latencyMs: 250,
    ...extra,
  };
}

describe('reporting to a monitor that is up', () => {
  it('an email sent through the service becomes a latency sample of its channel metric, acceptance to SENT', async () => {
    const monitor = await startStandInMonitor();
    monitors.push(monitor);
    const n = await reportingApp({ grpc_address: monitor.address, api_token: TOKEN, flush_interval_ms: 20 });
    const before = peer.acceptedCount;

    const { deliveryId } = await n.sendEmail();
    await peer.whenAccepted(before + 1);
    await waitFor(() => (monitor.samples.get(EMAIL_METRIC)?.length ?? 0) === 1, 'the latency sample');

    const record = await n.app.deliveries.get(deliveryId);
    expect(record.status).toBe('sent');
    expect(monitor.samples.get(EMAIL_METRIC)).toEqual([
      record.sentAt!.getTime() - record.createdAt.getTime(),
    ]);
    expect([...monitor.samples.keys()]).toEqual([EMAIL_METRIC]);
    expect(await n.metric('notification_monitor_reports_sent_total{kind="latency_sample"}')).toBe(1);
  });

  it('SLOs of the config are registered at start with the monitor fields, and the bearer token arrives on every call but never in a log line', async () => {
    const monitor = await startStandInMonitor();
    monitors.push(monitor);
    const n = await reportingApp({
      grpc_address: monitor.address,
      api_token: TOKEN,
      flush_interval_ms: 20,
      slos: [EMAIL_SLO, SMS_SLO],
    });
    await waitFor(() => monitor.slos.size === 2, 'both SLOs registered');
    const email = monitor.slos.get(EMAIL_SLO.name)!;
    expect(email).toMatchObject({
      metric: EMAIL_METRIC,
      percentile: 0.99,
      thresholdMs: 30_000,
      tier: 'P1_BUSINESS_HOURS',
      burnRateThreshold: 1,
      description: EMAIL_SLO.description,
      owner: 'notifications',
      runbookUrl: EMAIL_SLO.runbook_url,
    });
    expect(Number(email.window!.seconds)).toBe(3600);
    expect(monitor.slos.get(SMS_SLO.name)).toMatchObject({ percentile: 0.95, thresholdMs: 10_000 });

    await n.sendEmail();
    await waitFor(() => (monitor.samples.get(EMAIL_METRIC)?.length ?? 0) === 1, 'the latency sample');
    await n.close();
    open.splice(open.indexOf(n), 1);

    expect(monitor.authorizations.length).toBeGreaterThanOrEqual(3);
    expect(new Set(monitor.authorizations)).toEqual(new Set([`Bearer ${TOKEN}`]));
    // Registered once each: a registered SLO is not registered again on later flushes.
    expect(monitor.duplicateRegistrations).toEqual([]);
    expect(n.logs.some((l) => l.includes('reporting to the monitor'))).toBe(true);
    expect(n.logs.filter((l) => l.includes(TOKEN))).toEqual([]);
  });

  it('what is buffered when the service stops is flushed at stop', async () => {
    const monitor = await startStandInMonitor();
    monitors.push(monitor);
    // No flush before stop: the interval is far longer than the test.
    const n = await reportingApp({ grpc_address: monitor.address, flush_interval_ms: 600_000 });
    const { deliveryId } = await n.sendEmail();
    await waitFor(() => n.app.deliveries.worker.activeAttempts === 0, 'the attempt recorded');
    await n.app.deliveries.get(deliveryId).then((d) => expect(d.status).toBe('sent'));
    expect(monitor.samples.get(EMAIL_METRIC)).toBeUndefined();

    await n.close();
    open.splice(open.indexOf(n), 1);
    expect(monitor.samples.get(EMAIL_METRIC)).toHaveLength(1);
  });
});

describe('reporting to a monitor that is down', () => {
  it('emails are still sent, and the samples that could not be reported are counted as dropped', async () => {
    const monitor = createStandInMonitor(await reservePort()); // never started
    const n = await reportingApp({
      grpc_address: `127.0.0.1:${monitor.port}`,
      flush_interval_ms: 20,
      timeout_ms: 500,
    });
    const before = peer.acceptedCount;

    const sent = await Promise.all([n.sendEmail(), n.sendEmail(), n.sendEmail()]);
    await peer.whenAccepted(before + 3);
    await waitFor(() => n.app.deliveries.worker.activeAttempts === 0, 'the attempts recorded');
    for (const { deliveryId } of sent) expect((await n.app.deliveries.get(deliveryId)).status).toBe('sent');

    await metricReaches(n, DROPPED_SEND_FAILED, 3);
    expect(await n.metric('notification_monitor_reports_sent_total{kind="latency_sample"}')).toBe(0);
  });

  it('a monitor that never answers holds neither sends nor the shutdown: each call ends at timeout_ms and its samples are dropped', async () => {
    const monitor = await startStandInMonitor();
    monitors.push(monitor);
    monitor.hang = true;
    const n = await reportingApp({ grpc_address: monitor.address, flush_interval_ms: 20, timeout_ms: 300 });
    const before = peer.acceptedCount;

    const sent = await Promise.all([n.sendEmail(), n.sendEmail()]);
    await peer.whenAccepted(before + 2);
    await waitFor(() => n.app.deliveries.worker.activeAttempts === 0, 'the attempts recorded');
    for (const { deliveryId } of sent) expect((await n.app.deliveries.get(deliveryId)).status).toBe('sent');
    await metricReaches(n, DROPPED_SEND_FAILED, 2);
    expect(monitor.sampleCalls).toBe(0);

    // A third sample is buffered when the service stops: the final flush gives up at timeout_ms.
    await n.sendEmail();
    await peer.whenAccepted(before + 3);
    await waitFor(() => n.app.deliveries.worker.activeAttempts === 0, 'the attempt recorded');
    await n.close();
    open.splice(open.indexOf(n), 1);
    expect(monitor.sampleCalls).toBe(0);
    // Every sample is accounted for as dropped (the last one at the latest when its call's deadline ends).
    const dropped = async () =>
      (await n.app.registry.getSingleMetric('notification_monitor_reports_dropped_total')!.get()).values
        .filter((v) => v.labels.kind === 'latency_sample')
        .reduce((sum, v) => sum + v.value, 0);
    const deadline = Date.now() + 15_000;
    while ((await dropped()) < 3 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    expect(await dropped()).toBe(3);
  });

  it('SLOs are registered once the monitor starts after the service; one it already has (ALREADY_EXISTS) counts as registered', async () => {
    const monitor = createStandInMonitor(await reservePort());
    monitors.push(monitor);
    const n = await reportingApp({
      grpc_address: `127.0.0.1:${monitor.port}`,
      flush_interval_ms: 20,
      timeout_ms: 500,
      slos: [EMAIL_SLO, SMS_SLO],
    });
    // Nothing is registered while the monitor is down.
    expect(await n.metric('notification_monitor_unregistered_slos')).toBe(2);
    // Another replica registered the email SLO meanwhile.
    monitor.slos.set(EMAIL_SLO.name, create(SloSchema, { name: EMAIL_SLO.name, metric: EMAIL_METRIC }));
    await monitor.start();

    await waitFor(() => monitor.slos.has(SMS_SLO.name), 'the SMS SLO registered', 15_000);
    await metricReaches(n, 'notification_monitor_unregistered_slos', 0);
    // Tried once against the running monitor, answered ALREADY_EXISTS, not retried after that.
    expect(monitor.duplicateRegistrations).toEqual([EMAIL_SLO.name]);
  });
});

describe('a monitor that forgot our SLOs (it keeps them in memory and restarted)', () => {
  it("registers them again when it keeps none of their metric's samples", async () => {
    const monitor = await startStandInMonitor();
    monitors.push(monitor);
    const n = await reportingApp({ grpc_address: monitor.address, flush_interval_ms: 20, slos: [EMAIL_SLO] });
    await waitFor(() => monitor.slos.has(EMAIL_SLO.name), 'the email SLO registered');
    // The monitor restarts: its SLOs are gone.
    monitor.slos.clear();

    const before = peer.acceptedCount;
    await n.sendEmail();
    await peer.whenAccepted(before + 1);
    // The sample is answered "0 kept", so the SLO is declared again.
    await waitFor(() => monitor.slos.has(EMAIL_SLO.name), 'the email SLO registered again', 15_000);
    await metricReaches(n, 'notification_monitor_unregistered_slos', 0);
  });
});

describe('MonitorReporter buffer', () => {
  let monitor: StandInMonitor;
  beforeEach(async () => {
    monitor = await startStandInMonitor();
    monitors.push(monitor);
  });

  function reporter(max: number): { reporter: MonitorReporter; registry: Registry } {
    // The latency-sample buffer alone: the default SLOs' events share it and have tests of their own.
    const config = MonitorReporterConfigSchema.parse({
      grpc_address: monitor.address,
      max_buffered: max,
      default_slos: { enabled: false },
    });
    const registry = new Registry();
    const sink = new MonitorClient({ ...config, grpc_address: monitor.address });
    const r = new MonitorReporter({ config, sink, registry });
    open.push({ close: () => r.stop() });
    return { reporter: r, registry };
  }

  async function droppedFull(registry: Registry): Promise<number> {
    const m = await registry.getSingleMetric('notification_monitor_reports_dropped_total')!.get();
    return m.values.filter((v) => v.labels.reason === 'buffer_full').reduce((sum, v) => sum + v.value, 0);
  }

  it('holds max_buffered reports; the next ones are dropped and counted, and the buffer takes reports again after a flush', async () => {
    const { reporter: r, registry } = reporter(3);
    for (let i = 0; i < 3; i++) r.onOutcome(outcome({ latencyMs: 100 + i }));
    expect(r.bufferedCount).toBe(3);
    expect(await droppedFull(registry)).toBe(0);

    r.onOutcome(outcome({ latencyMs: 999 }));
    r.captureException(new Error('over the bound'));
    expect(r.bufferedCount).toBe(3);
    expect(await droppedFull(registry)).toBe(2);

    await r.flush();
    expect(monitor.samples.get(EMAIL_METRIC)).toEqual([100, 101, 102]);
    expect(monitor.exceptions).toEqual([]);
    expect(r.bufferedCount).toBe(0);
    r.onOutcome(outcome({ latencyMs: 5 }));
    expect(r.bufferedCount).toBe(1);
  });

  it('sends one RecordSloSamples per metric and at most 10,000 values per call', async () => {
    const { reporter: r } = reporter(MAX_SAMPLES_PER_CALL + 2);
    for (let i = 0; i < MAX_SAMPLES_PER_CALL + 1; i++) r.onOutcome(outcome({ latencyMs: i }));
    r.onOutcome(outcome({ channel: 'sms', latencyMs: 7 }));
    await r.flush();
    expect(monitor.sampleCalls).toBe(3);
    expect(monitor.samples.get(EMAIL_METRIC)).toHaveLength(MAX_SAMPLES_PER_CALL + 1);
    expect(monitor.samples.get(deliveryLatencyMetric('sms'))).toEqual([7]);
  });

  it('a FAILED delivery is not a latency sample', async () => {
    const { reporter: r } = reporter(10);
    r.onOutcome(outcome({ status: 'failed', failure: 'retries_exhausted' }));
    expect(r.bufferedCount).toBe(0);
  });
});

describe('captured exceptions', () => {
  it('an RPC that fails unexpectedly (INTERNAL) is reported as CaptureException with the service, type and message', async () => {
    const db = await createTestDatabase('reporter');
    const monitor = await startStandInMonitor();
    monitors.push(monitor);
    try {
      const n = await reportingApp(
        { grpc_address: monitor.address, flush_interval_ms: 20, source_service: 'notification-eu' },
        { database: { url: db.url }, delivery: { ...FAST_DELIVERY, store_backend: 'database' } },
      );
      // The table disappears under the running service: the next SendEmail fails as INTERNAL.
      await n.app.storage!.knex.raw('ALTER TABLE deliveries RENAME TO deliveries_gone');
      await expect(n.sendEmail()).rejects.toMatchObject({ code: 13 });

      await waitFor(() => monitor.exceptions.length === 1, 'the captured exception');
      const [e] = monitor.exceptions;
      expect(e).toMatchObject({ sourceService: 'notification-eu', traceId: '' });
      expect(e!.type).not.toBe('');
      expect(e!.message).toContain('deliveries');
      expect(e!.stacktrace).toMatch(/^\s+at /);
      expect(e!.stacktrace).not.toContain(e!.message);
      await n.close();
      open.splice(open.indexOf(n), 1);
    } finally {
      await db.drop();
    }
  });

  it('messages lose email addresses, phone numbers and credentials; stacks keep only their frames', () => {
    const text = scrubText(
      'no route for jane.doe@example.com or +15551234567 (token=abc123 password: hunter2)',
    );
    expect(text).toBe('no route for [email] or [phone] (token=[redacted] password: [redacted])');
    expect(scrubText('x'.repeat(5000))).toHaveLength(1000);
    const err = new Error('bad recipient jane@example.com');
    const frames = stackFrames(err.stack);
    expect(frames).not.toContain('jane');
    expect(frames.split('\n').every((l) => /^\s+at /.test(l))).toBe(true);
  });

  it('what it sends is what the monitor takes: a NUL, a lone surrogate or a line break in a name never costs the report', () => {
    // An error's text is anyone's: a provider's answer cut inside an emoji, a NUL from a caller.
    const err = new Error('bad answer \u0000 from 😀\ud83d 你好 مرحبا');
    err.name = 'Provider\nError\u0000';
    const report = {
      type: errorType(err.name),
      message: scrubText(err.message),
      stacktrace: stackFrames(`${err.name}: x\n    at f (a.js:1:1) \ud83d\u0000`),
      sourceService: 'notification',
    };
    expect(report.type).toBe('Provider Error');
    expect(report.message).toBe('bad answer \ufffd from 😀\ufffd 你好 مرحبا');
    expect(report.stacktrace).toBe('    at f (a.js:1:1) \ufffd\ufffd');
    // The monitor's own check (it refuses a NUL or a lone surrogate in any field).
    const capture = new ExceptionCapture(new NoopErrorTracker(), new Registry(), 10);
    expect(() => capture.capture(report)).not.toThrow();
    expect(() => capture.capture({ ...report, message: err.message })).toThrow(/message/);
    // A name of nothing but control characters still names a type; a long one is bounded.
    expect(errorType('\u0000\n')).toBe('Error');
    expect([...errorType('名'.repeat(300))]).toHaveLength(200);
  });
});

describe('without a monitor configured', () => {
  it('the service runs alone: nothing of the reporter on /metrics, emails are sent', async () => {
    const n = await reportingApp({});
    const before = peer.acceptedCount;
    await n.sendEmail();
    await peer.whenAccepted(before + 1);
    const text = await (await fetch(`${n.baseUrl}/metrics`)).text();
    expect(text).not.toContain('notification_monitor_');
  });
});
