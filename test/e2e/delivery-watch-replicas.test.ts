/**
 * Two notification processes on one PostgreSQL: a WatchDeliveries stream on replica A sees every
 * change of the SMS sent through replica B exactly once (the sequencer numbers the events of both,
 * NOTIFY wakes the other's hub, the hub reads the log), including a DELIVERED receipt posted to B and a
 * send B stops for a suppressed recipient; a watch resumed on B after a cursor from A misses nothing.
 */
import type * as grpc from '@grpc/grpc-js';
import {
  Channel,
  DeliveryEventType,
  DeliveryFailure,
  DeliveryStatus,
  NotificationService,
} from '../../shared/gen/svc/notification/v1/notification_pb';
import { createTestDatabase } from '../support/database';
import { grpcClient, unary, type GenericClient } from '../support/grpc-clients';
import { startServiceProcess, type ServiceProcess } from '../support/service-process';
import { waitFor } from '../support/wait';
import {
  gatewayConfig,
  sendStatusCallback,
  startTwilioPeer,
  type TwilioPeer,
} from '../notification/channels/sms/twilio-peer';

const PUBLIC = 'https://notify.example.com';
const SENDS = 20;

interface Frame {
  cursor: string;
  type: DeliveryEventType;
  deliveryId: string;
  status: DeliveryStatus;
  failure: DeliveryFailure;
  providerReference: string;
}

let db: { url: string; drop(): Promise<void> };
let peer: TwilioPeer;
let a: ServiceProcess;
let b: ServiceProcess;
let onA: GenericClient;
let onB: GenericClient;

beforeAll(async () => {
  db = await createTestDatabase('dwatch_replicas');
  peer = await startTwilioPeer();
  const env = {
    SVC_NOTIFICATION__DATABASE__URL: db.url,
    SVC_NOTIFICATION__SMS_BACKENDS: JSON.stringify([{ name: 'twilio', sms_gateway: gatewayConfig(peer) }]),
    SVC_NOTIFICATION__WEBHOOKS__PUBLIC_BASE_URL: PUBLIC,
    SVC_NOTIFICATION__DELIVERY__POLL_INTERVAL_MS: '100',
  };
  [a, b] = await Promise.all([
    startServiceProcess('notification', env),
    startServiceProcess('notification', env),
  ]);
  onA = grpcClient(NotificationService, `127.0.0.1:${a.grpcPort}`);
  onB = grpcClient(NotificationService, `127.0.0.1:${b.grpcPort}`);
}, 120_000);

afterAll(async () => {
  onA?.close();
  onB?.close();
  await Promise.all([a?.stop(), b?.stop()]);
  await peer?.close();
  await db?.drop();
});

function watch(client: GenericClient, request: Record<string, unknown> = {}) {
  const call = (client.watchDeliveries as (r: unknown) => grpc.ClientReadableStream<Frame>).call(
    client,
    request,
  );
  const frames: Frame[] = [];
  call.on('data', (f: Frame) => frames.push(f));
  call.on('error', () => undefined);
  const changes = () => frames.filter((f) => f.type === DeliveryEventType.CHANGE);
  return { call, frames, changes };
}

const sendSms = async (client: GenericClient, to = '+15551234567') =>
  (await unary<{ deliveryId: string }>(client, 'sendSms', { to, body: 'hi' })).response.deliveryId;

test('a watcher on replica A sees each change of the sends through replica B exactly once, receipts and suppressions too', async () => {
  const w = watch(onA);
  await waitFor(() => w.frames.length === 1, 'live on A', 30_000);
  expect(w.frames[0]!.type).toBe(DeliveryEventType.LIVE);

  const ids: string[] = [];
  for (let i = 0; i < SENDS; i++) ids.push(await sendSms(onB));
  const sentOnA = () => w.changes().filter((f) => f.status === DeliveryStatus.SENT);
  await waitFor(() => sentOnA().length >= SENDS, 'every SENT on A', 60_000);

  // A signed DELIVERED receipt posted to B's HTTP port.
  const firstSent = sentOnA()[0]!;
  const request = peer.requests.find((r) => r.form.To === '+15551234567')!;
  expect(
    (
      await sendStatusCallback(
        request,
        firstSent.providerReference,
        'delivered',
        `http://127.0.0.1:${b.httpPort}`,
      )
    ).status,
  ).toBe(200);
  await waitFor(
    () => w.changes().some((f) => f.status === DeliveryStatus.DELIVERED),
    'DELIVERED on A',
    30_000,
  );

  // A suppression added through B stops the next send through B: FAILED at once, seen on A.
  const blocked = '+15559990000';
  await unary(onB, 'addSuppression', { channel: Channel.SMS, recipient: blocked });
  const stopped = await sendSms(onB, blocked);
  await waitFor(() => w.changes().some((f) => f.deliveryId === stopped), 'suppressed send on A', 30_000);
  w.call.cancel();

  const keys = w.changes().map((f) => `${f.deliveryId}:${f.status}`);
  expect(new Set(keys).size).toBe(keys.length);
  const expected = new Set([
    ...ids.flatMap((id) => [`${id}:${DeliveryStatus.PENDING}`, `${id}:${DeliveryStatus.SENT}`]),
    `${firstSent.deliveryId}:${DeliveryStatus.DELIVERED}`,
    `${stopped}:${DeliveryStatus.FAILED}`,
  ]);
  expect(new Set(keys)).toEqual(expected);
  expect(w.changes().find((f) => f.deliveryId === stopped)!.failure).toBe(
    DeliveryFailure.RECIPIENT_SUPPRESSED,
  );
});

test('a watch resumed on replica B after a cursor from replica A misses nothing and repeats nothing', async () => {
  const first = watch(onA);
  await waitFor(() => first.frames.length === 1, 'live on A', 30_000);
  const ids: string[] = [];
  const sending = (async () => {
    for (let i = 0; i < 10; i++) ids.push(await sendSms(i % 2 === 0 ? onA : onB));
  })();
  await waitFor(() => first.changes().length >= 5, 'five changes on A', 60_000);
  first.call.cancel();
  const cut = first.changes()[4]!;
  const before = first.frames
    .slice(0, first.frames.indexOf(cut) + 1)
    .filter((f) => f.type === DeliveryEventType.CHANGE);
  const second = watch(onB, { afterCursor: cut.cursor });
  await sending;
  await waitFor(() => before.length + second.changes().length >= 20, 'every change', 60_000);
  second.call.cancel();
  const all = [...before, ...second.changes()].map((f) => `${f.deliveryId}:${f.status}`);
  expect(all).toHaveLength(20);
  expect(new Set(all)).toEqual(
    new Set(ids.flatMap((id) => [`${id}:${DeliveryStatus.PENDING}`, `${id}:${DeliveryStatus.SENT}`])),
  );
});
