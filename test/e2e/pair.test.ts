/**
 * Issue 15, "End-to-end tests": the notification process and the monitor process, both real
 * (node dist/services/<name>/main.js on real ports), wired to each other as in production:
 *
 * - the notification process reports delivery latency to the monitor (`notification.monitor`, with
 *   the monitor's API token) and registers an email-latency SLO from its config; it exports its spans
 *   over OTLP/HTTP to the monitor's `/v1/traces` (the same token);
 * - the monitor evaluates SLOs every second and sends alerts through a `notification` channel back to
 *   the notification process (with the notification's API token), which mails the on-call address at
 *   the local SMTP peer.
 *
 * The tokens differ per direction and both services refuse calls without theirs, so a working pair
 * also proves auth both ways. The SMTP peer answers DATA late, so the email SLO is breached; the
 * alert must arrive exactly once although the SLO is evaluated many times within the suppression
 * window. And one trace id runs from the test's own span (a hand-built traceparent) through SendEmail,
 * the delivery attempt and the provider call, as the monitor's GetTrace returns it; the monitor's own
 * alert call to the notification service is shown crossing back the same way, down to the relay.
 */
import { randomBytes } from 'node:crypto';

import { MonitorService, type GetTraceResponse, type Span } from '../../shared/gen/svc/monitor/v1/monitor_pb';
import { NotificationService } from '../../shared/gen/svc/notification/v1/notification_pb';
import { grpcClient, unary, type GenericClient } from '../support/grpc-clients';
import { startServiceProcess, type ServiceProcess } from '../support/service-process';
import { reservePort, startSmtpPeer, type SmtpPeer } from '../support/smtp-peer';

/** Sent by the notification's reporter and exporter; the monitor's `server.api_tokens`. */
const MONITOR_TOKEN = 'pair-monitor-token-3f9c2a7d1e5b';
/** Sent by the monitor's notification channel; the notification's `server.api_tokens`. */
const NOTIFICATION_TOKEN = 'pair-notification-token-8b6e4d2c0a19';
const ON_CALL = 'oncall@ops.example.com';
const SLO_NAME = 'pair-email-latency-p50';
const SLO_METRIC = 'notification_delivery_latency_email_ms';
/** How late the SMTP peer answers DATA: well over the SLO's 300 ms threshold. */
const RELAY_DELAY_MS = 1500;

/** Polls `probe` until it returns a value; a deadline against hangs, never a timing assertion. */
async function until<T>(
  what: string,
  probe: () => Promise<T | undefined> | T | undefined,
  ms = 60_000,
): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const found = await probe();
    if (found !== undefined) return found;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

function bearer(token: string): Record<string, string> {
  return { authorization: `Bearer ${token}` };
}

describe('the notification process and the monitor process wired together', () => {
  let peer: SmtpPeer;
  let monitor: ServiceProcess | undefined;
  let notification: ServiceProcess | undefined;
  let notificationClient: GenericClient;
  let monitorClient: GenericClient;

  beforeAll(async () => {
    peer = await startSmtpPeer();
    peer.delayMs = RELAY_DELAY_MS;
    // Each process needs the other's address at start: the monitor is told ports reserved for the
    // notification process (its channel dials only when an alert goes out) and its own HTTP port (it
    // exports its own spans to its own /v1/traces), then the notification process starts on them.
    const notificationGrpcPort = await reservePort();
    const monitorHttpPort = await reservePort();
    monitor = await startServiceProcess('monitor', {
      SVC_MONITOR__SERVER__HTTP_PORT: String(monitorHttpPort),
      SVC_MONITOR__SERVER__API_TOKENS: JSON.stringify([MONITOR_TOKEN]),
      SVC_MONITOR__SLO__EVALUATION_INTERVAL_SECONDS: '1',
      SVC_MONITOR__ALERTS__CHANNELS: JSON.stringify([
        {
          name: 'on-call',
          type: 'notification',
          notification: {
            grpc_address: `127.0.0.1:${notificationGrpcPort}`,
            api_token: NOTIFICATION_TOKEN,
            email_to: [ON_CALL],
          },
        },
      ]),
      SVC_MONITOR__TRACING__EXPORTER: 'otlp',
      SVC_MONITOR__TRACING__SAMPLER_TYPE: 'parent_based',
      SVC_MONITOR__OPENTELEMETRY__ENDPOINT: `http://127.0.0.1:${monitorHttpPort}`,
      SVC_MONITOR__OPENTELEMETRY__HEADERS: JSON.stringify(bearer(MONITOR_TOKEN)),
      SVC_MONITOR__OPENTELEMETRY__EXPORT_INTERVAL: '0.2',
    });
    notification = await startServiceProcess('notification', {
      SVC_NOTIFICATION__SERVER__GRPC_PORT: String(notificationGrpcPort),
      SVC_NOTIFICATION__SERVER__API_TOKENS: JSON.stringify([NOTIFICATION_TOKEN]),
      // Completed RPCs are logged at debug level with their trace id: how the test finds the trace
      // of the monitor's alert call.
      SVC_NOTIFICATION__LOG__LEVEL: 'debug',
      SVC_NOTIFICATION__INBOX__STORE_BACKEND: 'memory',
      SVC_NOTIFICATION__DELIVERY__STORE_BACKEND: 'memory',
      SVC_NOTIFICATION__MAILER__BACKENDS: JSON.stringify([
        {
          name: 'relay',
          primary: true,
          driver: 'smtp',
          from_email: 'noreply@sender.example.com',
          smtp: { host: '127.0.0.1', port: peer.port, pool: false },
        },
      ]),
      SVC_NOTIFICATION__MONITOR__GRPC_ADDRESS: `127.0.0.1:${monitor.grpcPort}`,
      SVC_NOTIFICATION__MONITOR__API_TOKEN: MONITOR_TOKEN,
      SVC_NOTIFICATION__MONITOR__FLUSH_INTERVAL_MS: '200',
      SVC_NOTIFICATION__MONITOR__SLOS: JSON.stringify([
        {
          name: SLO_NAME,
          metric: SLO_METRIC,
          percentile: 0.5,
          threshold_ms: 300,
          window: '5m',
          tier: 'P0_PAGE',
          description: 'email delivery p50 under 300 ms over 5 min',
          owner: 'notifications',
        },
      ]),
      SVC_NOTIFICATION__TRACING__ENABLED: 'true',
      SVC_NOTIFICATION__TRACING__EXPORTER: 'otlp',
      SVC_NOTIFICATION__TRACING__SAMPLER_TYPE: 'parent_based',
      SVC_NOTIFICATION__OPENTELEMETRY__ENDPOINT: `http://127.0.0.1:${monitor.httpPort}`,
      SVC_NOTIFICATION__OPENTELEMETRY__HEADERS: JSON.stringify(bearer(MONITOR_TOKEN)),
      SVC_NOTIFICATION__OPENTELEMETRY__EXPORT_INTERVAL: '0.2',
    });
    notificationClient = grpcClient(NotificationService, `127.0.0.1:${notification.grpcPort}`);
    monitorClient = grpcClient(MonitorService, `127.0.0.1:${monitor.grpcPort}`);
  }, 180_000);

  afterAll(async () => {
    notificationClient?.close();
    monitorClient?.close();
    // Both must shut down cleanly (exit 0) with the pair still talking to each other.
    const codes = [await notification?.stop(), await monitor?.stop()];
    await peer?.close();
    expect(codes).toEqual([0, 0]);
    for (const proc of [notification, monitor])
      for (const token of [MONITOR_TOKEN, NOTIFICATION_TOKEN])
        expect(proc?.logs.filter((l) => l.includes(token)) ?? []).toEqual([]);
  }, 60_000);

  async function monitorMetrics(): Promise<string> {
    return (await fetch(`http://127.0.0.1:${monitor!.httpPort}/metrics`)).text();
  }

  /** A sample of the monitor's /metrics (any prefix, any labels but those given). */
  function sample(text: string, name: string, labels = ''): number | undefined {
    const re = new RegExp(`^\\w*${name}(?:\\{[^}]*${labels}[^}]*\\})? (\\S+)$`, 'm');
    const m = re.exec(text);
    return m ? Number(m[1]) : undefined;
  }

  function sendEmail(to: string, subject: string, traceparent?: string) {
    return unary<{ deliveryId?: string }>(
      notificationClient,
      'sendEmail',
      { to: [to], subject, text: 'Hello from the pair test' },
      { metadata: { ...bearer(NOTIFICATION_TOKEN), ...(traceparent ? { traceparent } : {}) } },
    );
  }

  async function getTrace(traceId: string): Promise<Span[] | undefined> {
    try {
      const { response } = await unary<GetTraceResponse>(
        monitorClient,
        'getTrace',
        { traceId },
        { metadata: bearer(MONITOR_TOKEN) },
      );
      return response.spans;
    } catch (err) {
      if ((err as { code?: number }).code === 5) return undefined; // NOT_FOUND: not exported yet
      throw err;
    }
  }

  const alertMails = () => peer.received.filter((m) => m.recipients.includes(ON_CALL));

  it('refuses calls without the right token in both directions', async () => {
    await expect(
      unary(
        notificationClient,
        'sendEmail',
        { to: ['x@example.com'], subject: 's', text: 't' },
        {
          metadata: bearer(MONITOR_TOKEN),
        },
      ),
    ).rejects.toMatchObject({ code: 16 }); // UNAUTHENTICATED
    await expect(
      unary(monitorClient, 'listSlos', {}, { metadata: bearer(NOTIFICATION_TOKEN) }),
    ).rejects.toMatchObject({ code: 16 });
  });

  it('a slow relay breaches the email SLO and the alert arrives as one email to on-call', async () => {
    // The notification process registered its SLO at the monitor at start.
    const slos = await until('the SLO registered by the notification process', async () => {
      const { response } = await unary<{ slos: { name: string; metric: string; thresholdMs: number }[] }>(
        monitorClient,
        'listSlos',
        {},
        { metadata: bearer(MONITOR_TOKEN) },
      );
      return response.slos.some((s) => s.name === SLO_NAME) ? response.slos : undefined;
    });
    expect(slos.find((s) => s.name === SLO_NAME)).toMatchObject({ metric: SLO_METRIC, thresholdMs: 300 });

    for (let i = 0; i < 3; i++) await sendEmail(`customer${i}@example.com`, `Order ${i}`);
    const alert = await until('the alert email at on-call', () => alertMails()[0], 90_000);
    expect(alert.recipients).toEqual([ON_CALL]);
    expect(alert.parsed.subject).toContain(SLO_NAME);
    expect(alert.parsed.text).toContain(SLO_NAME);

    // Several more evaluations of the still-breached SLO: all within the suppression window.
    const evaluationsAtAlert = sample(await monitorMetrics(), 'slo_evaluations_total') ?? 0;
    await until('five more SLO evaluations', async () =>
      (sample(await monitorMetrics(), 'slo_evaluations_total') ?? 0) >= evaluationsAtAlert + 5
        ? true
        : undefined,
    );
    const text = await monitorMetrics();
    const burnRate = sample(text, 'slo_burn_rate', `slo="${SLO_NAME}"`);
    const budget = sample(text, 'slo_error_budget_remaining', `slo="${SLO_NAME}"`);
    const suppressed = sample(text, 'slo_alerts_total', 'outcome="suppressed"');
    // Figures for the report (not asserted beyond the breach itself).
    console.log(
      `pair: evaluations ${evaluationsAtAlert} -> ${sample(text, 'slo_evaluations_total')}, burn rate ${burnRate}, ` +
        `budget remaining ${budget}, alerts sent ${sample(text, 'slo_alerts_total', 'outcome="sent"')}, ` +
        `suppressed ${suppressed}, mails at the peer ${peer.received.length}`,
    );
    expect(burnRate).toBeGreaterThan(1);
    expect(budget).toBeLessThan(0);
    expect(sample(text, 'slo_alerts_total', 'outcome="sent"')).toBe(1);
    expect(suppressed).toBeGreaterThanOrEqual(5);
    expect(alertMails()).toHaveLength(1);
  }, 180_000);

  it('one trace id runs from the caller through both services, and back from the monitor', async () => {
    const traceId = randomBytes(16).toString('hex');
    const callerSpanId = randomBytes(8).toString('hex');
    await sendEmail('traced@example.com', 'Traced', `00-${traceId}-${callerSpanId}-01`);

    const spans = await until(
      'SendEmail, attempt and provider spans in the monitor',
      async () => {
        const found = await getTrace(traceId);
        const names = found?.map((s) => s.name) ?? [];
        return names.includes('delivery.attempt') && names.includes('delivery.provider.send')
          ? found
          : undefined;
      },
      60_000,
    );
    const server = spans.find((s) => s.name.endsWith('NotificationService/SendEmail'));
    const attempt = spans.find((s) => s.name === 'delivery.attempt');
    const send = spans.find((s) => s.name === 'delivery.provider.send');
    expect(server).toBeDefined();
    for (const s of spans) expect(s.traceId).toBe(traceId);
    expect(server!.parentSpanId).toBe(callerSpanId);
    expect(attempt!.parentSpanId).toBe(server!.spanId);
    expect(send!.parentSpanId).toBe(attempt!.spanId);
    expect(new Set([server, attempt, send].map((s) => s!.serviceName))).toEqual(new Set(['notification']));

    // The way back: the monitor's alert call (previous test) is a gRPC client span of the monitor,
    // exported to its own /v1/traces, whose trace holds the notification's SendEmail server span.
    // The notification process logs each completed RPC at debug level with the server span's trace id.
    const sendEmailTraceIds = (): Set<string> => {
      const ids = new Set<string>();
      for (const line of notification!.logs) {
        try {
          const r = JSON.parse(line) as { trace_id?: string; rpcMethod?: string; code?: string };
          if (r.rpcMethod === 'SendEmail' && r.code === 'ok' && r.trace_id && r.trace_id !== traceId)
            ids.add(r.trace_id);
        } catch {
          // not a JSON line
        }
      }
      return ids;
    };
    const back = await until(
      'the alert trace with spans of both services',
      async () => {
        for (const id of sendEmailTraceIds()) {
          const t = await getTrace(id);
          if (t?.some((s) => s.serviceName === 'monitor') && t.some((s) => s.serviceName === 'notification'))
            return t;
        }
        return undefined;
      },
      30_000,
    );
    const alertCall = back.find((s) => s.serviceName === 'monitor' && s.name === 'send alert notification');
    const served = back.find(
      (s) => s.serviceName === 'notification' && s.name.endsWith('NotificationService/SendEmail'),
    );
    const alertAttempt = back.find((s) => s.name === 'delivery.attempt');
    const alertSend = back.find((s) => s.name === 'delivery.provider.send');
    console.log(
      `pair: alert trace ${served?.traceId}: ${back.map((s) => `${s.serviceName}:${s.name}`).join(' > ')}`,
    );
    // The monitor calls through grpc-js (the one outbound gRPC stack), which the gRPC instrumentation
    // sees: its client span sits between the alert call and the notification's server span.
    const clientCall = back.find(
      (s) => s.serviceName === 'monitor' && s.name.endsWith('NotificationService/SendEmail'),
    );
    expect(alertCall?.parentSpanId ?? '').toBe(''); // the SLO evaluation starts the trace
    expect(clientCall?.parentSpanId).toBe(alertCall!.spanId);
    expect(served!.parentSpanId).toBe(clientCall!.spanId);
    expect(alertAttempt?.parentSpanId).toBe(served!.spanId);
    expect(alertSend?.parentSpanId).toBe(alertAttempt!.spanId);
  }, 120_000);
});
