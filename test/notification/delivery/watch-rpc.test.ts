/**
 * WatchDeliveries through the real service on real PostgreSQL, with real grpc-js and Connect clients:
 * SMS through the local Twilio stand-in, a signed status callback for DELIVERED, a suppression for
 * FAILED / RECIPIENT_SUPPRESSED; two API tokens are two callers that never see each other's
 * deliveries; filters; resume after a cursor; bad input; the caps at their bound.
 */
import * as grpc from '@grpc/grpc-js';
import { Code, ConnectError } from '@connectrpc/connect';
import {
  Channel,
  DeliveryEventType,
  DeliveryFailure,
  DeliveryStatus,
} from '../../../shared/gen/svc/notification/v1/notification_pb';
import { unary } from '../../support/grpc-clients';
import { createTestDatabase } from '../../support/database';
import {
  FAST_DELIVERY,
  startNotificationApp,
  type RunningNotificationApp,
} from '../../support/notification-app';
import { waitFor } from '../../support/wait';
import {
  gatewayConfig,
  sendStatusCallback,
  startTwilioPeer,
  type TwilioPeer,
} from '../channels/sms/twilio-peer';

const TOKEN_A = 'token-watch-a-0123456789abcdef';
const TOKEN_B = 'token-watch-b-0123456789abcdef';
const PUBLIC = 'https://notify.example.com';

interface Frame {
  cursor: string;
  type: DeliveryEventType;
  deliveryId: string;
  channel: Channel;
  backend: string;
  status: DeliveryStatus;
  failure: DeliveryFailure;
  reason: string;
  providerReference: string;
}

interface Watch {
  frames: Frame[];
  call: grpc.ClientReadableStream<Frame>;
  error: Promise<grpc.ServiceError>;
}

const changes = (w: Watch) => w.frames.filter((f) => f.type === DeliveryEventType.CHANGE);

describe('WatchDeliveries on PostgreSQL', () => {
  let peer: TwilioPeer;
  let n: RunningNotificationApp;
  let db: { url: string; drop(): Promise<void> };
  const open: Watch[] = [];

  beforeAll(async () => {
    peer = await startTwilioPeer();
    db = await createTestDatabase('watchrpc');
    n = await startNotificationApp({
      database: { url: db.url },
      server: { api_tokens: [TOKEN_A, TOKEN_B] },
      delivery: { ...FAST_DELIVERY, store_backend: 'database' },
      sms_backends: [
        { name: 'twilio', sms_gateway: gatewayConfig(peer) },
        { name: 'other', sms_gateway: gatewayConfig(peer, { from_number: '+15550009999' }) },
      ],
      webhooks: { public_base_url: PUBLIC },
    });
  });

  afterEach(() => {
    for (const w of open.splice(0)) w.call.cancel();
  });

  afterAll(async () => {
    await n?.close();
    await peer?.close();
    await db?.drop();
  });

  function watch(token: string, request: Record<string, unknown> = {}): Watch {
    const md = new grpc.Metadata();
    md.set('authorization', `Bearer ${token}`);
    const call = (n.notificationGrpc.watchDeliveries as (r: unknown, m: grpc.Metadata) => Watch['call']).call(
      n.notificationGrpc,
      request,
      md,
    );
    const frames: Frame[] = [];
    call.on('data', (f: Frame) => frames.push(f));
    const error = new Promise<grpc.ServiceError>((resolve) => call.on('error', resolve));
    const w = { frames, call, error };
    open.push(w);
    return w;
  }

  async function live(token: string, request: Record<string, unknown> = {}): Promise<Watch> {
    const w = watch(token, request);
    await waitFor(() => w.frames.length >= 1, 'live frame');
    expect(w.frames[0]!.type).toBe(DeliveryEventType.LIVE);
    return w;
  }

  async function sendSms(token: string, to = '+15551234567', backend = ''): Promise<string> {
    const { response } = await unary<{ deliveryId: string }>(
      n.notificationGrpc,
      'sendSms',
      { to, body: 'hello', backend },
      { metadata: { authorization: `Bearer ${token}` } },
    );
    return response.deliveryId;
  }

  it('when a caller watches, each change of its SMS arrives once: PENDING, SENT, then DELIVERED from a receipt', async () => {
    const w = await live(TOKEN_A);
    const before = peer.requests.length;
    const id = await sendSms(TOKEN_A);
    await waitFor(() => changes(w).length >= 2, 'pending and sent');
    const request = peer.requests[before]!;
    const sid = changes(w)[1]!.providerReference;
    expect((await sendStatusCallback(request, sid, 'delivered', n.baseUrl)).status).toBe(200);
    // The same callback again (providers repeat them): a duplicate, no new frame.
    expect((await sendStatusCallback(request, sid, 'delivered', n.baseUrl)).status).toBe(200);
    await waitFor(() => changes(w).length >= 3, 'delivered');
    const second = await sendSms(TOKEN_A);
    await waitFor(() => changes(w).some((f) => f.deliveryId === second && f.status === DeliveryStatus.SENT));
    const mine = changes(w).filter((f) => f.deliveryId === id);
    expect(mine.map((f) => f.status)).toEqual([
      DeliveryStatus.PENDING,
      DeliveryStatus.SENT,
      DeliveryStatus.DELIVERED,
    ]);
    expect(mine[1]).toMatchObject({ channel: Channel.SMS, backend: 'twilio', reason: '' });
    expect(sid).toMatch(/^SM/);
    expect(mine[2]).toMatchObject({ reason: 'delivered', providerReference: sid });
    // No recipient and no content anywhere in the frames.
    expect(JSON.stringify(w.frames, (_k, v: unknown) => (typeof v === 'bigint' ? String(v) : v))).not.toMatch(
      /5551234567|hello/,
    );
    const cursors = w.frames.map((f) => Number(f.cursor));
    for (let i = 1; i < cursors.length; i++) expect(cursors[i]).toBeGreaterThan(cursors[i - 1]!);
  });

  it("when two tokens send, each caller's watch sees only its own deliveries", async () => {
    const a = await live(TOKEN_A);
    const b = await live(TOKEN_B);
    const fromA = await sendSms(TOKEN_A);
    const fromB = await sendSms(TOKEN_B);
    const sentOf = (w: Watch, id: string) => () =>
      changes(w).some((f) => f.deliveryId === id && f.status === DeliveryStatus.SENT);
    await waitFor(sentOf(a, fromA));
    await waitFor(sentOf(b, fromB));
    // A later send of A, seen by A: by then B would have seen A's changes too if it could.
    const later = await sendSms(TOKEN_A);
    await waitFor(sentOf(a, later));
    expect(new Set(changes(a).map((f) => f.deliveryId))).toEqual(new Set([fromA, later]));
    expect(new Set(changes(b).map((f) => f.deliveryId))).toEqual(new Set([fromB]));
  });

  it('when filters are given, only changes of those statuses, channels and backends arrive', async () => {
    const sentOnly = await live(TOKEN_A, { statuses: [DeliveryStatus.SENT] });
    const otherBackend = await live(TOKEN_A, { backends: ['other'] });
    const emailOnly = await live(TOKEN_A, { channels: [Channel.EMAIL] });
    const everything = await live(TOKEN_A);
    const viaTwilio = await sendSms(TOKEN_A);
    const viaOther = await sendSms(TOKEN_A, '+15551234567', 'other');
    await waitFor(() => changes(sentOnly).length >= 2, 'both sent');
    await waitFor(() => changes(otherBackend).length >= 2, 'pending and sent of other');
    await waitFor(() => changes(everything).length >= 4, 'all four changes');
    expect(changes(sentOnly).every((f) => f.status === DeliveryStatus.SENT)).toBe(true);
    expect(new Set(changes(sentOnly).map((f) => f.deliveryId))).toEqual(new Set([viaTwilio, viaOther]));
    expect(changes(otherBackend).map((f) => [f.deliveryId, f.backend])).toEqual([
      [viaOther, 'other'],
      [viaOther, 'other'],
    ]);
    expect(changes(emailOnly)).toEqual([]);
  });

  it('when a recipient is suppressed, the send appears at once as FAILED / RECIPIENT_SUPPRESSED', async () => {
    const to = '+15557654321';
    await unary(
      n.notificationGrpc,
      'addSuppression',
      { channel: Channel.SMS, recipient: to },
      { metadata: { authorization: `Bearer ${TOKEN_A}` } },
    );
    const w = await live(TOKEN_A, { statuses: [DeliveryStatus.FAILED] });
    const before = peer.requests.length;
    const id = await sendSms(TOKEN_A, to);
    await waitFor(() => changes(w).length >= 1, 'failed frame');
    expect(changes(w)).toEqual([
      expect.objectContaining({
        deliveryId: id,
        status: DeliveryStatus.FAILED,
        failure: DeliveryFailure.RECIPIENT_SUPPRESSED,
      }),
    ]);
    expect(peer.requests.length).toBe(before);
  });

  it('when resumed after a cursor mid-stream while sends continue, the two watches together see each change once', async () => {
    const first = await live(TOKEN_B);
    const ids: string[] = [];
    const sending = (async () => {
      for (let i = 0; i < 12; i++) ids.push(await sendSms(TOKEN_B));
    })();
    await waitFor(() => changes(first).length >= 6, 'six changes');
    const cut = changes(first)[5]!;
    first.call.cancel();
    const seenBefore = first.frames
      .slice(0, first.frames.indexOf(cut) + 1)
      .filter((f) => f.type === DeliveryEventType.CHANGE);
    const second = watch(TOKEN_B, { afterCursor: cut.cursor });
    await sending;
    const key = (f: Frame) => `${f.deliveryId}:${f.status}`;
    await waitFor(() => seenBefore.length + changes(second).length >= 24, 'every pending and sent');
    const all = [...seenBefore, ...changes(second)].map(key);
    expect(all).toHaveLength(24);
    expect(new Set(all)).toEqual(
      new Set(ids.flatMap((id) => [`${id}:${DeliveryStatus.PENDING}`, `${id}:${DeliveryStatus.SENT}`])),
    );
  });

  it('when watched over Connect, the same stream arrives (LIVE, then the changes)', async () => {
    const controller = new AbortController();
    const got: Array<[DeliveryEventType, DeliveryStatus]> = [];
    let id = '';
    const reading = (async () => {
      for await (const f of n.notificationConnect.watchDeliveries(
        {},
        { signal: controller.signal, headers: { authorization: `Bearer ${TOKEN_A}` } },
      )) {
        got.push([f.type, f.status]);
        if (f.type === DeliveryEventType.LIVE) id = await sendSms(TOKEN_A);
        if (f.deliveryId === id && f.status === DeliveryStatus.SENT) controller.abort();
      }
    })().catch((e: unknown) => ConnectError.from(e));
    const end = await reading;
    expect(end).toMatchObject({ code: Code.Canceled });
    expect(got).toEqual([
      [DeliveryEventType.LIVE, DeliveryStatus.UNSPECIFIED],
      [DeliveryEventType.CHANGE, DeliveryStatus.PENDING],
      [DeliveryEventType.CHANGE, DeliveryStatus.SENT],
    ]);
  });

  it('when the cursor or a filter value is malformed, the watch is INVALID_ARGUMENT; without a token UNAUTHENTICATED', async () => {
    expect((await watch(TOKEN_A, { afterCursor: 'not-a-cursor' }).error).code).toBe(
      grpc.status.INVALID_ARGUMENT,
    );
    expect((await watch(TOKEN_A, { statuses: [99] }).error).code).toBe(grpc.status.INVALID_ARGUMENT);
    expect((await watch(TOKEN_A, { channels: [Channel.UNSPECIFIED] }).error).code).toBe(
      grpc.status.INVALID_ARGUMENT,
    );
    const tooMany = Array.from({ length: 65 }, (_, i) => `b${i}`);
    expect((await watch(TOKEN_A, { backends: tooMany }).error).code).toBe(grpc.status.INVALID_ARGUMENT);
    // At the bound the watch opens (its first frame is LIVE).
    await live(TOKEN_A, { backends: tooMany.slice(0, 64) });
    expect((await watch('wrong-token-0123456789abcdef').error).code).toBe(grpc.status.UNAUTHENTICATED);
  });
});

describe('WatchDeliveries caps', () => {
  let n: RunningNotificationApp;
  beforeAll(async () => {
    n = await startNotificationApp({
      server: { api_tokens: [TOKEN_A, TOKEN_B] },
      delivery: { ...FAST_DELIVERY, watch: { max_watchers: 3, max_watchers_per_caller: 2 } },
    });
  });
  afterAll(async () => {
    await n?.close();
  });

  function watch(token: string) {
    const md = new grpc.Metadata();
    md.set('authorization', `Bearer ${token}`);
    const call = (
      n.notificationGrpc.watchDeliveries as (r: unknown, m: grpc.Metadata) => grpc.ClientReadableStream<Frame>
    ).call(n.notificationGrpc, {}, md);
    const frames: Frame[] = [];
    call.on('data', (f: Frame) => frames.push(f));
    const error = new Promise<grpc.ServiceError>((resolve) => call.on('error', resolve));
    return { call, frames, error };
  }

  it('when a caller has max_watchers_per_caller open, or the process max_watchers, one more is RESOURCE_EXHAUSTED', async () => {
    const a1 = watch(TOKEN_A);
    const a2 = watch(TOKEN_A);
    await waitFor(() => a1.frames.length === 1 && a2.frames.length === 1);
    const a3 = watch(TOKEN_A);
    expect((await a3.error).code).toBe(grpc.status.RESOURCE_EXHAUSTED);
    const b1 = watch(TOKEN_B);
    await waitFor(() => b1.frames.length === 1);
    expect(n.app.deliveryWatch.watcherCount).toBe(3);
    const b2 = watch(TOKEN_B);
    expect((await b2.error).code).toBe(grpc.status.RESOURCE_EXHAUSTED);
    // Closing one frees a place; the others were never disturbed.
    a1.call.cancel();
    await waitFor(() => n.app.deliveryWatch.watcherCount === 2);
    const b3 = watch(TOKEN_B);
    await waitFor(() => b3.frames.length === 1);
    expect(b3.frames[0]!.type).toBe(DeliveryEventType.LIVE);
    for (const w of [a2, b1, b3]) w.call.cancel();
  });
});
