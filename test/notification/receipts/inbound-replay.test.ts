/**
 * Replayed Twilio callbacks are refused (issue 22). Twilio signs no timestamp, so a captured signed
 * STOP replayed after the user sent START would opt the number out again, and the operator cannot
 * lift a STOP. The service remembers the MessageSid of every inbound message and the MessageSid and
 * MessageStatus of every status callback (per backend); one seen before is answered 200 (the
 * provider must not retry it), applies nothing and is counted `replay`. Real app with its real
 * suppression list and replay store, on the memory store and on real PostgreSQL. A signed inbound
 * message from a sender that is not a phone number is answered 200 and ignored, counted.
 */
import { DeliveryStatus } from '../../../shared/gen/svc/notification/v1/notification_pb';
import { createTestDatabase } from '../../support/database';
import { unary } from '../../support/grpc-clients';
import {
  FAST_DELIVERY,
  startNotificationApp,
  type RunningNotificationApp,
} from '../../support/notification-app';
import {
  gatewayConfig,
  postSignedForm,
  sendStatusCallback,
  startTwilioPeer,
  type TwilioPeer,
} from '../channels/sms/twilio-peer';

const PUBLIC = 'https://notify.example.com';
const TOKEN = 'token-inbound-replay-0123456789ab';
const metadata = { authorization: `Bearer ${TOKEN}` };

type WireDelivery = {
  id: string;
  status: DeliveryStatus;
  providerReference: string;
  receipts: Array<{ eventId: string }>;
};

describe.each([
  ['the memory store', 'memory'],
  ['the database store on real PostgreSQL', 'postgres'],
] as const)('replayed SMS callbacks on %s', (_label, storeKind) => {
  let peer: TwilioPeer;
  let n: RunningNotificationApp;
  let drop: (() => Promise<void>) | undefined;
  let sid = 0;

  beforeAll(async () => {
    peer = await startTwilioPeer();
    const db = storeKind === 'postgres' ? await createTestDatabase('inbound_replay') : undefined;
    drop = db?.drop;
    n = await startNotificationApp({
      server: { api_tokens: [TOKEN] },
      ...(db ? { database: { url: db.url } } : {}),
      delivery: { ...FAST_DELIVERY, store_backend: db ? 'database' : 'memory' },
      sms_backends: [{ name: 'twilio', sms_gateway: gatewayConfig(peer) }],
      webhooks: { public_base_url: PUBLIC },
    });
  });

  afterAll(async () => {
    await n?.close();
    await peer?.close();
    await drop?.();
  });

  const inbound = (form: Record<string, string>) =>
    postSignedForm(`${n.baseUrl}/webhooks/sms/twilio/inbound`, `${PUBLIC}/webhooks/sms/twilio/inbound`, form);
  const message = (from: string, body: string) => ({
    MessageSid: `SMin${String(++sid).padStart(30, '0')}`,
    AccountSid: 'AC0123456789abcdef0123456789abcdef',
    From: from,
    To: '+15550001111',
    Body: body,
  });
  const optedOut = (number: string) => n.app.suppressions.isSuppressed('sms', number);
  const count = async (outcome: string, type?: string) => {
    const m = await n.app.registry.getSingleMetric('notification_receipts_total')!.get();
    return m.values
      .filter(
        (v) =>
          v.labels.backend === 'twilio' &&
          v.labels.outcome === outcome &&
          (type === undefined || v.labels.type === type),
      )
      .reduce((sum, v) => sum + v.value, 0);
  };

  it('when a signed STOP is replayed after START, the number stays opted in and the replay is counted', async () => {
    const number = '+15557650001';
    const stop = message(number, 'STOP');
    expect((await inbound(stop)).status).toBe(200);
    expect(await optedOut(number)).toBe(true);
    expect((await inbound(message(number, 'START'))).status).toBe(200);
    expect(await optedOut(number)).toBe(false);

    const replaysBefore = await count('replay', 'inbound_stop');
    const replay = await inbound(stop);
    expect(replay.status).toBe(200);
    expect(replay.body).toContain('<Response>');
    expect(await optedOut(number)).toBe(false);
    expect(await count('replay', 'inbound_stop')).toBe(replaysBefore + 1);
  });

  it('when a replayed START follows a new STOP, the number stays opted out', async () => {
    const number = '+15557650002';
    const start = message(number, 'START');
    expect((await inbound(message(number, 'STOP'))).status).toBe(200);
    expect((await inbound(start)).status).toBe(200);
    expect(await optedOut(number)).toBe(false);
    expect((await inbound(message(number, 'STOP'))).status).toBe(200);
    expect((await inbound(start)).status).toBe(200);
    expect(await optedOut(number)).toBe(true);
  });

  it('when a signed inbound message has no MessageSid, it cannot be told from a replay: 200, ignored', async () => {
    const before = await count('verified', 'inbound_stop');
    const noSid = message('+15557650003', 'STOP') as Record<string, string>;
    delete noSid.MessageSid;
    expect((await inbound(noSid)).status).toBe(200);
    expect(await optedOut('+15557650003')).toBe(false);
    expect(await count('verified', 'inbound_stop')).toBe(before);
  });

  it('when a signed inbound STOP comes from a WhatsApp id or an alphanumeric sender, it is 200, ignored and counted', async () => {
    const before = await count('unsupported_sender');
    for (const from of ['whatsapp:+15557650009', 'ACMEBANK', '', '😀漢字שלום']) {
      const answer = await inbound(message(from, 'STOP'));
      expect(answer.status).toBe(200);
      expect(answer.body).toContain('<Response>');
    }
    expect(await count('unsupported_sender')).toBe(before + 4);
    expect(await optedOut('+15557650009')).toBe(false);
    // A real number in the same form still works.
    expect((await inbound(message('+1 (555) 765-0010', 'STOP'))).status).toBe(200);
    expect(await optedOut('+15557650010')).toBe(true);
  });

  it('when a signed 21610 status callback is replayed after START, the number stays opted in and the record is unchanged', async () => {
    const before = peer.requests.length;
    const { deliveryId } = (
      await unary<{ deliveryId: string }>(
        n.notificationGrpc,
        'sendSms',
        { to: '+15557650004', body: 'hi' },
        { metadata },
      )
    ).response;
    let d: WireDelivery | undefined;
    for (let i = 0; i < 1500; i++) {
      d = (
        await unary<{ delivery: WireDelivery }>(
          n.notificationGrpc,
          'getDelivery',
          { id: deliveryId },
          { metadata },
        )
      ).response.delivery;
      if (d.status === DeliveryStatus.SENT) break;
      await new Promise((r) => setTimeout(r, 10));
    }
    expect(d?.status).toBe(DeliveryStatus.SENT);
    const request = peer.requests[before]!;
    const callback = () =>
      sendStatusCallback(request, d!.providerReference, 'undelivered', n.baseUrl, { errorCode: '21610' });

    expect((await callback()).status).toBe(200);
    expect(await optedOut('+15557650004')).toBe(true);
    expect((await inbound(message('+15557650004', 'START'))).status).toBe(200);
    expect(await optedOut('+15557650004')).toBe(false);

    const replaysBefore = await count('replay');
    expect((await callback()).status).toBe(200);
    expect(await optedOut('+15557650004')).toBe(false);
    expect(await count('replay')).toBe(replaysBefore + 1);
    const after = (
      await unary<{ delivery: WireDelivery }>(
        n.notificationGrpc,
        'getDelivery',
        { id: deliveryId },
        { metadata },
      )
    ).response.delivery;
    expect(after.status).toBe(DeliveryStatus.UNDELIVERED);
    expect(after.receipts).toHaveLength(1);
  });
});
