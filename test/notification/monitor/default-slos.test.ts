/**
 * Issue 31: the notification service's own SLOs, registered at the monitor at start (per channel:
 * deliveries that end SENT, SENT within the latency objective; inbox Send availability), and how
 * each outcome counts in them, sent as timestamped events (RecordSloSamples with `slo` + `events`).
 */
import * as grpc from '@grpc/grpc-js';
import { Registry } from 'prom-client';
import { MonitorReporterConfigSchema } from '../../../services/notification/monitor/config';
import type { RatioSloDeclaration } from '../../../services/notification/monitor/default-slos';
import {
  MonitorCallError,
  type MonitorSink,
  type SloEventEntry,
} from '../../../services/notification/monitor/monitor-client';
import { MonitorReporter } from '../../../services/notification/monitor/reporter';
import type { DeliveryOutcome } from '../../../services/notification/delivery';
import type { DeliveryReceiptOutcome } from '../../../services/notification/delivery/observer';
import type { Channel } from '../../../services/notification/delivery/driver';
import { receiptChannels } from '../../../services/notification/monitor/default-slos';
import { InboxRpc } from '../../../services/notification/rpc/inbox-rpc';
import { InvalidArgumentError, UnavailableError } from '../../../shared/errors';
import { loadNotificationConfig } from '../../../services/notification/config';

/** A MonitorSink that records what the reporter sends; `failEvents` answers RecordSloSamples with a code. */
class FakeSink implements MonitorSink {
  readonly ratio: RatioSloDeclaration[] = [];
  readonly events = new Map<string, SloEventEntry[]>();
  eventCalls = 0;
  failEvents: grpc.status | undefined;
  failRegister: grpc.status | undefined;
  async recordSloSamples(): Promise<number> {
    return 1;
  }
  async registerSlo(): Promise<'registered'> {
    return 'registered';
  }
  async captureException(): Promise<void> {}
  async registerRatioSlo(slo: RatioSloDeclaration): Promise<'registered'> {
    if (this.failRegister !== undefined)
      throw new MonitorCallError(this.failRegister, 'registerRatioSlo', '');
    this.ratio.push(slo);
    return 'registered';
  }
  async recordSloEvents(slo: string, events: readonly SloEventEntry[]): Promise<number> {
    this.eventCalls++;
    if (this.failEvents !== undefined) throw new MonitorCallError(this.failEvents, 'recordSloSamples', '');
    this.events.set(slo, [...(this.events.get(slo) ?? []), ...events]);
    return events.reduce((n, e) => n + e.good + e.bad, 0);
  }
  close(): void {}
}

const T0 = Date.UTC(2026, 10, 28, 12, 0, 0);

function outcome(o: Partial<DeliveryOutcome> = {}): DeliveryOutcome {
  return {
    deliveryId: 'd1',
    channel: 'email',
    backend: 'main',
    status: 'sent',
    failure: null,
    attempts: 1,
    acceptedAt: new Date(T0),
    finishedAt: new Date(T0 + 1500),
    latencyMs: 1500,
    ...o,
  };
}

const reporters: MonitorReporter[] = [];
afterEach(async () => {
  await Promise.all(reporters.splice(0).map((r) => r.stop()));
});

function receiptOf(r: Partial<DeliveryReceiptOutcome> = {}): DeliveryReceiptOutcome {
  return {
    deliveryId: 'd1',
    channel: 'sms',
    backend: 'twilio',
    status: 'delivered',
    failure: null,
    sentAt: new Date(T0 + 1500),
    receivedAt: new Date(T0 + 7_250),
    ...r,
  };
}

function setup(config: Record<string, unknown> = {}, receiptChannels?: Channel[]) {
  const sink = new FakeSink();
  const registry = new Registry();
  const reporter = new MonitorReporter({
    config: MonitorReporterConfigSchema.parse({ grpc_address: '127.0.0.1:1', ...config }),
    sink,
    registry,
    receiptChannels,
  });
  reporters.push(reporter);
  const totals = (slo: string) =>
    (sink.events.get(slo) ?? []).reduce((t, e) => ({ good: t.good + e.good, bad: t.bad + e.bad }), {
      good: 0,
      bad: 0,
    });
  return { sink, reporter, registry, totals };
}

describe('the default SLOs', () => {
  it('are registered at the first flush: per channel delivery and latency, and inbox Send, with the defaults', async () => {
    const { sink, reporter } = setup();
    await reporter.flush();
    expect(sink.ratio.map((s) => [s.name, s.target])).toEqual([
      ['notification-email-delivery', 0.99],
      ['notification-email-latency', 0.95],
      ['notification-sms-delivery', 0.99],
      ['notification-sms-latency', 0.95],
      ['notification-push-delivery', 0.99],
      ['notification-push-latency', 0.95],
      ['notification-inbox-send', 0.999],
    ]);
    expect(sink.ratio[0]).toMatchObject({
      period: { kind: 'rolling', seconds: 30 * 86_400 },
      minEvents: 100,
      tier: 'P0_PAGE',
    });
    expect(sink.ratio[1]!.description).toMatch(/within 60 s/);
    // Registered once: the next flush does not register again.
    await reporter.flush();
    expect(sink.ratio).toHaveLength(7);
  });

  it('take their targets, period, prefix and objectives from the config; disabled, none is registered or counted', async () => {
    const { sink, reporter } = setup({
      default_slos: {
        name_prefix: 'mail-svc-',
        period: { calendar: 'month', time_zone: 'Europe/Berlin' },
        delivery_target: 0.995,
        latency_objectives: { sms: '2m' },
        min_events: 20,
        tier: 'P1_BUSINESS_HOURS',
      },
    });
    await reporter.flush();
    expect(sink.ratio.find((s) => s.name === 'mail-svc-sms-delivery')).toMatchObject({
      target: 0.995,
      period: { kind: 'calendar_month', timeZone: 'Europe/Berlin' },
      minEvents: 20,
      tier: 'P1_BUSINESS_HOURS',
    });
    expect(sink.ratio.find((s) => s.name === 'mail-svc-sms-latency')!.description).toMatch(/within 120 s/);

    const off = setup({ default_slos: { enabled: false } });
    off.reporter.onOutcome(outcome());
    off.reporter.onInboxSend(true);
    await off.reporter.flush();
    expect(off.sink.ratio).toEqual([]);
    expect(off.sink.eventCalls).toBe(0);
  });

  it('count a SENT delivery good in both, a FAILED one bad in delivery only; the latency objective is inclusive', async () => {
    const { reporter, totals, sink } = setup();
    reporter.onOutcome(outcome({ latencyMs: 60_000 })); // exactly the objective: good
    reporter.onOutcome(outcome({ latencyMs: 60_001 })); // one ms over: bad
    reporter.onOutcome(outcome({ status: 'failed', failure: 'retries_exhausted', latencyMs: 3 }));
    reporter.onOutcome(outcome({ channel: 'sms', latencyMs: 30_001 }));
    // The recipient's failures are no events: the service did its part.
    reporter.onOutcome(outcome({ status: 'failed', failure: 'recipient_invalid' }));
    reporter.onOutcome(outcome({ status: 'failed', failure: 'recipient_suppressed' }));
    await reporter.flush();
    expect(totals('notification-email-delivery')).toEqual({ good: 2, bad: 1 });
    expect(totals('notification-email-latency')).toEqual({ good: 1, bad: 1 });
    expect(totals('notification-sms-latency')).toEqual({ good: 0, bad: 1 });
    // Each event carries the second its delivery ended.
    expect(sink.events.get('notification-email-delivery')!.map((e) => e.atMs)).toEqual([T0 + 1000]);
  });

  it('count inbox Send: success good, a failure on the service side bad, a caller error not at all', async () => {
    const { reporter, totals } = setup();
    const answers: Array<() => Promise<never> | Promise<unknown>> = [
      async () => ({
        id: 'm',
        userId: 'u',
        title: 't',
        body: 'b',
        metadata: {},
        readAt: null,
        createdAt: new Date(),
      }),
      async () => {
        throw new InvalidArgumentError('title is required', 'title');
      },
      async () => {
        throw new UnavailableError('the inbox store is unavailable');
      },
      async () => {
        throw new Error('connection terminated');
      },
    ];
    for (const answer of answers) {
      const rpc = new InboxRpc({ send: answer } as never, (ok) => reporter.onInboxSend(ok));
      await rpc.send({ userId: 'u', title: 't', body: 'b' }).catch(() => undefined);
    }
    await reporter.flush();
    expect(totals('notification-inbox-send')).toEqual({ good: 1, bad: 2 });
  });

  it('re-register an SLO the monitor lost (NOT_FOUND) and keep its events for the next flush', async () => {
    const { reporter, sink, totals } = setup();
    await reporter.flush();
    sink.failEvents = grpc.status.NOT_FOUND;
    reporter.onOutcome(outcome());
    await reporter.flush();
    expect(sink.events.size).toBe(0);
    sink.failEvents = undefined;
    await reporter.flush();
    expect(sink.ratio.filter((s) => s.name === 'notification-email-delivery')).toHaveLength(2);
    expect(totals('notification-email-delivery')).toEqual({ good: 1, bad: 0 });
  });

  it('a monitor without ratio SLOs (UNIMPLEMENTED) refuses them once; their events are not counted', async () => {
    const { reporter, sink } = setup();
    sink.failRegister = grpc.status.UNIMPLEMENTED;
    await reporter.flush();
    reporter.onOutcome(outcome());
    expect(reporter.bufferedCount).toBe(1); // the latency sample only
    await reporter.flush();
    expect(sink.eventCalls).toBe(0);
  });

  it('share the max_buffered bound: a new second of an SLO takes a slot; over the bound it is dropped and counted', async () => {
    const { reporter, registry } = setup({ max_buffered: 3, default_slos: {} });
    reporter.onOutcome(outcome({ status: 'failed', failure: 'retries_exhausted' })); // one delivery bucket
    reporter.onOutcome(outcome({ status: 'failed', failure: 'retries_exhausted' })); // same second: no new slot
    reporter.onInboxSend(true); // a second SLO bucket
    reporter.onOutcome(
      outcome({ status: 'failed', failure: 'retries_exhausted', finishedAt: new Date(T0 + 5000) }),
    );
    expect(reporter.bufferedCount).toBe(3);
    reporter.onOutcome(
      outcome({ status: 'failed', failure: 'retries_exhausted', finishedAt: new Date(T0 + 9000) }),
    );
    const dropped = (await registry.getSingleMetric('notification_monitor_reports_dropped_total')!.get())
      .values;
    expect(
      dropped.find((v) => v.labels.kind === 'slo_event' && v.labels.reason === 'buffer_full')?.value,
    ).toBe(1);
  });

  it('send at most 10,000 entries per call', async () => {
    const { reporter, sink } = setup({ max_buffered: 20_000 });
    await reporter.flush();
    for (let i = 0; i < 10_001; i++)
      reporter.onOutcome(
        outcome({ status: 'failed', failure: 'retries_exhausted', finishedAt: new Date(T0 + i * 1000) }),
      );
    await reporter.flush();
    expect(sink.events.get('notification-email-delivery')).toHaveLength(10_001);
    expect(sink.eventCalls).toBe(2);
  });
});

describe('the receipts SLO', () => {
  it('is declared only for the channels whose receipts are configured, after their latency SLO', async () => {
    const { sink, reporter } = setup({ default_slos: { receipts_target: 0.995 } }, ['sms']);
    await reporter.flush();
    const names = sink.ratio.map((s) => s.name);
    expect(names.slice(2, 5)).toEqual([
      'notification-sms-delivery',
      'notification-sms-latency',
      'notification-sms-receipts',
    ]);
    expect(names.filter((n) => n.endsWith('-receipts'))).toEqual(['notification-sms-receipts']);
    expect(sink.ratio.find((s) => s.name === 'notification-sms-receipts')).toMatchObject({
      target: 0.995,
      period: { kind: 'rolling', seconds: 30 * 86_400 },
      minEvents: 100,
      tier: 'P0_PAGE',
      description: 'Share of SENT sms deliveries the provider reports DELIVERED among those it reports on',
    });
    // Without receipts configured: no receipts SLO, and a receipt (should one arrive) counts nowhere.
    const none = setup();
    none.reporter.onReceipt(receiptOf());
    await none.reporter.flush();
    expect(none.sink.ratio.filter((s) => s.name.endsWith('-receipts'))).toEqual([]);
    expect(none.sink.eventCalls).toBe(0);
    expect(none.reporter.bufferedCount).toBe(0);
  });

  it('counts DELIVERED good and UNDELIVERED for a provider reason bad, at the receipt time; a recipient reason is no event', async () => {
    const { reporter, totals, sink } = setup({}, ['sms', 'email']);
    reporter.onReceipt(receiptOf());
    reporter.onReceipt(
      receiptOf({ status: 'undelivered', failure: 'provider_undelivered', providerCode: '30008' }),
    );
    // Undelivered without a cause: the provider's word, counted bad.
    reporter.onReceipt(receiptOf({ status: 'undelivered', failure: null }));
    for (const failure of ['recipient_invalid', 'recipient_unsubscribed', 'recipient_bounced'] as const)
      reporter.onReceipt(receiptOf({ status: 'undelivered', failure }));
    reporter.onReceipt(receiptOf({ channel: 'email', status: 'undelivered', failure: 'recipient_bounced' }));
    await reporter.flush();
    expect(totals('notification-sms-receipts')).toEqual({ good: 1, bad: 2 });
    expect(sink.events.get('notification-email-receipts')).toBeUndefined();
    // Stamped with the second the receipt was recorded, not when the delivery was sent.
    expect(sink.events.get('notification-sms-receipts')!.map((e) => e.atMs)).toEqual([T0 + 7_000]);
    // A receipt is no delivery outcome: the delivery and latency SLOs heard nothing.
    expect(sink.events.get('notification-sms-delivery')).toBeUndefined();
  });

  it('counts nothing when the default SLOs are disabled', async () => {
    const { reporter, sink } = setup({ default_slos: { enabled: false } }, ['sms']);
    reporter.onReceipt(receiptOf());
    await reporter.flush();
    expect(sink.ratio).toEqual([]);
    expect(sink.eventCalls).toBe(0);
  });
});

describe('receiptChannels', () => {
  const key = '-----BEGIN PUBLIC KEY-----x';
  const base = {
    sms_backends: [] as { sms_gateway?: unknown }[],
    mailer: { backends: [] as { driver: string; http_api?: { event_webhook_public_key?: string } }[] },
    webhooks: {} as { public_base_url?: string },
  };
  it('is email with an http_api mailer that has an event webhook key, and sms with an sms_gateway and a public base URL', () => {
    expect(receiptChannels(base)).toEqual([]);
    expect(
      receiptChannels({
        ...base,
        mailer: { backends: [{ driver: 'smtp' }, { driver: 'http_api', http_api: {} }] },
        sms_backends: [{ sms_gateway: {} }],
      }),
    ).toEqual([]);
    expect(
      receiptChannels({
        sms_backends: [{}, { sms_gateway: {} }],
        mailer: {
          backends: [{ driver: 'smtp' }, { driver: 'http_api', http_api: { event_webhook_public_key: key } }],
        },
        webhooks: { public_base_url: 'https://notify.example.com' },
      }),
    ).toEqual(['email', 'sms']);
    // A public base URL without an sms_gateway backend asks nobody for callbacks.
    expect(
      receiptChannels({ ...base, sms_backends: [{}], webhooks: { public_base_url: 'https://n.example' } }),
    ).toEqual([]);
  });
});

describe('the default SLOs config', () => {
  it('names the key of a bad target', () => {
    expect(() =>
      loadNotificationConfig(undefined, {
        file: null,
        env: { SVC_NOTIFICATION__MONITOR__DEFAULT_SLOS__DELIVERY_TARGET: '1' },
      }),
    ).toThrow(/default_slos/);
    expect(() =>
      loadNotificationConfig(undefined, {
        file: null,
        env: { SVC_NOTIFICATION__MONITOR__DEFAULT_SLOS__RECEIPTS_TARGET: '1' },
      }),
    ).toThrow(/default_slos/);
  });
});
