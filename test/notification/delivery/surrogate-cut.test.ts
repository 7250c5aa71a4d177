/**
 * A provider's error text with an emoji across the cut (issue 23, "Lone surrogates"): before the one
 * cut helper, `safeText` kept the first half of the pair, `JSON.stringify` wrote `\ud83d` into the
 * completion's jsonb, PostgreSQL refused the whole statement, the lease ran out and the message was
 * sent again, forever. Through the real service on real PostgreSQL, with a Twilio-style stand-in.
 */
import { DeliveryStatus } from '../../../shared/gen/svc/notification/v1/notification_pb';
import {
  FAST_DELIVERY,
  startNotificationApp,
  type RunningNotificationApp,
} from '../../support/notification-app';
import { createTestDatabase } from '../../support/database';
import { unary } from '../../support/grpc-clients';
import { gatewayConfig, startTwilioPeer, twilioError, type TwilioPeer } from '../channels/sms/twilio-peer';
import { finalDelivery } from '../../support/final-delivery';

const TOKEN = 'token-surrogate-0123456789abcdef';
const metadata = { authorization: `Bearer ${TOKEN}` };

interface WireDelivery {
  status: DeliveryStatus;
  attempts: number;
  lastError: string;
  attemptLog: { error: string }[];
}

const LONE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

let peer: TwilioPeer;
let n: RunningNotificationApp;
let db: { url: string; drop(): Promise<void> };

beforeAll(async () => {
  peer = await startTwilioPeer();
  db = await createTestDatabase('surrogate');
  n = await startNotificationApp({
    server: { api_tokens: [TOKEN] },
    database: { url: db.url },
    // A short lease: a completion PostgreSQL refused would have the record claimed and sent again
    // within the wait below.
    delivery: {
      ...FAST_DELIVERY,
      store_backend: 'database',
      lease_seconds: 1,
      attempt_timeout_ms: 800,
      max_attempts: 3,
    },
    sms_backends: [{ name: 'twilio', sms_gateway: gatewayConfig(peer, { timeout_ms: 500 }) }],
  });
});

afterAll(async () => {
  await n?.close();
  await peer?.close();
  await db?.drop();
});

async function get(id: string): Promise<WireDelivery> {
  return (await unary<{ delivery: WireDelivery }>(n.notificationGrpc, 'getDelivery', { id }, { metadata }))
    .response.delivery;
}

function final(id: string): Promise<WireDelivery> {
  return finalDelivery(() => get(id), id, { tries: 1000, stepMs: 20 });
}

describe('a provider answer with an emoji across the cut, on PostgreSQL', () => {
  // The reason keeps at most 300 characters of the provider's text: the emoji starts at 298, 299
  // (its halves on both sides of the cut) and 300.
  test.each([298, 299, 300])(
    'emoji at %i of the message: FAILED once, the provider asked once, the reason is whole characters',
    async (at) => {
      peer.requests.length = 0;
      const message = `${'x'.repeat(at)}😀 中文 שלום مرحبا ${'y'.repeat(40)}`;
      peer.script.push(twilioError(400, 21211, message));
      const to = `+1555000${String(at).padStart(4, '0')}`;
      const { response } = await unary<{ deliveryId: string }>(
        n.notificationGrpc,
        'sendSms',
        { to, body: `code ${at}` },
        { metadata },
      );
      const d = await final(response.deliveryId);
      expect(d.status).toBe(DeliveryStatus.FAILED);
      expect(d.attempts).toBe(1);
      expect(LONE.test(d.lastError)).toBe(false);
      expect(d.lastError).toContain('xxx');
      // Longer than a lease: a refused completion would have been claimed and sent again by now.
      await new Promise((resolve) => setTimeout(resolve, 2500));
      expect(peer.requests.filter((r) => r.form.To === to)).toHaveLength(1);
      expect((await get(response.deliveryId)).attempts).toBe(1);
    },
  );

  test('a provider message that carries a lone surrogate itself is stored well-formed, sent once', async () => {
    peer.requests.length = 0;
    // JSON that decodes to half an emoji: the stand-in sends the raw escape.
    peer.script.push({
      kind: 'answer',
      status: 400,
      body: '{"code":21211,"message":"bad number \\ud83d here","status":400}',
    });
    const to = '+15550009876';
    const { response } = await unary<{ deliveryId: string }>(
      n.notificationGrpc,
      'sendSms',
      { to, body: 'lone' },
      { metadata },
    );
    const d = await final(response.deliveryId);
    expect(d.status).toBe(DeliveryStatus.FAILED);
    expect(LONE.test(d.lastError)).toBe(false);
    expect(d.lastError).toContain('bad number \ufffd here');
    await new Promise((resolve) => setTimeout(resolve, 2500));
    expect(peer.requests.filter((r) => r.form.To === to)).toHaveLength(1);
  });
});
