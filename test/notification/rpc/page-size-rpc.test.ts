/**
 * The one page-size rule (shared/storage/page-size.ts) on every list RPC, over real gRPC against the
 * real app: page_size 0 is the list's default, 1 is one, the maximum is the maximum, and one above the
 * maximum is capped to it rather than refused. GetInbox's default is inbox.max_page_size (3 here);
 * ListDeliveries and ListSuppressions default to 50 and stop at 500. The admin route's `limit` is in
 * test/notification/admin/gateway-http.test.ts.
 */
import { Channel, SuppressionReason } from '../../../shared/gen/svc/notification/v1/notification_pb';
import {
  FAST_DELIVERY,
  startNotificationApp,
  type RunningNotificationApp,
} from '../../support/notification-app';
import { unary } from '../../support/grpc-clients';
import { gatewayConfig, startTwilioPeer, type TwilioPeer } from '../channels/sms/twilio-peer';

const TOKEN = 'token-pages-0123456789abcdef';
const metadata = { authorization: `Bearer ${TOKEN}` };
const INBOX_MAX = 3;
const LIST_DEFAULT = 50;
const LIST_MAX = 500;

let peer: TwilioPeer;
let n: RunningNotificationApp;

async function call<T>(client: RunningNotificationApp['inboxGrpc'], method: string, req: object): Promise<T> {
  return (await unary<T>(client, method, req as Record<string, unknown>, { metadata })).response;
}

/** Runs `make(i)` for i in [0, count), `width` at a time. */
async function fill(count: number, make: (i: number) => Promise<unknown>, width = 25): Promise<void> {
  for (let start = 0; start < count; start += width) {
    await Promise.all(Array.from({ length: Math.min(width, count - start) }, (_, k) => make(start + k)));
  }
}

beforeAll(async () => {
  peer = await startTwilioPeer();
  n = await startNotificationApp({
    server: { api_tokens: [TOKEN] },
    inbox: { max_page_size: INBOX_MAX },
    delivery: { ...FAST_DELIVERY },
    sms_backends: [{ name: 'twilio', sms_gateway: gatewayConfig(peer) }],
  });
  await fill(INBOX_MAX + 2, (i) =>
    call(n.inboxGrpc, 'send', { userId: 'pages', title: `message ${i} 📬`, body: 'body' }),
  );
  await fill(LIST_MAX + 2, (i) =>
    call(n.notificationGrpc, 'sendSms', { to: `+1555${String(1_000_000 + i)}`, body: `code ${i}` }),
  );
  await fill(LIST_MAX + 2, (i) =>
    call(n.notificationGrpc, 'addSuppression', {
      channel: Channel.SMS,
      recipient: `+1666${String(1_000_000 + i)}`,
      reason: SuppressionReason.MANUAL,
    }),
  );
}, 120_000);

afterAll(async () => {
  await n?.close();
  await peer?.close();
});

describe.each([
  ['GetInbox', 'inboxGrpc', 'getInbox', 'messages', INBOX_MAX, INBOX_MAX, { userId: 'pages' }],
  ['ListDeliveries', 'notificationGrpc', 'listDeliveries', 'deliveries', LIST_DEFAULT, LIST_MAX, {}],
  ['ListSuppressions', 'notificationGrpc', 'listSuppressions', 'suppressions', LIST_DEFAULT, LIST_MAX, {}],
] as const)('%s page_size', (_rpc, client, method, field, byDefault, max, request) => {
  it.each([
    [0, byDefault],
    [1, 1],
    [max, max],
    [max + 1, max],
  ])('when page_size is %p, the page holds %p items and a next page token', async (size, expected) => {
    const page = await call<Record<string, unknown[]> & { nextPageToken: string }>(n[client], method, {
      ...request,
      pageSize: size,
    });
    expect(page[field]).toHaveLength(expected);
    expect(page.nextPageToken).not.toBe('');
  });
});
