/**
 * WatchInboundSms through the real service on real PostgreSQL, with real grpc-js and Connect clients,
 * fed through the real webhook route with a correct Twilio signature: a reply arrives once (a replayed
 * webhook adds nothing), STOP is not a reply, resume after an id replays then goes live, a token
 * without `sms:inbound` is PERMISSION_DENIED on both ports, a bad id is INVALID_ARGUMENT, DeleteUser
 * erases the user's numbers' messages, the per-caller cap at its bound.
 */
import * as grpc from '@grpc/grpc-js';
import { Code, ConnectError, createClient } from '@connectrpc/connect';
import { createConnectTransport } from '@connectrpc/connect-node';
import {
  InboundSmsEventType,
  InboundSmsService,
} from '../../../../shared/gen/svc/notification/v1/inbound_sms_pb';
import { UserService } from '../../../../shared/gen/svc/notification/v1/users_pb';
import { grpcClient, unary, type GenericClient } from '../../../support/grpc-clients';
import { createTestDatabase } from '../../../support/database';
import {
  FAST_DELIVERY,
  startNotificationApp,
  type RunningNotificationApp,
} from '../../../support/notification-app';
import { waitFor } from '../../../support/wait';
import { gatewayConfig, postSignedForm } from './twilio-peer';

const READER = 'inbound-reader-token-0123456789abcdef';
const OTHER = 'inbound-nosms-token-0123456789abcdef';
const PUBLIC = 'https://notify.example.com';
const PATH = '/webhooks/sms/twilio/inbound';

interface Frame {
  id: string;
  type: InboundSmsEventType;
  backend: string;
  from: string;
  to: string;
  body: string;
}

interface Watch {
  frames: Frame[];
  call: grpc.ClientReadableStream<Frame>;
  error: Promise<grpc.ServiceError>;
}

const messages = (w: Watch) => w.frames.filter((f) => f.type === InboundSmsEventType.MESSAGE);

describe('WatchInboundSms on PostgreSQL', () => {
  let n: RunningNotificationApp;
  let db: { url: string; drop(): Promise<void> };
  let client: GenericClient;
  let users: GenericClient;
  const open: Watch[] = [];
  let sid = 0;

  beforeAll(async () => {
    db = await createTestDatabase('inboundrpc');
    n = await startNotificationApp({
      database: { url: db.url },
      server: {
        api_tokens: [
          { name: 'monitor', token: READER, scopes: ['sms:inbound', 'users:write', 'users:read'] },
          { name: 'other', token: OTHER, scopes: ['delivery:send', 'delivery:read', 'users:read'] },
        ],
      },
      delivery: { ...FAST_DELIVERY, store_backend: 'database' },
      sms_backends: [{ name: 'twilio', sms_gateway: gatewayConfig({ baseUrl: 'http://127.0.0.1:9' }) }],
      webhooks: { public_base_url: PUBLIC, inbound_sms_watch: { max_watchers_per_caller: 3 } },
    });
    client = grpcClient(InboundSmsService, n.grpcAddress);
    users = grpcClient(UserService, n.grpcAddress);
  });

  afterEach(() => {
    for (const w of open.splice(0)) w.call.cancel();
  });

  afterAll(async () => {
    client?.close();
    users?.close();
    await n?.close();
    await db?.drop();
  });

  function watch(token: string, request: Record<string, unknown> = {}): Watch {
    const md = new grpc.Metadata();
    md.set('authorization', `Bearer ${token}`);
    const call = (client.watchInboundSms as (r: unknown, m: grpc.Metadata) => Watch['call']).call(
      client,
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

  async function live(): Promise<Watch> {
    const w = watch(READER);
    await waitFor(() => w.frames.length >= 1, 'live frame');
    expect(w.frames[0]!.type).toBe(InboundSmsEventType.LIVE);
    return w;
  }

  /** Posts an inbound message to the webhook, signed as Twilio signs it. */
  async function inbound(
    body: string,
    from = '+15551230001',
    messageSid = `SM${String(++sid).padStart(32, '0')}`,
  ) {
    const answer = await postSignedForm(n.baseUrl + PATH, PUBLIC + PATH, {
      AccountSid: 'AC0123456789abcdef0123456789abcdef',
      MessageSid: messageSid,
      SmsMessageSid: messageSid,
      From: from,
      To: '+15550001111',
      Body: body,
      NumMedia: '0',
    });
    expect(answer.status).toBe(200);
    return messageSid;
  }

  it('when a reply arrives through the signed webhook, it is streamed once, even when the webhook is replayed', async () => {
    const w = await live();
    const messageSid = await inbound('ACK 4821 😀 日本 שלום');
    await waitFor(() => messages(w).length === 1, 'the reply');
    expect(messages(w)[0]).toMatchObject({
      type: InboundSmsEventType.MESSAGE,
      backend: 'twilio',
      from: '+15551230001',
      to: '+15550001111',
      body: 'ACK 4821 😀 日本 שלום',
    });
    expect(Number(messages(w)[0]!.id)).toBeGreaterThan(Number(w.frames[0]!.id));
    // The same signed request again (a replay), a STOP, then a new reply: only the new reply follows.
    await inbound('ACK 4821 😀 日本 שלום', '+15551230001', messageSid);
    await inbound('STOP', '+15551230009');
    await inbound('ACK 1111');
    await waitFor(() => messages(w).length >= 2, 'the next reply');
    expect(messages(w).map((f) => f.body)).toEqual(['ACK 4821 😀 日本 שלום', 'ACK 1111']);
  });

  it('a forged signature is 403 and streams nothing', async () => {
    const w = await live();
    const forged = await postSignedForm(
      n.baseUrl + PATH,
      PUBLIC + PATH,
      { MessageSid: 'SMforged', From: '+15551230001', To: '+15550001111', Body: 'ACK 9999' },
      { authToken: 'not-the-auth-token' },
    );
    expect(forged.status).toBe(403);
    await inbound('after the forgery');
    await waitFor(() => messages(w).length === 1, 'the genuine reply');
    expect(messages(w).map((f) => f.body)).toEqual(['after the forgery']);
  });

  it('when resumed after an id, the messages after it are replayed, then new ones arrive live', async () => {
    const first = await live();
    for (const body of ['r1', 'r2', 'r3']) await inbound(body);
    await waitFor(() => messages(first).length === 3, 'three replies');
    const cut = messages(first)[0]!;
    first.call.cancel();
    const resumed = watch(READER, { afterId: cut.id });
    await waitFor(() => messages(resumed).length === 2, 'the replay');
    await inbound('r4');
    await waitFor(() => messages(resumed).length === 3, 'live after the replay');
    expect(resumed.frames.map((f) => f.body)).toEqual(['r2', 'r3', 'r4']);
    const ids = resumed.frames.map((f) => Number(f.id));
    for (let i = 1; i < ids.length; i++) expect(ids[i]).toBeGreaterThan(ids[i - 1]!);
  });

  it('over Connect, the same stream arrives (LIVE, then the message)', async () => {
    const connect = createClient(
      InboundSmsService,
      createConnectTransport({ baseUrl: n.baseUrl, httpVersion: '1.1', useBinaryFormat: false }),
    );
    const controller = new AbortController();
    const got: Array<[InboundSmsEventType, string]> = [];
    const reading = (async () => {
      for await (const f of connect.watchInboundSms(
        {},
        { signal: controller.signal, headers: { authorization: `Bearer ${READER}` } },
      )) {
        got.push([f.type, f.body]);
        if (f.type === InboundSmsEventType.LIVE) await inbound('ack 77 over connect');
        else controller.abort();
      }
    })().catch((e: unknown) => ConnectError.from(e));
    expect(await reading).toMatchObject({ code: Code.Canceled });
    expect(got).toEqual([
      [InboundSmsEventType.LIVE, ''],
      [InboundSmsEventType.MESSAGE, 'ack 77 over connect'],
    ]);
  });

  it('a token without sms:inbound is PERMISSION_DENIED on both ports; a bad after_id is INVALID_ARGUMENT', async () => {
    expect((await watch(OTHER).error).code).toBe(grpc.status.PERMISSION_DENIED);
    const connect = createClient(
      InboundSmsService,
      createConnectTransport({ baseUrl: n.baseUrl, httpVersion: '1.1', useBinaryFormat: false }),
    );
    const refused = await (async () => {
      for await (const _ of connect.watchInboundSms({}, { headers: { authorization: `Bearer ${OTHER}` } }))
        return undefined;
      return undefined;
    })().catch((e: unknown) => ConnectError.from(e));
    expect(refused).toMatchObject({ code: Code.PermissionDenied });
    expect((await watch(READER, { afterId: 'x1' }).error).code).toBe(grpc.status.INVALID_ARGUMENT);
    expect((await watch(READER, { afterId: '1'.repeat(16) }).error).code).toBe(grpc.status.INVALID_ARGUMENT);
    expect((await watch('wrong-token-0123456789abcdef').error).code).toBe(grpc.status.UNAUTHENTICATED);
  });

  it("when a user is deleted, the messages from the user's numbers are erased; others' stay", async () => {
    const auth = { metadata: { authorization: `Bearer ${READER}` } };
    await unary(users, 'upsertUser', { userId: 'ana', phones: ['+15554440001', '+15554440002'] }, auth);
    const start = await live();
    await inbound('from ana 1', '+15554440001');
    await inbound('from somebody else', '+15559990000');
    await inbound('from ana 2', '+15554440002');
    await waitFor(() => messages(start).length === 3, 'three replies');
    await unary(users, 'deleteUser', { userId: 'ana' }, auth);
    const replay = watch(READER, { afterId: start.frames[0]!.id });
    await waitFor(() => messages(replay).length >= 1, 'the replay');
    await inbound('marker after deletion');
    await waitFor(() => messages(replay).some((f) => f.body === 'marker after deletion'), 'the marker');
    expect(messages(replay).map((f) => f.body)).toEqual(['from somebody else', 'marker after deletion']);
    const rows = (await n.app.storage!.knex.raw(
      `SELECT count(*)::int AS n FROM inbound_sms WHERE from_number LIKE '+1555444%'`,
    )) as { rows: { n: number }[] };
    expect(rows.rows[0]!.n).toBe(0);
  });

  it('when erasing the replies fails, DeleteUser fails and keeps the user; the retry erases them', async () => {
    const auth = { metadata: { authorization: `Bearer ${READER}` } };
    const knex = n.app.storage!.knex;
    await unary(users, 'upsertUser', { userId: 'bea', phones: ['+15554450001'] }, auth);
    const start = await live();
    await inbound('from bea 😀 日本 שלום', '+15554450001');
    await waitFor(() => messages(start).some((f) => f.from === '+15554450001'), "bea's reply");
    const beas = async () =>
      (
        (await knex.raw(`SELECT count(*)::int AS n FROM inbound_sms WHERE from_number = '+15554450001'`)) as {
          rows: { n: number }[];
        }
      ).rows[0]!.n;
    expect(await beas()).toBe(1);
    // The inbound log is unreachable for the first DeleteUser (the table renamed away).
    await knex.raw('ALTER TABLE inbound_sms RENAME TO inbound_sms_away');
    let failed: grpc.ServiceError | undefined;
    try {
      await unary(users, 'deleteUser', { userId: 'bea' }, auth).catch((e: grpc.ServiceError) => (failed = e));
    } finally {
      await knex.raw('ALTER TABLE inbound_sms_away RENAME TO inbound_sms');
    }
    expect(failed?.code).toBe(grpc.status.INTERNAL);
    expect(failed?.details).not.toMatch(/inbound_sms|relation|SELECT|DELETE/i);
    // The user (and so its number) is still there for the retry to find.
    const kept = await unary<{ user: { phones: string[] } }>(users, 'getUser', { userId: 'bea' }, auth);
    expect(kept.response.user.phones).toEqual(['+15554450001']);
    expect(await beas()).toBe(1);
    await unary(users, 'deleteUser', { userId: 'bea' }, auth);
    expect(await beas()).toBe(0);
    const gone = await unary(users, 'getUser', { userId: 'bea' }, auth).catch((e: grpc.ServiceError) => e);
    expect((gone as grpc.ServiceError).code).toBe(grpc.status.NOT_FOUND);
  });

  it('a caller may hold max_watchers_per_caller streams; one more is RESOURCE_EXHAUSTED', async () => {
    await live();
    await live();
    await live();
    expect((await watch(READER).error).code).toBe(grpc.status.RESOURCE_EXHAUSTED);
  });
});
