/**
 * Email receipts end to end, on the memory store and on real PostgreSQL: the real app sends through
 * the local SendGrid v3 stand-in (our delivery id in custom_args), and the stand-in posts signed
 * event batches back. Forged and stale batches are 403 and change nothing; bounces and complaints
 * reach the suppression sink; duplicates and out-of-order events leave the right state.
 */
import {
  DeliveryFailure,
  DeliveryStatus,
  ReceiptEffect,
} from '../../../shared/gen/svc/notification/v1/notification_pb';
import type {
  SuppressionEntry,
  SuppressionSink,
} from '../../../services/notification/delivery/suppression-sink';
import { createTestDatabase } from '../../support/database';
import {
  FAST_DELIVERY,
  startNotificationApp,
  type RunningNotificationApp,
} from '../../support/notification-app';
import { unary } from '../../support/grpc-clients';
import { eventWebhookKeys, postEvents, startV3Peer, type V3Peer } from '../channels/email/v3-peer';
import { sendgridBackend } from '../../support/receipt-stand-ins';

const TOKEN = 'token-email-receipts-0123456789';
const metadata = { authorization: `Bearer ${TOKEN}` };

type WireDelivery = {
  id: string;
  status: DeliveryStatus;
  failure: DeliveryFailure;
  providerReference: string;
  receipts: Array<{ eventId: string; event: string; effect: ReceiptEffect; providerCode: string }>;
};

class RecordingSink implements SuppressionSink {
  added: SuppressionEntry[] = [];
  async add(entry: SuppressionEntry) {
    this.added.push(entry);
    return true;
  }
  async remove() {
    return false;
  }
}

describe.each([
  ['the memory store', 'memory'],
  ['the database store on real PostgreSQL', 'postgres'],
] as const)('email provider receipts on %s', (_label, storeKind) => {
  let v3: V3Peer;
  let n: RunningNotificationApp;
  let drop: (() => Promise<void>) | undefined;
  const sink = new RecordingSink();
  const keys = eventWebhookKeys();
  let eventsUrl: string;
  let seq = 0;

  beforeAll(async () => {
    v3 = await startV3Peer();
    const db = storeKind === 'postgres' ? await createTestDatabase('email_receipts') : undefined;
    drop = db?.drop;
    n = await startNotificationApp(
      {
        server: { api_tokens: [TOKEN] },
        ...(db ? { database: { url: db.url } } : {}),
        delivery: { ...FAST_DELIVERY, store_backend: db ? 'database' : 'memory' },
        webhooks: { max_age_seconds: 300 },
        mailer: {
          backends: [sendgridBackend(v3, keys.publicKey)],
        },
      },
      { suppressionSink: sink },
    );
    eventsUrl = `${n.baseUrl}/webhooks/email/sendgrid/events`;
  });

  afterAll(async () => {
    await n?.close();
    await v3?.close();
    await drop?.();
  });

  const get = async (id: string) =>
    (await unary<{ delivery: WireDelivery }>(n.notificationGrpc, 'getDelivery', { id }, { metadata }))
      .response.delivery;

  /** Sends one email; resolves once the stand-in accepted it, with the custom args it received. */
  async function sent(to = 'jane@example.com') {
    const before = v3.requests.length;
    const { deliveryId } = (
      await unary<{ deliveryId: string }>(
        n.notificationGrpc,
        'sendEmail',
        { to: [to], subject: 'Hello', text: 'Hi' },
        { metadata },
      )
    ).response;
    for (let i = 0; i < 1500; i++) {
      const d = await get(deliveryId);
      if (d.status === DeliveryStatus.SENT) {
        const body = JSON.parse(v3.requests[before]!.body) as { custom_args: { delivery_id: string } };
        return { delivery: d, customArgs: body.custom_args, to };
      }
      await new Promise((r) => setTimeout(r, 10));
    }
    throw new Error('not sent');
  }

  /** One event as the provider builds it: custom args at the top level, a fresh sg_event_id. */
  function event(
    s: Awaited<ReturnType<typeof sent>>,
    name: string,
    extra: Record<string, unknown> = {},
  ): Record<string, unknown> {
    return {
      email: s.to,
      event: name,
      sg_event_id: `ev-${++seq}`,
      sg_message_id: `${s.delivery.providerReference}.filterdrecv-p3mdw1-756b745b58-kmzbl-18-5F5FC76C-9.0`,
      timestamp: Math.floor(Date.now() / 1000),
      ...s.customArgs,
      ...extra,
    };
  }

  it('the mailer sends our delivery id in custom_args', async () => {
    const s = await sent();
    expect(s.customArgs.delivery_id).toBe(s.delivery.id);
  });

  it('when processed then delivered arrive (twice, and out of order), the record is DELIVERED once', async () => {
    const s = await sent();
    const processed = event(s, 'processed');
    const delivered = event(s, 'delivered');
    const first = await postEvents(eventsUrl, [delivered, processed, delivered], keys.privateKey);
    expect(first.status).toBe(200);
    expect(JSON.parse(first.body)).toMatchObject({ verified: 2, duplicate: 1 });
    expect((await postEvents(eventsUrl, [processed], keys.privateKey)).status).toBe(200);
    const got = await get(s.delivery.id);
    expect(got.status).toBe(DeliveryStatus.DELIVERED);
    expect(got.receipts.map((r) => [r.event, r.effect])).toEqual([
      ['delivered', ReceiptEffect.APPLIED],
      ['processed', ReceiptEffect.IGNORED],
      ['delivered', ReceiptEffect.DUPLICATE],
      ['processed', ReceiptEffect.DUPLICATE],
    ]);
  });

  it('when the message is found only by sg_message_id (no custom args), the receipt still applies', async () => {
    const s = await sent();
    const e = event(s, 'delivered');
    delete e.delivery_id;
    expect((await postEvents(eventsUrl, [e], keys.privateKey)).status).toBe(200);
    expect((await get(s.delivery.id)).status).toBe(DeliveryStatus.DELIVERED);
  });

  it('when a hard bounce arrives, the record is UNDELIVERED / RECIPIENT_BOUNCED and the address is suppressed', async () => {
    const s = await sent('Bounce.Me@Example.com');
    const a = await postEvents(
      eventsUrl,
      [event(s, 'bounce', { type: 'bounce', status: '5.1.1', reason: '550 no such user' })],
      keys.privateKey,
    );
    expect(a.status).toBe(200);
    const got = await get(s.delivery.id);
    expect(got.status).toBe(DeliveryStatus.UNDELIVERED);
    expect(got.failure).toBe(DeliveryFailure.RECIPIENT_BOUNCED);
    expect(got.receipts[0]?.providerCode).toBe('5.1.1');
    expect(sink.added).toContainEqual({
      channel: 'email',
      recipient: 'bounce.me@example.com',
      reason: 'hard_bounce',
      source: 'receipt:sendgrid',
    });
  });

  it('when a suppressing event is repeated (a replayed batch), the repeat is refused: the sink is asked once', async () => {
    const s = await sent('again@example.com');
    const bounce = event(s, 'bounce', { type: 'bounce' });
    const first = await postEvents(eventsUrl, [bounce, bounce], keys.privateKey);
    expect(JSON.parse(first.body)).toMatchObject({ verified: 1, replay: 1 });
    const again = await postEvents(eventsUrl, [bounce], keys.privateKey);
    expect(again.status).toBe(200);
    expect(JSON.parse(again.body)).toMatchObject({ verified: 0, replay: 1 });
    expect(sink.added.filter((e) => e.recipient === 'again@example.com')).toHaveLength(1);
    expect((await get(s.delivery.id)).receipts.map((r) => r.effect)).toEqual([ReceiptEffect.APPLIED]);
  });

  it('when a spam complaint follows delivery, the record stays DELIVERED with SPAM_COMPLAINT and the address is suppressed', async () => {
    const s = await sent('complainer@example.com');
    await postEvents(eventsUrl, [event(s, 'delivered'), event(s, 'spamreport')], keys.privateKey);
    const got = await get(s.delivery.id);
    expect(got.status).toBe(DeliveryStatus.DELIVERED);
    expect(got.failure).toBe(DeliveryFailure.SPAM_COMPLAINT);
    expect(sink.added).toContainEqual(
      expect.objectContaining({ recipient: 'complainer@example.com', reason: 'spam_complaint' }),
    );
    const list = await unary<{ deliveries: WireDelivery[] }>(
      n.notificationGrpc,
      'listDeliveries',
      { failure: DeliveryFailure.SPAM_COMPLAINT },
      { metadata },
    );
    expect(list.response.deliveries.map((d) => d.id)).toEqual([s.delivery.id]);
  });

  it('when a batch is forged, unsigned, signed by another key or stale, it is 403 and nothing changes', async () => {
    const s = await sent();
    const batch = [event(s, 'bounce', { type: 'bounce' })];
    const other = eventWebhookKeys();
    const answers = [
      await postEvents(eventsUrl, batch, keys.privateKey, {
        signature:
          'MEUCIQCtIHJeH93Y+qpYeWrySphQgpNGNr/U+UyUlBkU6n7RAwIgJTz2C+8a8xonZGi6BpSzoQsbVRamr2nlxFDWYNH3j/0=',
      }),
      await postEvents(eventsUrl, batch, keys.privateKey, { signature: null }),
      await postEvents(eventsUrl, batch, other.privateKey),
      await postEvents(eventsUrl, batch, keys.privateKey, { timestamp: Math.floor(Date.now() / 1000) - 301 }),
      await postEvents(eventsUrl, batch, keys.privateKey, {
        timestamp: Math.floor(Date.now() / 1000) + 3600,
      }),
    ];
    for (const a of answers) {
      expect(a.status).toBe(403);
      expect(JSON.parse(a.body).error.code).toBe('permission_denied');
    }
    const got = await get(s.delivery.id);
    expect(got.status).toBe(DeliveryStatus.SENT);
    expect(got.receipts).toEqual([]);
    const m = await n.app.registry.getSingleMetric('notification_receipts_total')!.get();
    const forged = m.values
      .filter((v) => v.labels.outcome === 'forged' && v.labels.backend === 'sendgrid')
      .reduce((sum, v) => sum + v.value, 0);
    expect(forged).toBe(5);
  });

  it('when a signed batch is not a JSON array, it is 400; unknown deliveries are 200 and counted', async () => {
    const bad = await postEvents(eventsUrl, [], keys.privateKey, { body: '{"event":"delivered"}' });
    expect(bad.status).toBe(400);
    const unknown = await postEvents(
      eventsUrl,
      [{ event: 'delivered', sg_event_id: 'x', sg_message_id: 'nope.filter', delivery_id: 'not-a-uuid' }],
      keys.privateKey,
    );
    expect(unknown.status).toBe(200);
    expect(JSON.parse(unknown.body)).toMatchObject({ unknown_message: 1 });
  });

  it('an unknown backend, or one without a public key, is 404', async () => {
    const a = await postEvents(`${n.baseUrl}/webhooks/email/nope/events`, [], keys.privateKey);
    expect(a.status).toBe(404);
  });
});
