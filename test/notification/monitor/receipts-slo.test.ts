/**
 * The receipts SLO through the real app: an SMS backend with status callbacks (sms_gateway and
 * webhooks.public_base_url) gives `notification-sms-receipts` at a stand-in monitor, and signed status
 * callbacks from the Twilio stand-in become its events: delivered good, undelivered for the network
 * bad, undelivered for an unknown number none, a replayed callback nothing more.
 */
import { unary } from '../../support/grpc-clients';
import { FAST_DELIVERY } from '../../support/notification-app';
import { waitFor } from '../../support/wait';
import {
  gatewayConfig,
  sendStatusCallback,
  startTwilioPeer,
  type TwilioPeer,
} from '../channels/sms/twilio-peer';
import { startStandInMonitor, type StandInMonitor } from './stand-in-monitor';
import { startReportingApp, type ReportingApp } from './support';

const PUBLIC = 'https://notify.example.com';

let peer: TwilioPeer;
let monitor: StandInMonitor;
let n: ReportingApp;

beforeAll(async () => {
  peer = await startTwilioPeer();
  monitor = await startStandInMonitor();
  n = await startReportingApp({
    sms_backends: [{ name: 'twilio', sms_gateway: gatewayConfig(peer) }],
    delivery: FAST_DELIVERY,
    webhooks: { public_base_url: PUBLIC },
    monitor: { grpc_address: monitor.address, flush_interval_ms: 20 },
  });
});

afterAll(async () => {
  await n?.app.stop();
  await monitor?.stop();
  await peer?.close();
});

/** Sends one SMS and waits until the stand-in accepted it; its sid and the request the peer saw. */
async function sent(): Promise<{ sid: string; request: TwilioPeer['requests'][number] }> {
  const before = peer.requests.length;
  const { deliveryId } = (
    await unary<{ deliveryId: string }>(n.client, 'sendSms', { to: '+15551234567', body: 'hi 👋 你好 שלום' })
  ).response;
  let record = await n.app.deliveries.get(deliveryId);
  for (let i = 0; i < 1500 && record.status !== 'sent'; i++) {
    await new Promise((r) => setTimeout(r, 10));
    record = await n.app.deliveries.get(deliveryId);
  }
  expect(record.status).toBe('sent');
  return { sid: record.providerReference!, request: peer.requests[before]! };
}

const totals = () =>
  (monitor.events.get('notification-sms-receipts') ?? []).reduce(
    (t, e) => ({ good: t.good + e.good, bad: t.bad + e.bad }),
    { good: 0, bad: 0 },
  );

it('registers the SMS receipts SLO only (email and push have no receipts configured)', async () => {
  await waitFor(() => monitor.ratioSlos.has('notification-sms-receipts'), 'the receipts SLO registered');
  expect([...monitor.ratioSlos.keys()].filter((k) => k.endsWith('-receipts'))).toEqual([
    'notification-sms-receipts',
  ]);
  expect(monitor.ratioSlos.get('notification-sms-receipts')!.target).toBe(0.99);
});

it('counts status callbacks: delivered good, undelivered by the network bad, an unknown number none, a replay nothing more', async () => {
  const a = await sent();
  const b = await sent();
  const c = await sent();
  expect((await sendStatusCallback(a.request, a.sid, 'delivered', n.baseUrl)).status).toBe(200);
  expect((await sendStatusCallback(a.request, a.sid, 'delivered', n.baseUrl)).status).toBe(200); // replay
  expect((await sendStatusCallback(a.request, a.sid, 'read', n.baseUrl)).status).toBe(200); // already final
  // 30008: unknown error (carrier/network), the provider's; 30005: unknown destination, the recipient's.
  await sendStatusCallback(b.request, b.sid, 'undelivered', n.baseUrl, { errorCode: '30008' });
  await sendStatusCallback(c.request, c.sid, 'undelivered', n.baseUrl, { errorCode: '30005' });
  // A barrier: one more delivered receipt, sent last. Once its event is in, anything the earlier
  // callbacks would have counted is in too (callbacks are recorded in order, events flushed in order).
  const d = await sent();
  await sendStatusCallback(d.request, d.sid, 'delivered', n.baseUrl);
  await waitFor(() => totals().good === 2, 'the barrier receipt at the monitor');
  expect(totals()).toEqual({ good: 2, bad: 1 });
  // A receipt is no second delivery event: the four SENT deliveries count once each. The delivery
  // event of the last SMS is told after its record reads SENT and flushed on its own, so it may
  // trail the barrier receipt: wait for four, then the receipts must not have added any.
  const delivery = () =>
    (monitor.events.get('notification-sms-delivery') ?? []).reduce((s, e) => s + e.good + e.bad, 0);
  await waitFor(() => delivery() >= 4, 'the four delivery events at the monitor');
  expect(delivery()).toBe(4);
});
