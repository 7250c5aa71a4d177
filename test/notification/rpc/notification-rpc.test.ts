/**
 * NotificationService against the real app: SendEmail over gRPC and Connect into a real smtp-server
 * peer (and a local SendGrid v3 peer), the delivery records behind it (memory store and real
 * PostgreSQL), bad input, idempotency, caller scopes, listing, health and the request size limit.
 */
import { createServer, type AddressInfo, type Socket } from 'node:net';
import * as grpc from '@grpc/grpc-js';
import { Code } from '@connectrpc/connect';
import type { ParsedMail } from 'mailparser';
import { simpleParser } from 'mailparser';
import {
  AttemptOutcome,
  Channel,
  DeliveryFailure,
  DeliveryStatus,
} from '../../../shared/gen/svc/notification/v1/notification_pb';
import { sendEmailRequestBytes } from '../../../services/notification/app';
import { loadNotificationConfig, type NotificationConfigInput } from '../../../services/notification/config';
import {
  FAST_DELIVERY,
  smtpMailerConfig,
  startNotificationApp,
  type RunningNotificationApp,
} from '../../support/notification-app';
import { createTestDatabase } from '../../support/database';
import { unary } from '../../support/grpc-clients';
import { waitFor } from '../../support/wait';
import { startSmtpPeer, type SmtpPeer } from '../../support/smtp-peer';
import { startV3Peer, type V3Peer } from '../channels/email/v3-peer';
import { grpcError, connectError } from '../../support/call-errors';
import { finalDelivery } from '../../support/final-delivery';

const FROM = 'noreply@sender.example.com';
const TOKEN_A = 'token-a-0123456789abcdef';
const TOKEN_B = 'token-b-0123456789abcdef';
/** Two tokens of one named caller (a rotation), with scopes. */
const ROTATION = { name: 'billing', old: 'token-billing-old-0123', current: 'token-billing-new-4567' };
const KIB = 1024;

/** The wire shapes the tests read (protobuf-es messages as the clients return them). */
type WireAttempt = { outcome: AttemptOutcome; error: string; providerReference: string; backend: string };
type WireDelivery = {
  id: string;
  channel: Channel;
  backend: string;
  status: DeliveryStatus;
  attempts: number;
  lastError: string;
  providerReference: string;
  idempotencyKey: string;
  recipient: string;
  createdAt?: unknown;
  sentAt?: unknown;
  deliveredAt?: unknown;
  attemptLog: WireAttempt[];
  failure: DeliveryFailure;
};
type SendResult = { deliveryId: string; status: DeliveryStatus; messageId: string };
type SendRequest = Record<string, unknown>;

function auth(token: string): Record<string, string> {
  return { authorization: `Bearer ${token}` };
}

/** A valid request to jane@example.com plus `extra`. */
function email(extra: SendRequest = {}): SendRequest {
  return { to: ['jane@example.com'], subject: 'Hello', text: 'Hi Jane', ...extra };
}

/** The peer's tests of one running app. */
class Harness {
  constructor(
    readonly n: RunningNotificationApp,
    readonly peer: SmtpPeer,
  ) {}

  async send(req: SendRequest, token = TOKEN_A): Promise<SendResult> {
    return (await unary<SendResult>(this.n.notificationGrpc, 'sendEmail', req, { metadata: auth(token) }))
      .response;
  }

  async sendConnect(req: SendRequest, token = TOKEN_A): Promise<SendResult> {
    return (await this.n.notificationConnect.sendEmail(req, { headers: auth(token) })) as SendResult;
  }

  async get(id: string, token = TOKEN_A): Promise<WireDelivery> {
    const { response } = await unary<{ delivery: WireDelivery }>(
      this.n.notificationGrpc,
      'getDelivery',
      { id },
      { metadata: auth(token) },
    );
    return response.delivery;
  }

  async list(
    req: Record<string, unknown> = {},
    token = TOKEN_A,
  ): Promise<{ deliveries: WireDelivery[]; nextPageToken: string }> {
    return (
      await unary<{ deliveries: WireDelivery[]; nextPageToken: string }>(
        this.n.notificationGrpc,
        'listDeliveries',
        req,
        { metadata: auth(token) },
      )
    ).response;
  }

  /** Every delivery of `token`'s scope, all pages. */
  async listAll(req: Record<string, unknown> = {}, token = TOKEN_A): Promise<WireDelivery[]> {
    const all: WireDelivery[] = [];
    let pageToken = '';
    do {
      const page = await this.list({ ...req, pageToken, pageSize: 100 }, token);
      all.push(...page.deliveries);
      pageToken = page.nextPageToken;
    } while (pageToken);
    return all;
  }

  /** Polls GetDelivery until the record is final (SENT or FAILED). */
  final(id: string, token = TOKEN_A): Promise<WireDelivery> {
    return finalDelivery(() => this.get(id, token), id);
  }
}

function messageIdOf(raw: Buffer): string | undefined {
  return /^Message-ID:\s*(<[^>]+>)/im.exec(raw.toString('utf8'))?.[1];
}

/** The app every flow test runs against: tokens on, one smtp and one http_api backend, small limits. */
async function startApp(peer: SmtpPeer, v3: V3Peer, extra: NotificationConfigInput = {}) {
  const smtp = smtpMailerConfig(peer.port, { fromEmail: FROM });
  return startNotificationApp({
    ...extra,
    server: {
      api_tokens: [
        TOKEN_A,
        TOKEN_B,
        { name: ROTATION.name, token: ROTATION.old, scopes: ['delivery:send', 'delivery:read'] },
        { name: ROTATION.name, token: ROTATION.current, scopes: ['delivery:read'] },
      ],
      max_request_bytes: 64 * KIB,
    },
    delivery: { ...FAST_DELIVERY, max_attempts: 3, ...extra.delivery },
    mailer: {
      backends: [
        ...smtp.backends!,
        {
          name: 'api',
          driver: 'http_api',
          from_email: 'api@sender.example.com',
          http_api: { base_url: v3.baseUrl, api_key: 'SG.secret-key-for-tests', timeout_ms: 3000 },
        },
      ],
      max_attachment_bytes: 200 * KIB,
      max_message_bytes: 256 * KIB,
    },
  });
}

describe.each([
  ['the memory store', 'memory'],
  ['the database store on real PostgreSQL', 'postgres'],
] as const)('NotificationService email on %s', (_label, store) => {
  let peer: SmtpPeer;
  let v3: V3Peer;
  let h: Harness;
  let db: { url: string; drop(): Promise<void> } | undefined;

  beforeAll(async () => {
    peer = await startSmtpPeer();
    v3 = await startV3Peer();
    if (store === 'postgres') db = await createTestDatabase('emailrpc');
    const n = await startApp(
      peer,
      v3,
      db ? { database: { url: db.url }, delivery: { store_backend: 'database' } } : {},
    );
    h = new Harness(n, peer);
  });
  afterAll(async () => {
    await h?.n.close();
    await peer?.close();
    await v3?.close();
    await db?.drop();
  });
  beforeEach(() => {
    peer.received.length = 0;
    peer.rejected.length = 0;
    peer.script.length = 0;
    peer.dataCount = 0;
  });

  test('SendEmail over gRPC reaches the relay as sent: From, To, Cc, hidden Bcc, attachment, one Message-ID', async () => {
    const pdf = Buffer.from([0x25, 0x50, 0x44, 0x46, 0x00, 0xff, 0x10, 0x80]);
    const sent = await h.send(
      email({
        cc: ['carol@example.com'],
        bcc: ['boss@example.com'],
        fromName: 'Billing',
        replyTo: 'help@example.com',
        headers: { 'X-Campaign': 'spring' },
        attachments: [{ filename: 'invoice.pdf', contentType: 'application/pdf', content: pdf }],
      }),
    );
    expect(sent.status).toBe(DeliveryStatus.PENDING);
    expect(sent.messageId).toMatch(/^<[0-9a-f-]{36}@sender\.example\.com>$/);

    const d = await h.final(sent.deliveryId);
    expect(d.status).toBe(DeliveryStatus.SENT);
    expect(d.deliveredAt).toBeUndefined();
    expect(d.sentAt).toBeDefined();
    expect(d.attempts).toBe(1);
    expect(d.attemptLog.map((a) => a.outcome)).toEqual([AttemptOutcome.SENT]);
    expect(d.providerReference).toBe('4F2A1C0B3D');
    expect(d.channel).toBe(Channel.EMAIL);
    expect(d.backend).toBe('relay');
    expect(d.recipient).toBe('j***@example.com, c***@example.com, b***@example.com');
    // The idempotency scope is the token's short hash, never the token.
    const { scope } = await h.n.app.deliveries.get(sent.deliveryId);
    expect(scope).toMatch(/^token:[0-9a-f]{16}$/);
    expect(scope).not.toContain(TOKEN_A);

    expect(peer.received).toHaveLength(1);
    const mail = peer.received[0]!;
    expect(mail.from).toBe(FROM);
    expect(mail.recipients.sort()).toEqual(['boss@example.com', 'carol@example.com', 'jane@example.com']);
    const parsed: ParsedMail = mail.parsed;
    expect(parsed.from?.value).toEqual([{ address: FROM, name: 'Billing' }]);
    expect(parsed.messageId).toBe(sent.messageId);
    expect(parsed.headers.get('x-campaign')).toBe('spring');
    expect(parsed.replyTo?.text).toBe('help@example.com');
    expect(mail.raw.toString('utf8')).toMatch(/^To: jane@example\.com/im);
    expect(mail.raw.toString('utf8')).toMatch(/^Cc: carol@example\.com/im);
    expect(mail.raw.toString('utf8')).not.toMatch(/boss@example\.com/);
    expect(parsed.attachments).toHaveLength(1);
    expect(parsed.attachments[0]!.filename).toBe('invoice.pdf');
    expect(parsed.attachments[0]!.contentType).toBe('application/pdf');
    expect(Buffer.compare(parsed.attachments[0]!.content, pdf)).toBe(0);
  });

  test('SendEmail over Connect JSON with html only arrives with a derived text part', async () => {
    const sent = await h.sendConnect({
      to: ['jane@example.com'],
      subject: 'Welcome',
      html: '<p>Hello <b>Jane</b></p>',
      attachments: [{ filename: 'a.txt', contentType: 'text/plain', content: Buffer.from('bytes \u00e9') }],
    });
    expect(sent.status).toBe(DeliveryStatus.PENDING);
    expect((await h.final(sent.deliveryId)).status).toBe(DeliveryStatus.SENT);
    const parsed = peer.received[0]!.parsed;
    expect(parsed.messageId).toBe(sent.messageId);
    expect(parsed.html).toContain('<b>Jane</b>');
    expect(parsed.text).toContain('Hello Jane');
    expect(parsed.attachments[0]!.content.toString('utf8')).toBe('bytes \u00e9');
  });

  test('the relay answering 451 then 250: SENT after one retry, both attempts with the same Message-ID', async () => {
    peer.script.push({ kind: 'reply', code: 451, text: '4.7.1 Try again later' });
    const sent = await h.send(email());
    const d = await h.final(sent.deliveryId);
    expect(d.status).toBe(DeliveryStatus.SENT);
    expect(d.attempts).toBe(2);
    expect(d.attemptLog.map((a) => a.outcome)).toEqual([AttemptOutcome.RETRYABLE, AttemptOutcome.SENT]);
    expect(d.attemptLog[0]!.error).toMatch(/451|try again/i);
    expect(peer.rejected.map(messageIdOf)).toEqual([sent.messageId]);
    expect(peer.received.map((m) => m.parsed.messageId)).toEqual([sent.messageId]);
  });

  test('the relay answering 550: FAILED after one attempt, not retried', async () => {
    peer.script.push({ kind: 'reply', code: 550, text: '5.1.1 No such user' });
    const sent = await h.send(email({ to: ['nobody@example.com'] }));
    const d = await h.final(sent.deliveryId);
    expect(d.status).toBe(DeliveryStatus.FAILED);
    expect(d.attempts).toBe(1);
    expect(d.attemptLog[0]!.outcome).toBe(AttemptOutcome.RECIPIENT_FAILURE);
    expect(d.lastError).toMatch(/550|no such user/i);
    // A final record is never claimed again: a later send goes through, the failed one does not.
    expect((await h.final((await h.send(email())).deliveryId)).status).toBe(DeliveryStatus.SENT);
    expect(peer.dataCount).toBe(2);
    expect((await h.get(sent.deliveryId)).attempts).toBe(1);
  });

  test('the http_api backend: sent through the v3 API with the Message-ID header and the provider id', async () => {
    const sent = await h.send(email({ backend: 'api' }));
    const d = await h.final(sent.deliveryId);
    expect(d.status).toBe(DeliveryStatus.SENT);
    expect(d.backend).toBe('api');
    expect(d.providerReference).toMatch(/^msg-\d+$/);
    const body = JSON.parse(v3.requests.at(-1)!.body) as {
      from: { email: string };
      headers: Record<string, string>;
      custom_args: Record<string, string>;
    };
    expect(body.from.email).toBe('api@sender.example.com');
    expect(body.headers['Message-ID']).toBe(sent.messageId);
    expect(body.custom_args.delivery_id).toBe(sent.deliveryId);
    expect(sent.messageId).toMatch(/@sender\.example\.com>$/);
  });

  const badInput: [string, SendRequest, string][] = [
    ['an invalid to address', email({ to: ['bob@'] }), 'to[0]'],
    ['an invalid cc address', email({ cc: ['not an address'] }), 'cc[0]'],
    ['an invalid bcc address', email({ bcc: ['x@localhost'] }), 'bcc[0]'],
    ['an invalid reply_to', email({ replyTo: 'reply@@example.com' }), 'reply_to'],
    ['CR/LF in the subject', email({ subject: 'Hi\r\nBcc: victim@example.com' }), 'subject'],
    ['CR/LF in a header value', email({ headers: { 'X-Tag': 'a\r\nBcc: victim@example.com' } }), 'headers'],
    ['a header name that is not X-', email({ headers: { 'Reply-To': 'evil@example.com' } }), 'headers'],
    ['no subject', email({ subject: '' }), 'subject'],
    ['neither text nor html', email({ text: '', html: '' }), 'text'],
    [
      'an attachment over mailer.max_attachment_bytes',
      email({ attachments: [{ filename: 'big.bin', content: Buffer.alloc(200 * KIB + 1) }] }),
      'attachments[0]',
    ],
    [
      'a message over mailer.max_message_bytes',
      email({
        attachments: [
          { filename: 'a.bin', content: Buffer.alloc(150 * KIB) },
          { filename: 'b.bin', content: Buffer.alloc(110 * KIB) },
        ],
      }),
      'message',
    ],
    ['an unknown backend', email({ backend: 'nope' }), 'backend'],
  ];

  test.each(badInput)(
    'SendEmail with %s is INVALID_ARGUMENT naming the field; nothing recorded, nothing sent',
    async (_case, req, field) => {
      const before = (await h.listAll()).length;
      const viaGrpc = await grpcError(h.send(req));
      expect(viaGrpc.code).toBe(grpc.status.INVALID_ARGUMENT);
      expect(viaGrpc.details.startsWith(field)).toBe(true);
      const viaConnect = await connectError(h.sendConnect(req));
      expect(viaConnect.code).toBe(Code.InvalidArgument);
      expect(viaConnect.rawMessage.startsWith(field)).toBe(true);
      expect((await h.listAll()).length).toBe(before);
      expect(peer.dataCount).toBe(0);
    },
  );

  test('the same idempotency key with the same content returns the first delivery and sends once', async () => {
    const first = await h.send(email({ idempotencyKey: 'order-42' }));
    await h.final(first.deliveryId);
    const again = await h.send(email({ idempotencyKey: 'order-42' }));
    expect(again).toEqual({ ...first, status: DeliveryStatus.SENT });
    const viaConnect = await h.sendConnect(email({ idempotencyKey: 'order-42' }));
    expect(viaConnect.deliveryId).toBe(first.deliveryId);
    expect(viaConnect.messageId).toBe(first.messageId);
    expect(peer.received).toHaveLength(1);
    expect((await h.get(first.deliveryId)).idempotencyKey).toBe('order-42');
  });

  test('the same idempotency key with other content is ALREADY_EXISTS and records nothing', async () => {
    await h.final((await h.send(email({ idempotencyKey: 'order-43' }))).deliveryId);
    const before = (await h.listAll()).length;
    const err = await grpcError(h.send(email({ idempotencyKey: 'order-43', subject: 'Changed' })));
    expect(err.code).toBe(grpc.status.ALREADY_EXISTS);
    expect(err.details).toMatch(/idempotency_key/);
    expect((await h.listAll()).length).toBe(before);
  });

  test('idempotency keys are scoped per API token: token B gets its own delivery for the same key', async () => {
    const a = await h.send(email({ idempotencyKey: 'shared-key' }), TOKEN_A);
    const b = await h.send(email({ idempotencyKey: 'shared-key' }), TOKEN_B);
    expect(b.deliveryId).not.toBe(a.deliveryId);
    expect(b.messageId).not.toBe(a.messageId);
    await h.final(a.deliveryId, TOKEN_A);
    await h.final(b.deliveryId, TOKEN_B);
    expect(peer.received.map((m) => m.parsed.messageId).sort()).toEqual([a.messageId, b.messageId].sort());
  });

  test("one caller never sees another's deliveries: GetDelivery NOT_FOUND, ListDeliveries without them", async () => {
    const a = await h.send(email(), TOKEN_A);
    const err = await grpcError(h.get(a.deliveryId, TOKEN_B));
    expect(err.code).toBe(grpc.status.NOT_FOUND);
    const missing = await grpcError(h.get('00000000-0000-4000-8000-000000000000', TOKEN_B));
    expect(missing.details.replace(/[0-9a-f-]{36}/, 'ID')).toBe(err.details.replace(/[0-9a-f-]{36}/, 'ID'));
    expect((await h.listAll({}, TOKEN_B)).map((d) => d.id)).not.toContain(a.deliveryId);
    expect((await h.listAll({}, TOKEN_A)).map((d) => d.id)).toContain(a.deliveryId);
  });

  test("a named token's deliveries belong to its name: another token of that name sees them, other callers do not", async () => {
    const sent = await h.send(email(), ROTATION.old);
    // The record's caller is the token's name, never the token.
    expect((await h.n.app.deliveries.get(sent.deliveryId)).scope).toBe(ROTATION.name);
    expect((await h.get(sent.deliveryId, ROTATION.current)).id).toBe(sent.deliveryId);
    expect((await h.listAll({}, ROTATION.current)).map((d) => d.id)).toContain(sent.deliveryId);
    expect((await grpcError(h.get(sent.deliveryId, TOKEN_A))).code).toBe(grpc.status.NOT_FOUND);
    // The current token has no delivery:send scope.
    expect((await grpcError(h.send(email(), ROTATION.current))).code).toBe(grpc.status.PERMISSION_DENIED);
  });

  test('GetDelivery of an unknown id is NOT_FOUND; a malformed id is INVALID_ARGUMENT naming id', async () => {
    const unknown = await grpcError(h.get('11111111-2222-4333-8444-555555555555'));
    expect(unknown.code).toBe(grpc.status.NOT_FOUND);
    const malformed = await grpcError(h.get('not-a-uuid'));
    expect(malformed.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(malformed.details).toMatch(/^id/);
    const viaConnect = await connectError(
      h.n.notificationConnect.getDelivery(
        { id: '11111111-2222-4333-8444-555555555555' },
        { headers: auth(TOKEN_A) },
      ),
    );
    expect(viaConnect.code).toBe(Code.NotFound);
  });

  // SendSms and the push RPCs have their own tests (sms-rpc.test.ts, push-rpc.test.ts).
  test('SendPush and SendPushBatch without push backends are FAILED_PRECONDITION', async () => {
    for (const method of ['sendPush', 'sendPushBatch']) {
      const err = await grpcError(unary(h.n.notificationGrpc, method, {}, { metadata: auth(TOKEN_A) }));
      expect(err.code).toBe(grpc.status.FAILED_PRECONDITION);
    }
  });
});

describe('ListDeliveries', () => {
  let peer: SmtpPeer;
  let v3: V3Peer;
  let h: Harness;
  const ids: string[] = [];

  beforeAll(async () => {
    peer = await startSmtpPeer();
    v3 = await startV3Peer();
    h = new Harness(await startApp(peer, v3), peer);
    // Five deliveries of token B, oldest first; the third is refused by the relay.
    for (let i = 0; i < 5; i++) {
      if (i === 2) peer.script.push({ kind: 'reply', code: 554, text: '5.7.1 Rejected' });
      const sent = await h.send(email({ subject: `m${i}`, backend: i === 4 ? 'api' : '' }), TOKEN_B);
      await h.final(sent.deliveryId, TOKEN_B);
      ids.push(sent.deliveryId);
    }
  });
  afterAll(async () => {
    await h?.n.close();
    await peer?.close();
    await v3?.close();
  });

  test('pages walk every record newest first with keyset tokens', async () => {
    const seen: string[] = [];
    let pageToken = '';
    let pages = 0;
    do {
      const page = await h.list({ pageSize: 2, pageToken }, TOKEN_B);
      expect(page.deliveries.length).toBeLessThanOrEqual(2);
      seen.push(...page.deliveries.map((d) => d.id));
      pageToken = page.nextPageToken;
      pages++;
    } while (pageToken);
    expect(seen).toEqual([...ids].reverse());
    expect(pages).toBe(3);
  });

  test('filters by status, channel and backend', async () => {
    const failed = await h.listAll({ status: DeliveryStatus.FAILED }, TOKEN_B);
    expect(failed.map((d) => d.id)).toEqual([ids[2]]);
    expect(failed[0]!.attemptLog[0]!.outcome).toBe(AttemptOutcome.PERMANENT);
    expect((await h.listAll({ status: DeliveryStatus.SENT }, TOKEN_B)).length).toBe(4);
    expect((await h.listAll({ status: DeliveryStatus.DELIVERED }, TOKEN_B)).length).toBe(0);
    expect((await h.listAll({ channel: Channel.EMAIL }, TOKEN_B)).length).toBe(5);
    expect((await h.listAll({ channel: Channel.SMS }, TOKEN_B)).length).toBe(0);
    expect((await h.listAll({ backend: 'api' }, TOKEN_B)).map((d) => d.id)).toEqual([ids[4]]);
    expect((await h.listAll({ backend: 'relay' }, TOKEN_B)).length).toBe(4);
  });

  test('failed records carry their failure kind, and ListDeliveries filters by it', async () => {
    const rejected = await h.listAll({ failure: DeliveryFailure.PROVIDER_REJECTED }, TOKEN_B);
    expect(rejected.map((d) => d.id)).toEqual([ids[2]]);
    expect(rejected[0]!.failure).toBe(DeliveryFailure.PROVIDER_REJECTED);
    expect(rejected[0]!.attemptLog[0]!.backend).toBe('relay');
    expect((await h.listAll({ failure: DeliveryFailure.RECIPIENT_INVALID }, TOKEN_B)).length).toBe(0);
    const sent = await h.listAll({ status: DeliveryStatus.SENT }, TOKEN_B);
    expect(sent.every((d) => d.failure === DeliveryFailure.UNSPECIFIED)).toBe(true);
    const bad = await grpcError(h.list({ failure: 99 }, TOKEN_B));
    expect(bad.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(bad.details).toMatch(/^failure/);
  });

  test('/metrics shows the circuit state of each mailer backend (closed)', async () => {
    const text = await (await fetch(`${h.n.baseUrl}/metrics`)).text();
    expect(text).toContain('delivery_circuit_state{channel="email",backend="relay"} 0');
    expect(text).toContain('delivery_circuit_state{channel="email",backend="api"} 0');
  });

  test('a page token used with another filter, or an unknown enum value, is INVALID_ARGUMENT', async () => {
    const { nextPageToken } = await h.list({ pageSize: 2 }, TOKEN_B);
    const err = await grpcError(h.list({ pageSize: 2, pageToken: nextPageToken, backend: 'api' }, TOKEN_B));
    expect(err.code).toBe(grpc.status.INVALID_ARGUMENT);
    const badStatus = await grpcError(h.list({ status: 99 }, TOKEN_B));
    expect(badStatus.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(badStatus.details).toMatch(/^status/);
    const negative = await grpcError(h.list({ pageSize: -1 }, TOKEN_B));
    expect(negative.details).toMatch(/page_size/);
  });

  test('/metrics counts final deliveries by backend and outcome and shows the queue', async () => {
    const text = await (await fetch(`${h.n.baseUrl}/metrics`)).text();
    expect(text).toContain('notification_deliveries_total{channel="email",backend="relay",outcome="sent"} 3');
    expect(text).toContain(
      'notification_deliveries_total{channel="email",backend="relay",outcome="failed"} 1',
    );
    expect(text).toContain('notification_deliveries_total{channel="email",backend="api",outcome="sent"} 1');
    expect(text).toContain('notification_delivery_queue_depth{status="pending"} 0');
    expect(text).toMatch(
      /notification_delivery_attempt_duration_seconds_count\{channel="email",backend="relay"\} 4/,
    );
  });

  test('over Connect too, each record with its masked recipient and attempt log', async () => {
    const page = await h.n.notificationConnect.listDeliveries({ pageSize: 1 }, { headers: auth(TOKEN_B) });
    expect(page.deliveries.map((d) => d.id)).toEqual([ids[4]]);
    expect(page.deliveries[0]!.recipient).toBe('j***@example.com');
    expect(page.deliveries[0]!.attemptLog).toHaveLength(1);
    expect(page.nextPageToken).not.toBe('');
  });
});

describe('SendEmail request size', () => {
  let peer: SmtpPeer;
  let v3: V3Peer;
  let h: Harness;
  beforeAll(async () => {
    peer = await startSmtpPeer();
    v3 = await startV3Peer();
    // server.max_request_bytes is 64 KiB here; mailer.max_message_bytes 256 KiB raises the limit.
    h = new Harness(await startApp(peer, v3), peer);
  });
  afterAll(async () => {
    await h?.n.close();
    await peer?.close();
    await v3?.close();
  });

  // What mailer.max_message_bytes counts besides the attachments' content: subject, text, filenames.
  const FIXED = 'Hello'.length + 'Hi Jane'.length + 'a.bin'.length + 'b.bin'.length;

  /** A message of `bytes` content bytes in all (subject, text and two attachments). */
  function ofSize(bytes: number): SendRequest {
    const rest = bytes - FIXED;
    return email({
      attachments: [
        { filename: 'a.bin', content: Buffer.alloc(Math.floor(rest / 2), 7) },
        { filename: 'b.bin', content: Buffer.alloc(Math.ceil(rest / 2), 9) },
      ],
    });
  }

  test('a message of exactly mailer.max_message_bytes passes over gRPC and Connect JSON and arrives intact', async () => {
    const grpcSent = await h.send(ofSize(256 * KIB));
    const connectSent = await h.sendConnect(ofSize(256 * KIB));
    expect((await h.final(grpcSent.deliveryId)).status).toBe(DeliveryStatus.SENT);
    expect((await h.final(connectSent.deliveryId)).status).toBe(DeliveryStatus.SENT);
    for (const mail of peer.received) {
      const total = mail.parsed.attachments.reduce((sum, a) => sum + a.content.length, 0);
      expect(total).toBe(256 * KIB - FIXED);
    }
  });

  test('one byte over is INVALID_ARGUMENT naming mailer.max_message_bytes, on both ports', async () => {
    const grpcErr = await grpcError(h.send(ofSize(256 * KIB + 1)));
    expect(grpcErr.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(grpcErr.details).toBe(
      `message: is ${256 * KIB + 1} bytes, over mailer.max_message_bytes (${256 * KIB})`,
    );
    const connectErr = await connectError(h.sendConnect(ofSize(256 * KIB + 1)));
    expect(connectErr.code).toBe(Code.InvalidArgument);
  });

  test('a request far beyond what any valid message needs is refused by the transport: RESOURCE_EXHAUSTED', async () => {
    const huge = email({ attachments: [{ filename: 'huge.bin', content: Buffer.alloc(2 * 1024 * KIB) }] });
    expect((await grpcError(h.send(huge))).code).toBe(grpc.status.RESOURCE_EXHAUSTED);
    expect((await connectError(h.sendConnect(huge))).code).toBe(Code.ResourceExhausted);
    expect(await h.listAll()).toHaveLength(2);
  });

  test('with the defaults, a 25 MiB message fits through both ports, Connect JSON base64 included', () => {
    const config = loadNotificationConfig({}, { env: {}, file: null });
    expect(config.mailer.max_message_bytes).toBe(25 * 1024 * KIB);
    expect(sendEmailRequestBytes(config)).toBeGreaterThan(Math.ceil((25 * 1024 * KIB * 4) / 3));
    expect(sendEmailRequestBytes(config)).toBeGreaterThan(config.server.max_request_bytes);
  });
});

describe('SendEmail without a mailer, and health with a mailer that is down', () => {
  test('no mailer configured: FAILED_PRECONDITION "no mailer backend configured", nothing recorded', async () => {
    const n = await startNotificationApp({ delivery: FAST_DELIVERY });
    try {
      const err = await grpcError(unary(n.notificationGrpc, 'sendEmail', email()));
      expect(err.code).toBe(grpc.status.FAILED_PRECONDITION);
      expect(err.details).toBe('no mailer backend configured');
      const { response } = await unary<{ deliveries: unknown[] }>(n.notificationGrpc, 'listDeliveries', {});
      expect(response.deliveries).toEqual([]);
    } finally {
      await n.close();
    }
  });

  test('a mailer whose relay is down makes /health degraded (207) while the inbox still works', async () => {
    const gone = await startSmtpPeer();
    const port = gone.port;
    await gone.close();
    const n = await startNotificationApp({
      delivery: { ...FAST_DELIVERY, max_attempts: 100 },
      mailer: smtpMailerConfig(port),
    });
    try {
      const res = await fetch(`${n.baseUrl}/health`);
      const body = (await res.json()) as { status: string; checks: Record<string, { status: string }> };
      expect(res.status).toBe(207);
      expect(body.status).toBe('degraded');
      expect(body.checks['notifications.mailer.relay']!.status).toBe('degraded');
      expect(body.checks['notifications.inbox']!.status).toBe('healthy');
      expect((await fetch(`${n.baseUrl}/health/ready`)).status).toBeLessThan(300);
      const { response } = await unary<{ message: { id: string } }>(n.inboxGrpc, 'send', {
        userId: 'u1',
        title: 'still works',
        body: 'b',
      });
      expect(response.message.id).toMatch(/[0-9a-f-]{36}/);
      // A send is still accepted (queued), and retried while the relay is away, never failed.
      const sent = await unary<SendResult>(n.notificationGrpc, 'sendEmail', email());
      let d: WireDelivery | undefined;
      for (let i = 0; i < 500 && !(d && d.attempts >= 2); i++) {
        d = (
          await unary<{ delivery: WireDelivery }>(n.notificationGrpc, 'getDelivery', {
            id: sent.response.deliveryId,
          })
        ).response.delivery;
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      expect(d!.attempts).toBeGreaterThanOrEqual(2);
      expect([DeliveryStatus.PENDING, DeliveryStatus.RETRYING]).toContain(d!.status);
      expect(d!.attemptLog[0]!.outcome).toBe(AttemptOutcome.RETRYABLE);
    } finally {
      await n.close();
    }
  });
});

test('at shutdown an attempt still in flight at the deadline is released, never failed', async () => {
  // A relay that accepts the connection and never greets: the attempt hangs until it is cut.
  const sockets = new Set<Socket>();
  const silent = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  const port = (silent.address() as AddressInfo).port;
  const mailer = smtpMailerConfig(port);
  mailer.backends![0]!.smtp!.greeting_timeout_ms = 30000;
  const n = await startNotificationApp({
    server: { shutdown_timeout_ms: 100 },
    delivery: { ...FAST_DELIVERY, attempt_timeout_ms: 30000, lease_seconds: 60 },
    mailer,
  });
  try {
    const sent = await unary<SendResult>(n.notificationGrpc, 'sendEmail', email());
    await waitFor(() => n.app.deliveries.worker.activeAttempts === 1, 'the attempt to start');
    await n.close();
    const after = await n.app.deliveries.get(sent.response.deliveryId);
    expect(after.status).toBe('pending');
    expect(after.attempts).toEqual([]);
    expect(n.app.deliveries.worker.activeAttempts).toBe(0);
  } finally {
    for (const s of sockets) s.destroy();
    await new Promise((resolve) => silent.close(resolve));
  }
});

test('simpleParser is the parser the peer uses (sanity of the Message-ID helper)', async () => {
  const raw = Buffer.from('Message-ID: <a@b.example>\r\nSubject: x\r\n\r\nbody');
  expect(messageIdOf(raw)).toBe((await simpleParser(raw)).messageId);
});

describe('request size limits by method', () => {
  test('only SendEmail accepts requests beyond server.max_request_bytes: a 6 MB inbox Send or SendSms is RESOURCE_EXHAUSTED on both ports', async () => {
    const n = await startNotificationApp({});
    try {
      // SendEmail takes requests of this size by default (mailer.max_message_bytes is 25 MiB).
      expect(sendEmailRequestBytes(loadNotificationConfig({}, { env: {}, file: null }))).toBeGreaterThan(
        6 * 1024 * KIB,
      );
      const big = 'x'.repeat(6 * 1024 * KIB);
      expect((await grpcError(unary(n.inboxGrpc, 'send', { userId: 'u', title: big }))).code).toBe(
        grpc.status.RESOURCE_EXHAUSTED,
      );
      expect(
        (await grpcError(unary(n.notificationGrpc, 'sendSms', { to: '+15550100', body: big }))).code,
      ).toBe(grpc.status.RESOURCE_EXHAUSTED);
      for (const path of [
        'svc.notification.v1.InboxService/Send',
        'svc.notification.v1.NotificationService/SendSms',
      ]) {
        const res = await fetch(`${n.baseUrl}/${path}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ userId: 'u', to: '+15550100', title: big, body: big }),
        });
        expect(((await res.json()) as { code: string }).code).toBe('resource_exhausted');
      }
    } finally {
      await n.close();
    }
  });
});
