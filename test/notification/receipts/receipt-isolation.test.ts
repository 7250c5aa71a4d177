/**
 * One receipt never blocks the others (issue 23). A SendGrid event batch is applied event by event:
 * an event that cannot be applied (its address refused by the suppression list, the memory list
 * full) is counted `failed` and logged, the events after it are still applied, and the batch is
 * answered 200 so the provider does not send it again and again. When an event fails for a reason
 * that may pass (the list could not be reached), the rest is still applied and the answer is 503, so
 * the provider retries the batch later. A single Twilio status callback follows the same rule. Real
 * app, real SendGrid v3 and Twilio stand-ins, signed requests.
 */
import { DeliveryStatus } from '../../../shared/gen/svc/notification/v1/notification_pb';
import type {
  SuppressionEntry,
  SuppressionSink,
} from '../../../services/notification/delivery/suppression-sink';
import type { NotificationAppOptions } from '../../../services/notification/app';
import { unary } from '../../support/grpc-clients';
import {
  FAST_DELIVERY,
  startNotificationApp,
  type RunningNotificationApp,
} from '../../support/notification-app';
import { eventWebhookKeys, postEvents, startV3Peer, type V3Peer } from '../channels/email/v3-peer';
import { sendgridBackend } from '../../support/receipt-stand-ins';
import { gatewayConfig, postSignedForm, startTwilioPeer, type TwilioPeer } from '../channels/sms/twilio-peer';

const TOKEN = 'token-receipt-isolation-0123456789';
const metadata = { authorization: `Bearer ${TOKEN}` };
const keys = eventWebhookKeys();

type WireDelivery = { id: string; status: DeliveryStatus; providerReference: string };

let v3: V3Peer;
beforeAll(async () => {
  v3 = await startV3Peer();
});
afterAll(async () => {
  await v3?.close();
});

async function start(
  suppressionMaxEntries: number,
  options: NotificationAppOptions = {},
): Promise<RunningNotificationApp> {
  return startNotificationApp(
    {
      server: { api_tokens: [TOKEN] },
      delivery: { ...FAST_DELIVERY, suppression: { memory_max_entries: suppressionMaxEntries } },
      mailer: {
        backends: [sendgridBackend(v3, keys.publicKey)],
      },
    },
    options,
  );
}

const get = async (n: RunningNotificationApp, id: string) =>
  (await unary<{ delivery: WireDelivery }>(n.notificationGrpc, 'getDelivery', { id }, { metadata })).response
    .delivery;

async function sent(n: RunningNotificationApp, to: string): Promise<WireDelivery> {
  const { deliveryId } = (
    await unary<{ deliveryId: string }>(
      n.notificationGrpc,
      'sendEmail',
      { to: [to], subject: 'Hello', text: 'Hi' },
      { metadata },
    )
  ).response;
  for (let i = 0; i < 1500; i++) {
    const d = await get(n, deliveryId);
    if (d.status === DeliveryStatus.SENT) return d;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error('not sent');
}

let seq = 0;
const event = (d: WireDelivery, name: string, email: string) => ({
  email,
  event: name,
  ...(name === 'bounce' ? { type: 'bounce' } : {}),
  sg_event_id: `ev-iso-${++seq}`,
  sg_message_id: `${d.providerReference}.filter1`,
  timestamp: Math.floor(Date.now() / 1000),
  delivery_id: d.id,
});

const failedCount = async (n: RunningNotificationApp) => {
  const m = await n.app.registry.getSingleMetric('notification_receipts_total')!.get();
  return m.values.filter((v) => v.labels.outcome === 'failed').reduce((sum, v) => sum + v.value, 0);
};

describe('a SendGrid event batch with events that cannot be applied', () => {
  let n: RunningNotificationApp;
  beforeAll(async () => {
    n = await start(1); // the memory suppression list holds one entry
  });
  afterAll(async () => {
    await n?.close();
  });

  it('when one event’s address is refused and another meets a full list, the rest are applied and the batch is 200', async () => {
    const a = await sent(n, 'first@example.com');
    const b = await sent(n, 'second@example.com');
    const c = await sent(n, 'third@example.com');
    const d = await sent(n, 'fourth@example.com');
    const answer = await postEvents(
      `${n.baseUrl}/webhooks/email/sendgrid/events`,
      [
        event(a, 'bounce', 'not-an-address'), // normaliseRecipient refuses it
        event(b, 'bounce', 'second@example.com'), // fills the list
        event(c, 'spamreport', 'third@example.com'), // the list is full
        event(d, 'delivered', 'fourth@example.com'),
      ],
      keys.privateKey,
    );
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.body)).toMatchObject({ verified: 2, failed: 2 });
    expect(await failedCount(n)).toBe(2);
    expect((await get(n, b.id)).status).toBe(DeliveryStatus.UNDELIVERED);
    expect(await n.app.suppressions.isSuppressed('email', 'second@example.com')).toBe(true);
    expect((await get(n, d.id)).status).toBe(DeliveryStatus.DELIVERED);
  });
});

class FlakySink implements SuppressionSink {
  added: SuppressionEntry[] = [];
  down = true;
  async add(entry: SuppressionEntry) {
    if (this.down && entry.recipient.startsWith('down'))
      throw new Error('connection terminated unexpectedly');
    this.added.push(entry);
    return true;
  }
  async remove() {
    return false;
  }
}

describe('a SendGrid event batch with an event whose suppression may succeed later', () => {
  let n: RunningNotificationApp;
  const sink = new FlakySink();
  beforeAll(async () => {
    n = await start(100, { suppressionSink: sink });
  });
  afterAll(async () => {
    await n?.close();
  });

  it('when the list cannot be reached for one event, the others are applied and the answer is 503 (the provider retries)', async () => {
    const a = await sent(n, 'down@example.com');
    const b = await sent(n, 'up@example.com');
    const batch = [event(a, 'bounce', 'down@example.com'), event(b, 'bounce', 'up@example.com')];
    const answer = await postEvents(`${n.baseUrl}/webhooks/email/sendgrid/events`, batch, keys.privateKey);
    expect(answer.status).toBe(503);
    expect(JSON.parse(answer.body).error.code).toBe('unavailable');
    expect(answer.body).not.toContain('connection terminated');
    expect((await get(n, b.id)).status).toBe(DeliveryStatus.UNDELIVERED);
    expect(sink.added.map((e) => e.recipient)).toEqual(['up@example.com']);
    expect(await failedCount(n)).toBe(1);

    // The provider sends the batch again once the list is back: the failed event is taken (its id
    // was not kept as seen; its receipt is a duplicate in the history, its suppression now lands),
    // the applied one is a replay.
    sink.down = false;
    const retried = await postEvents(`${n.baseUrl}/webhooks/email/sendgrid/events`, batch, keys.privateKey);
    expect(retried.status).toBe(200);
    expect(JSON.parse(retried.body)).toMatchObject({ duplicate: 1, replay: 1 });
    expect(sink.added.map((e) => e.recipient)).toEqual(['up@example.com', 'down@example.com']);
    expect((await get(n, a.id)).status).toBe(DeliveryStatus.UNDELIVERED);
  });
});

describe('a Twilio status callback whose suppression cannot be applied', () => {
  const PUBLIC = 'https://notify.example.com';
  let peer: TwilioPeer;
  let n: RunningNotificationApp;
  beforeAll(async () => {
    peer = await startTwilioPeer();
    n = await startNotificationApp({
      server: { api_tokens: [TOKEN] },
      delivery: FAST_DELIVERY,
      sms_backends: [{ name: 'twilio', sms_gateway: gatewayConfig(peer) }],
      webhooks: { public_base_url: PUBLIC },
    });
  });
  afterAll(async () => {
    await n?.close();
    await peer?.close();
  });

  it('when a 21610 callback names a To the list refuses (a WhatsApp id), it is 200, the record still moves, and it is counted failed', async () => {
    const { deliveryId } = (
      await unary<{ deliveryId: string }>(
        n.notificationGrpc,
        'sendSms',
        { to: '+15557651111', body: 'hi' },
        { metadata },
      )
    ).response;
    let d: WireDelivery | undefined;
    for (let i = 0; i < 1500 && d?.status !== DeliveryStatus.SENT; i++) {
      d = await get(n, deliveryId);
      await new Promise((r) => setTimeout(r, 10));
    }
    expect(d?.status).toBe(DeliveryStatus.SENT);
    const answer = await postSignedForm(
      `${n.baseUrl}/webhooks/sms/twilio/status`,
      `${PUBLIC}/webhooks/sms/twilio/status`,
      {
        MessageSid: d!.providerReference,
        MessageStatus: 'undelivered',
        ErrorCode: '21610',
        To: 'whatsapp:+15557651111',
      },
    );
    expect(answer.status).toBe(200);
    expect((await get(n, deliveryId)).status).toBe(DeliveryStatus.UNDELIVERED);
    expect(await failedCount(n)).toBe(1);
  });
});
