/**
 * A receipt only ever touches deliveries of the backend whose route and key it came through (issue
 * 22). Two callers, two email backends (an SMTP relay and a SendGrid-style http_api with a signed
 * event webhook) and two SMS backends (two Twilio stand-ins that hand out the same MessageSids): a
 * signed event on one backend's route that names a delivery of the other backend, by our delivery id
 * or by the provider's message id, changes nothing and suppresses nobody; the same event for a
 * delivery of its own backend still applies. Real app over grpc-js, memory store and real PostgreSQL.
 */
import {
  DeliveryStatus,
  type DeliveryFailure,
} from '../../../shared/gen/svc/notification/v1/notification_pb';
import { createTestDatabase } from '../../support/database';
import { unary } from '../../support/grpc-clients';
import {
  FAST_DELIVERY,
  startNotificationApp,
  type RunningNotificationApp,
} from '../../support/notification-app';
import { startReceiptStandIns, type ReceiptStandIns } from '../../support/receipt-stand-ins';
import { postEvents } from '../channels/email/v3-peer';
import { sendStatusCallback } from '../channels/sms/twilio-peer';

const PUBLIC = 'https://notify.example.com';
const ALICE = 'token-cross-backend-alice-0123456789';
const BOB = 'token-cross-backend-bob-0123456789ab';
const as = (token: string) => ({ metadata: { authorization: `Bearer ${token}` } });

type WireDelivery = {
  id: string;
  backend: string;
  status: DeliveryStatus;
  failure: DeliveryFailure;
  providerReference: string;
  receipts: Array<{ eventId: string; event: string }>;
};

describe.each([
  ['the memory store', 'memory'],
  ['the database store on real PostgreSQL', 'postgres'],
] as const)('receipts stay within their backend on %s', (_label, storeKind) => {
  let standIns: ReceiptStandIns;
  let n: RunningNotificationApp;
  let drop: (() => Promise<void>) | undefined;
  let seq = 0;

  beforeAll(async () => {
    standIns = await startReceiptStandIns();
    const db = storeKind === 'postgres' ? await createTestDatabase('cross_backend_receipts') : undefined;
    drop = db?.drop;
    n = await startNotificationApp({
      server: { api_tokens: [ALICE, BOB] },
      ...(db ? { database: { url: db.url } } : {}),
      delivery: { ...FAST_DELIVERY, store_backend: db ? 'database' : 'memory' },
      webhooks: { public_base_url: PUBLIC },
      ...standIns.config,
    });
  });

  afterAll(async () => {
    await n?.close();
    await standIns?.close();
    await drop?.();
  });

  const get = async (token: string, id: string) =>
    (await unary<{ delivery: WireDelivery }>(n.notificationGrpc, 'getDelivery', { id }, as(token))).response
      .delivery;

  async function settled(token: string, id: string): Promise<WireDelivery> {
    for (let i = 0; i < 1500; i++) {
      const d = await get(token, id);
      if (d.status === DeliveryStatus.SENT) return d;
      await new Promise((r) => setTimeout(r, 10));
    }
    throw new Error('not sent');
  }

  const sendEmail = async (token: string, to: string, backend: string) =>
    settled(
      token,
      (
        await unary<{ deliveryId: string }>(
          n.notificationGrpc,
          'sendEmail',
          { to: [to], subject: 'Hello', text: 'Hi', backend },
          as(token),
        )
      ).response.deliveryId,
    );

  const sendSms = async (token: string, to: string, backend: string) =>
    settled(
      token,
      (
        await unary<{ deliveryId: string }>(
          n.notificationGrpc,
          'sendSms',
          { to, body: 'hi', backend },
          as(token),
        )
      ).response.deliveryId,
    );

  const bounce = (email: string, extra: Record<string, unknown>) => ({
    email,
    event: 'bounce',
    type: 'bounce',
    sg_event_id: `ev-cross-${++seq}`,
    timestamp: Math.floor(Date.now() / 1000),
    ...extra,
  });

  const receiptCount = async (backend: string, outcome: string) => {
    const m = await n.app.registry.getSingleMetric('notification_receipts_total')!.get();
    return m.values
      .filter((v) => v.labels.backend === backend && v.labels.outcome === outcome)
      .reduce((sum, v) => sum + v.value, 0);
  };

  it("when a signed SendGrid event names (by delivery_id) another caller's email sent through SMTP, that delivery is untouched and the address is not suppressed", async () => {
    const alices = await sendEmail(ALICE, 'alice.customer@example.com', 'relay');
    const bobs = await sendEmail(BOB, 'bob.customer@example.com', 'sendgrid');
    expect([alices.backend, bobs.backend]).toEqual(['relay', 'sendgrid']);
    const foreignBefore = await receiptCount('sendgrid', 'foreign_backend');

    const answer = await postEvents(
      `${n.baseUrl}/webhooks/email/sendgrid/events`,
      [
        // Alice's SMTP email, named by our id (and a message id the http_api backend never gave out).
        bounce('alice.customer@example.com', {
          delivery_id: alices.id,
          sg_message_id: 'msg-does-not-exist.filter1',
        }),
        // Bob's own email through this backend, in the same batch: applies.
        bounce('bob.customer@example.com', {
          delivery_id: bobs.id,
          sg_message_id: `${bobs.providerReference}.filter1`,
        }),
      ],
      standIns.keys.privateKey,
    );
    expect(answer.status).toBe(200);

    const alicesNow = await get(ALICE, alices.id);
    expect(alicesNow.status).toBe(DeliveryStatus.SENT);
    expect(alicesNow.receipts).toEqual([]);
    expect(await n.app.suppressions.isSuppressed('email', 'alice.customer@example.com')).toBe(false);
    expect(await receiptCount('sendgrid', 'foreign_backend')).toBe(foreignBefore + 1);

    expect((await get(BOB, bobs.id)).status).toBe(DeliveryStatus.UNDELIVERED);
    expect(await n.app.suppressions.isSuppressed('email', 'bob.customer@example.com')).toBe(true);
  });

  it("when both SMS backends gave out the same MessageSid, each backend's status callback moves only its own delivery", async () => {
    // Both stand-ins count their sids from 1: the first message on each account has the same sid.
    const alices = await sendSms(ALICE, '+15557770001', 'twilio-a');
    const requestA = standIns.twilio['twilio-a'].requests.at(-1)!;
    const bobs = await sendSms(BOB, '+15557770002', 'twilio-b');
    const requestB = standIns.twilio['twilio-b'].requests.at(-1)!;
    expect([alices.backend, bobs.backend]).toEqual(['twilio-a', 'twilio-b']);
    expect(bobs.providerReference).toBe(alices.providerReference);
    const sid = alices.providerReference;

    // B's callback (signed for B's route; the stand-ins share one auth token: the route decides).
    expect((await sendStatusCallback(requestB, sid, 'delivered', n.baseUrl)).status).toBe(200);
    expect((await get(BOB, bobs.id)).status).toBe(DeliveryStatus.DELIVERED);
    expect(await get(ALICE, alices.id)).toMatchObject({ status: DeliveryStatus.SENT, receipts: [] });

    // A's callback for its own message applies to Alice's only.
    const onA = await sendStatusCallback(requestA, sid, 'undelivered', n.baseUrl, { errorCode: '30003' });
    expect(onA.status).toBe(200);
    expect((await get(ALICE, alices.id)).status).toBe(DeliveryStatus.UNDELIVERED);
    expect((await get(BOB, bobs.id)).status).toBe(DeliveryStatus.DELIVERED);
  });
});
