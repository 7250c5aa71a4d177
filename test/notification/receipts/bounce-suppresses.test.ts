/**
 * A receipt and the suppression list together, in the real app (no test sink): a hard bounce posted
 * by the provider puts the address on the service's suppression list, so the next send to it is
 * FAILED / RECIPIENT_SUPPRESSED at once and the provider is not contacted again; START-like removal
 * through RemoveSuppression lets a send through again.
 */
import {
  Channel,
  DeliveryFailure,
  DeliveryStatus,
} from '../../../shared/gen/svc/notification/v1/notification_pb';
import {
  FAST_DELIVERY,
  startNotificationApp,
  type RunningNotificationApp,
} from '../../support/notification-app';
import { unary } from '../../support/grpc-clients';
import { eventWebhookKeys, postEvents, startV3Peer, type V3Peer } from '../channels/email/v3-peer';
import { sendgridBackend } from '../../support/receipt-stand-ins';
import { finalDelivery } from '../../support/final-delivery';

const TOKEN = 'token-bounce-suppresses-0123456789';
const metadata = { authorization: `Bearer ${TOKEN}` };

let v3: V3Peer;
let n: RunningNotificationApp;
const keys = eventWebhookKeys();

beforeAll(async () => {
  v3 = await startV3Peer();
  n = await startNotificationApp({
    server: { api_tokens: [TOKEN] },
    delivery: { ...FAST_DELIVERY, store_backend: 'memory' },
    mailer: {
      backends: [sendgridBackend(v3, keys.publicKey)],
    },
  });
});
afterAll(async () => {
  await n?.close();
  await v3?.close();
});

type WireDelivery = {
  id: string;
  status: DeliveryStatus;
  failure: DeliveryFailure;
  providerReference: string;
};
const get = async (id: string) =>
  (await unary<{ delivery: WireDelivery }>(n.notificationGrpc, 'getDelivery', { id }, { metadata })).response
    .delivery;
const send = async (to: string) =>
  (
    await unary<{ deliveryId: string }>(
      n.notificationGrpc,
      'sendEmail',
      { to: [to], subject: 'Hello', text: 'Hi' },
      { metadata },
    )
  ).response.deliveryId;
function settled(id: string): Promise<WireDelivery> {
  return finalDelivery(() => get(id), id);
}

it('a hard bounce suppresses the address: the next send reaches no provider; removing the entry lets it through', async () => {
  const first = await settled(await send('Gone@Example.com'));
  expect(first.status).toBe(DeliveryStatus.SENT);
  const bounce = {
    email: 'Gone@Example.com',
    event: 'bounce',
    type: 'bounce',
    sg_event_id: 'ev-bounce-1',
    sg_message_id: `${first.providerReference}.filter0001`,
    timestamp: Math.floor(Date.now() / 1000),
    delivery_id: first.id,
  };
  expect(
    (await postEvents(`${n.baseUrl}/webhooks/email/sendgrid/events`, [bounce], keys.privateKey)).status,
  ).toBe(200);
  expect((await get(first.id)).status).toBe(DeliveryStatus.UNDELIVERED);

  const requestsBefore = v3.requests.length;
  const second = await settled(await send('gone@example.com'));
  expect([second.status, second.failure]).toEqual([
    DeliveryStatus.FAILED,
    DeliveryFailure.RECIPIENT_SUPPRESSED,
  ]);
  expect(v3.requests.length).toBe(requestsBefore);

  await unary(
    n.notificationGrpc,
    'removeSuppression',
    { channel: Channel.EMAIL, recipient: 'gone@example.com' },
    { metadata },
  );
  const third = await settled(await send('gone@example.com'));
  expect(third.status).toBe(DeliveryStatus.SENT);
  expect(v3.requests.length).toBe(requestsBefore + 1);
});
