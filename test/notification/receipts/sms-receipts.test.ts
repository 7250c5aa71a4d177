/**
 * SMS receipts end to end: the real app sends through the local Twilio stand-in, which asks nothing
 * but gets a StatusCallback; the stand-in then posts signed status callbacks and inbound messages
 * back to the app's HTTP port. Forged ones are 403 and change nothing; duplicates and late callbacks
 * leave the right state; STOP and START reach the suppression sink.
 */
import {
  Channel,
  DeliveryFailure,
  DeliveryStatus,
  ReceiptEffect,
} from '../../../shared/gen/svc/notification/v1/notification_pb';
import type {
  SuppressionEntry,
  SuppressionSink,
} from '../../../services/notification/delivery/suppression-sink';
import {
  FAST_DELIVERY,
  startNotificationApp,
  type RunningNotificationApp,
} from '../../support/notification-app';
import { unary } from '../../support/grpc-clients';
import {
  gatewayConfig,
  postSignedForm,
  sendStatusCallback,
  startTwilioPeer,
  type TwilioPeer,
} from '../channels/sms/twilio-peer';

const PUBLIC = 'https://notify.example.com';
const TOKEN = 'token-receipts-0123456789abcdef';
const metadata = { authorization: `Bearer ${TOKEN}` };
const TO = '+15551234567';

type WireReceipt = { eventId: string; event: string; effect: ReceiptEffect; status: DeliveryStatus };
type WireDelivery = {
  id: string;
  status: DeliveryStatus;
  failure: DeliveryFailure;
  providerReference: string;
  receipts: WireReceipt[];
  deliveredAt?: unknown;
};

class RecordingSink implements SuppressionSink {
  added: SuppressionEntry[] = [];
  removed: Array<{ channel: string; recipient: string }> = [];
  async add(entry: SuppressionEntry) {
    this.added.push(entry);
    return true;
  }
  async remove(channel: SuppressionEntry['channel'], recipient: string) {
    this.removed.push({ channel, recipient });
    return true;
  }
}

describe('SMS provider receipts', () => {
  let peer: TwilioPeer;
  let n: RunningNotificationApp;
  const sink = new RecordingSink();

  beforeAll(async () => {
    peer = await startTwilioPeer();
    n = await startNotificationApp(
      {
        sms_backends: [{ name: 'twilio', sms_gateway: gatewayConfig(peer) }],
        delivery: FAST_DELIVERY,
        // RPCs need a token; the webhooks must not (providers cannot send one).
        server: { api_tokens: [TOKEN] },
        webhooks: { public_base_url: PUBLIC, max_body_bytes: 2048 },
      },
      { suppressionSink: sink },
    );
  });

  afterAll(async () => {
    await n?.close();
    await peer?.close();
  });

  const get = async (id: string) =>
    (await unary<{ delivery: WireDelivery }>(n.notificationGrpc, 'getDelivery', { id }, { metadata }))
      .response.delivery;

  /** Sends one SMS and waits until the stand-in accepted it (SENT, with its sid). */
  async function sent(): Promise<{ delivery: WireDelivery; request: TwilioPeer['requests'][number] }> {
    const before = peer.requests.length;
    const { deliveryId } = (
      await unary<{ deliveryId: string }>(n.notificationGrpc, 'sendSms', { to: TO, body: 'hi' }, { metadata })
    ).response;
    for (let i = 0; i < 1500; i++) {
      const d = await get(deliveryId);
      if (d.status === DeliveryStatus.SENT) return { delivery: d, request: peer.requests[before]! };
      await new Promise((r) => setTimeout(r, 10));
    }
    throw new Error('not sent');
  }

  const metric = async (outcome: string, type: string) => {
    const m = await n.app.registry.getSingleMetric('notification_receipts_total')!.get();
    return (
      m.values.find(
        (v) => v.labels.outcome === outcome && v.labels.type === type && v.labels.backend === 'twilio',
      )?.value ?? 0
    );
  };

  it('when public_base_url is set, each message asks for status callbacks at the backend route', async () => {
    const { request } = await sent();
    expect(request.form.StatusCallback).toBe(`${PUBLIC}/webhooks/sms/twilio/status`);
  });

  it('when the provider reports delivered, the record is DELIVERED and GetDelivery shows the receipt', async () => {
    const { delivery, request } = await sent();
    const answer = await sendStatusCallback(request, delivery.providerReference, 'delivered', n.baseUrl);
    expect(answer.status).toBe(200);
    expect(answer.body).toContain('<Response>');
    const got = await get(delivery.id);
    expect(got.status).toBe(DeliveryStatus.DELIVERED);
    expect(got.deliveredAt).toBeDefined();
    expect(got.receipts).toEqual([
      expect.objectContaining({
        eventId: `${delivery.providerReference}:delivered`,
        event: 'delivered',
        status: DeliveryStatus.DELIVERED,
        effect: ReceiptEffect.APPLIED,
      }),
    ]);
    // ListDeliveries leaves the history out; the filter finds the new status.
    const list = await unary<{ deliveries: WireDelivery[] }>(
      n.notificationGrpc,
      'listDeliveries',
      {
        channel: Channel.SMS,
        status: DeliveryStatus.DELIVERED,
      },
      { metadata },
    );
    const listed = list.response.deliveries.find((d) => d.id === delivery.id);
    expect(listed?.receipts).toEqual([]);
    const hist = await n.app.registry
      .getSingleMetric('notification_delivery_sent_to_delivered_seconds')!
      .get();
    expect(
      hist.values.find(
        (v) => (v as { metricName?: string }).metricName?.endsWith('_count') && v.labels.backend === 'twilio',
      )?.value,
    ).toBeGreaterThan(0);
  });

  it('when a callback is forged, unsigned or signed for another URL, it is 403 and nothing changes', async () => {
    const { delivery, request } = await sent();
    const forgedBefore = await metric('forged', 'status');
    const wrong = await sendStatusCallback(request, delivery.providerReference, 'delivered', n.baseUrl, {
      signature: 'AAAAAAAAAAAAAAAAAAAAAAAAAAA=',
    });
    const none = await sendStatusCallback(request, delivery.providerReference, 'delivered', n.baseUrl, {
      signature: null,
    });
    const elsewhere = await postSignedForm(
      `${n.baseUrl}/webhooks/sms/twilio/status`,
      'https://attacker.example.com/webhooks/sms/twilio/status',
      { MessageSid: delivery.providerReference, MessageStatus: 'delivered' },
    );
    const otherToken = await postSignedForm(
      `${n.baseUrl}/webhooks/sms/twilio/status`,
      `${PUBLIC}/webhooks/sms/twilio/status`,
      { MessageSid: delivery.providerReference, MessageStatus: 'delivered' },
      { authToken: 'not-the-auth-token' },
    );
    for (const a of [wrong, none, elsewhere, otherToken]) {
      expect(a.status).toBe(403);
      expect(JSON.parse(a.body)).toEqual({
        error: { code: 'permission_denied', message: expect.any(String) },
      });
      expect(a.body).not.toContain('auth-token');
    }
    const got = await get(delivery.id);
    expect(got.status).toBe(DeliveryStatus.SENT);
    expect(got.receipts).toEqual([]);
    expect((await metric('forged', 'status')) - forgedBefore).toBe(4);
  });

  it('when callbacks repeat and arrive out of order, the final state is the first final word and repeats are refused as replays', async () => {
    const { delivery, request } = await sent();
    const sid = delivery.providerReference;
    const replayBefore = await metric('replay', 'delivered');
    for (const status of ['delivered', 'delivered', 'sent', 'queued', 'delivered', 'undelivered']) {
      expect((await sendStatusCallback(request, sid, status, n.baseUrl)).status).toBe(200);
    }
    const got = await get(delivery.id);
    expect(got.status).toBe(DeliveryStatus.DELIVERED);
    // A repeated (MessageSid, MessageStatus) is a replay: answered 200, not even kept in the history.
    expect(got.receipts.map((r) => [r.event, r.effect])).toEqual([
      ['delivered', ReceiptEffect.APPLIED],
      ['sent', ReceiptEffect.IGNORED],
      ['queued', ReceiptEffect.IGNORED],
      ['undelivered', ReceiptEffect.IGNORED],
    ]);
    expect((await metric('replay', 'delivered')) - replayBefore).toBe(2);
  });

  it('when the provider reports undelivered with 21610, the record is UNDELIVERED / RECIPIENT_UNSUBSCRIBED and the number is suppressed', async () => {
    const { delivery, request } = await sent();
    const a = await sendStatusCallback(request, delivery.providerReference, 'undelivered', n.baseUrl, {
      errorCode: '21610',
    });
    expect(a.status).toBe(200);
    const got = await get(delivery.id);
    expect(got.status).toBe(DeliveryStatus.UNDELIVERED);
    expect(got.failure).toBe(DeliveryFailure.RECIPIENT_UNSUBSCRIBED);
    expect(sink.added).toContainEqual({
      channel: 'sms',
      recipient: TO,
      reason: 'unsubscribed',
      source: 'receipt:twilio',
    });
    const list = await unary<{ deliveries: WireDelivery[] }>(
      n.notificationGrpc,
      'listDeliveries',
      {
        status: DeliveryStatus.UNDELIVERED,
        failure: DeliveryFailure.RECIPIENT_UNSUBSCRIBED,
      },
      { metadata },
    );
    expect(list.response.deliveries.map((d) => d.id)).toContain(delivery.id);
  });

  it('when a valid callback names a message we do not know, it is 200 and counted as unknown_message', async () => {
    const before = await metric('unknown_message', 'delivered');
    const a = await postSignedForm(
      `${n.baseUrl}/webhooks/sms/twilio/status`,
      `${PUBLIC}/webhooks/sms/twilio/status`,
      { MessageSid: 'SMffffffffffffffffffffffffffffffff', MessageStatus: 'delivered' },
    );
    expect(a.status).toBe(200);
    expect((await metric('unknown_message', 'delivered')) - before).toBe(1);
  });

  it('when an inbound STOP (or a synonym) arrives, the sender is suppressed; START and UNSTOP lift it', async () => {
    let sid = 0;
    const inbound = (from: string, body: string, signature?: string | null) =>
      postSignedForm(
        `${n.baseUrl}/webhooks/sms/twilio/inbound`,
        `${PUBLIC}/webhooks/sms/twilio/inbound`,
        { MessageSid: `SMin${++sid}`, From: from, To: '+15550001111', Body: body },
        { signature },
      );
    sink.added.length = 0;
    sink.removed.length = 0;
    expect((await inbound('+15557654321', 'STOP')).status).toBe(200);
    expect((await inbound('+15557654322', ' unsubscribe ')).status).toBe(200);
    expect((await inbound('+15557654323', 'please stop texting me')).status).toBe(200);
    expect((await inbound('+15557654324', 'STOP', 'forged')).status).toBe(403);
    expect(sink.added).toEqual([
      { channel: 'sms', recipient: '+15557654321', reason: 'stop_keyword', source: 'receipt:twilio' },
      { channel: 'sms', recipient: '+15557654322', reason: 'stop_keyword', source: 'receipt:twilio' },
    ]);
    expect((await inbound('+15557654321', 'START')).status).toBe(200);
    expect((await inbound('+15557654322', 'unstop')).status).toBe(200);
    expect(sink.removed).toEqual([
      { channel: 'sms', recipient: '+15557654321' },
      { channel: 'sms', recipient: '+15557654322' },
    ]);
  });

  it('when the body is over webhooks.max_body_bytes, it is 413 and nothing changes', async () => {
    const { delivery, request } = await sent();
    const big = await postSignedForm(
      `${n.baseUrl}/webhooks/sms/twilio/status`,
      `${PUBLIC}/webhooks/sms/twilio/status`,
      { MessageSid: delivery.providerReference, MessageStatus: 'delivered', Pad: 'x'.repeat(2100) },
    );
    expect(big.status).toBe(413);
    expect((await get(delivery.id)).status).toBe(DeliveryStatus.SENT);
    // Exactly at the bound is read.
    const form = { MessageSid: delivery.providerReference, MessageStatus: 'delivered', Pad: '' };
    form.Pad = 'x'.repeat(2048 - new URLSearchParams(form).toString().length);
    expect(new URLSearchParams(form).toString().length).toBe(2048);
    const atBound = await postSignedForm(
      `${n.baseUrl}/webhooks/sms/twilio/status`,
      `${PUBLIC}/webhooks/sms/twilio/status`,
      form,
    );
    expect(atBound.status).toBe(200);
    expect((await get(delivery.id)).status).toBe(DeliveryStatus.DELIVERED);
    void request;
  });

  it('when the backend is not configured, the route is 404 and needs no bearer token to say so', async () => {
    const a = await postSignedForm(
      `${n.baseUrl}/webhooks/sms/nope/status`,
      `${PUBLIC}/webhooks/sms/nope/status`,
      {
        MessageSid: 'SM1',
        MessageStatus: 'delivered',
      },
    );
    expect(a.status).toBe(404);
    const wrongMethod = await fetch(`${n.baseUrl}/webhooks/sms/twilio/status`);
    expect(wrongMethod.status).toBe(405);
  });
});
