/**
 * SendSms against the real app, over gRPC and Connect, into a local Twilio-style Messages API (Basic
 * auth and form fields checked): sent with the message sid, a recipient failure not retried, 429 and
 * 500 retried, a hang past the timeout retried, bad input refused with nothing recorded, idempotency,
 * no backend, and the health check per SMS backend. Memory store and real PostgreSQL.
 */
import * as grpc from '@grpc/grpc-js';
import { Code, ConnectError } from '@connectrpc/connect';
import {
  AttemptOutcome,
  Channel,
  DeliveryStatus,
} from '../../../shared/gen/svc/notification/v1/notification_pb';
import type { NotificationConfigInput } from '../../../services/notification/config';
import {
  FAST_DELIVERY,
  startNotificationApp,
  type RunningNotificationApp,
} from '../../support/notification-app';
import { createTestDatabase } from '../../support/database';
import { unary } from '../../support/grpc-clients';
import { gatewayConfig, startTwilioPeer, twilioError, type TwilioPeer } from '../channels/sms/twilio-peer';
import { grpcError } from '../../support/call-errors';
import { finalDelivery } from '../../support/final-delivery';

const TOKEN = 'token-sms-0123456789abcdef';
const TO = '+15551234567';

type WireAttempt = { outcome: AttemptOutcome; error: string; providerReference: string };
type WireDelivery = {
  id: string;
  channel: Channel;
  backend: string;
  status: DeliveryStatus;
  attempts: number;
  lastError: string;
  providerReference: string;
  recipient: string;
  attemptLog: WireAttempt[];
};
type SendResult = { deliveryId: string; status: DeliveryStatus };

const metadata = { authorization: `Bearer ${TOKEN}` };

async function sendSms(n: RunningNotificationApp, req: Record<string, unknown>): Promise<SendResult> {
  return (await unary<SendResult>(n.notificationGrpc, 'sendSms', req, { metadata })).response;
}

async function get(n: RunningNotificationApp, id: string): Promise<WireDelivery> {
  return (await unary<{ delivery: WireDelivery }>(n.notificationGrpc, 'getDelivery', { id }, { metadata }))
    .response.delivery;
}

async function smsCount(n: RunningNotificationApp): Promise<number> {
  const { response } = await unary<{ deliveries: WireDelivery[] }>(
    n.notificationGrpc,
    'listDeliveries',
    { channel: Channel.SMS, pageSize: 500 },
    { metadata },
  );
  return response.deliveries.length;
}

/** Polls GetDelivery until the record is final (SENT or FAILED). */
function final(n: RunningNotificationApp, id: string): Promise<WireDelivery> {
  return finalDelivery(() => get(n, id), id);
}

function smsApp(peer: TwilioPeer, extra: NotificationConfigInput = {}) {
  return startNotificationApp({
    ...extra,
    server: { api_tokens: [TOKEN] },
    delivery: { ...FAST_DELIVERY, max_attempts: 3, ...extra.delivery },
    sms_backends: [
      // Long enough that a loaded machine never times out a scripted answer (300 ms did, in CI: the
      // 400 was retried into a 201), short enough for the hang test.
      { name: 'twilio', sms_gateway: gatewayConfig(peer, { timeout_ms: 3_000 }) },
      { name: 'backup', sms_gateway: gatewayConfig(peer, { from_number: '+15550009999' }) },
    ],
  });
}

describe.each([
  ['the memory store', 'memory'],
  ['the database store on real PostgreSQL', 'postgres'],
] as const)('SendSms on %s', (_label, store) => {
  let peer: TwilioPeer;
  let n: RunningNotificationApp;
  let db: { url: string; drop(): Promise<void> } | undefined;

  beforeAll(async () => {
    peer = await startTwilioPeer();
    if (store === 'postgres') db = await createTestDatabase('smsrpc');
    n = await smsApp(peer, db ? { database: { url: db.url }, delivery: { store_backend: 'database' } } : {});
  });
  afterAll(async () => {
    await n?.close();
    await peer?.close();
    await db?.drop();
  });
  beforeEach(() => {
    peer.requests.length = 0;
    peer.script.length = 0;
    peer.refused = 0;
  });

  test('SendSms over gRPC is SENT with the message sid, the form carrying To, From and Body', async () => {
    const sent = await sendSms(n, { to: TO, body: 'Your code is 123456' });
    expect(sent.status).toBe(DeliveryStatus.PENDING);
    const d = await final(n, sent.deliveryId);
    expect(d).toMatchObject({
      channel: Channel.SMS,
      backend: 'twilio',
      status: DeliveryStatus.SENT,
      attempts: 1,
      providerReference: expect.stringMatching(/^SM\d{32}$/),
      recipient: '+1555****567',
    });
    expect(peer.requests.map((r) => r.form)).toEqual([
      { To: TO, From: '+15550001111', Body: 'Your code is 123456' },
    ]);
    expect(peer.refused).toBe(0);
  });

  test('SendSms over Connect goes through the named backend with its sender number', async () => {
    const sent = await n.notificationConnect.sendSms(
      { to: TO, body: 'hello', backend: 'backup' },
      { headers: metadata },
    );
    const d = await final(n, sent.deliveryId);
    expect(d).toMatchObject({ backend: 'backup', status: DeliveryStatus.SENT });
    expect(peer.requests[0]!.form).toMatchObject({ From: '+15550009999', Body: 'hello' });
  });

  test('400 code 21211 makes the delivery FAILED as a recipient failure, never retried', async () => {
    peer.script.push(twilioError(400, 21211, "The 'To' number +15551234567 is not a valid phone number."));
    const d = await final(n, (await sendSms(n, { to: TO, body: 'hi' })).deliveryId);
    expect(d.status).toBe(DeliveryStatus.FAILED);
    expect(d.attempts).toBe(1);
    expect(d.attemptLog[0]!.outcome).toBe(AttemptOutcome.RECIPIENT_FAILURE);
    expect(d.lastError).toContain('invalid recipient number (HTTP 400 code 21211)');
    expect(peer.requests).toHaveLength(1);
  });

  test('429 with Retry-After, then 201, is SENT after a retry', async () => {
    peer.script.push({
      ...twilioError(429, 20429, 'Too Many Requests'),
      headers: { 'Retry-After': '1' },
    } as never);
    const d = await final(n, (await sendSms(n, { to: TO, body: 'hi' })).deliveryId);
    expect(d.status).toBe(DeliveryStatus.SENT);
    expect(d.attemptLog.map((a) => a.outcome)).toEqual([AttemptOutcome.RATE_LIMITED, AttemptOutcome.SENT]);
    expect(peer.requests).toHaveLength(2);
  });

  test('500 is retried, and the retry is SENT', async () => {
    peer.script.push(twilioError(500, 20500, 'An internal server error has occurred'));
    const d = await final(n, (await sendSms(n, { to: TO, body: 'hi' })).deliveryId);
    expect(d.status).toBe(DeliveryStatus.SENT);
    expect(d.attemptLog.map((a) => a.outcome)).toEqual([AttemptOutcome.RETRYABLE, AttemptOutcome.SENT]);
  });

  test('a provider that hangs past timeout_ms is retried, and the retry is SENT', async () => {
    peer.script.push({ kind: 'hang' });
    const d = await final(n, (await sendSms(n, { to: TO, body: 'hi' })).deliveryId);
    expect(d.status).toBe(DeliveryStatus.SENT);
    expect(d.attemptLog[0]).toMatchObject({
      outcome: AttemptOutcome.RETRYABLE,
      error: 'no answer within timeout_ms',
    });
  });

  test('a 500 on every attempt ends FAILED after max_attempts', async () => {
    for (let i = 0; i < 3; i++) peer.script.push(twilioError(503, 20503, 'Service unavailable'));
    const d = await final(n, (await sendSms(n, { to: TO, body: 'hi' })).deliveryId);
    expect(d).toMatchObject({ status: DeliveryStatus.FAILED, attempts: 3 });
  });

  test.each([
    ['to', { to: '5551234567', body: 'hi' }, 'to: "5551234567" is not a telephone number'],
    ['to', { to: '', body: 'hi' }, 'to is required'],
    ['to', { to: '+0123456789', body: 'hi' }, 'E.164'],
    ['to', { to: `+1${'5'.repeat(5000)}`, body: 'hi' }, 'E.164'],
    ['body', { to: TO, body: '' }, 'body is required'],
    ['body', { to: TO, body: '   ' }, 'body is required'],
    ['body', { to: TO, body: 'x'.repeat(1601) }, 'body is longer than 1600 characters'],
    ['body', { to: TO, body: 'a\u0000b' }, 'body contains control characters'],
    // Characters are code points: 257 emoji are 257 characters (514 UTF-16 units).
    [
      'idempotency_key',
      { to: TO, body: 'hi', idempotencyKey: '🚀'.repeat(257) },
      'idempotency_key is longer than 256 characters',
    ],
    ['backend', { to: TO, body: 'hi', backend: 'nope' }, 'unknown SMS backend "nope"'],
  ])(
    'bad %s is INVALID_ARGUMENT naming the field, nothing recorded or sent (%#)',
    async (field, req, message) => {
      const before = await smsCount(n);
      const err = await grpcError(sendSms(n, req));
      expect(err.code).toBe(grpc.status.INVALID_ARGUMENT);
      expect(err.details).toContain(message);
      expect(err.details.startsWith(field)).toBe(true);
      expect(err.details.length).toBeLessThan(300);
      expect(await smsCount(n)).toBe(before);
      expect(peer.requests).toHaveLength(0);
    },
  );

  test('an idempotency key of 256 emoji (256 characters, 512 UTF-16 units) is accepted and dedups', async () => {
    const key = '🚀'.repeat(256);
    const first = await sendSms(n, { to: TO, body: 'emoji key', idempotencyKey: key });
    const again = await sendSms(n, { to: TO, body: 'emoji key', idempotencyKey: key });
    expect(again.deliveryId).toBe(first.deliveryId);
    await final(n, first.deliveryId);
  });

  test('bad input over Connect is invalid_argument (HTTP 400) too', async () => {
    let err: ConnectError | undefined;
    try {
      await n.notificationConnect.sendSms({ to: 'not-a-number', body: 'hi' }, { headers: metadata });
    } catch (e) {
      err = ConnectError.from(e);
    }
    expect(err?.code).toBe(Code.InvalidArgument);
    expect(err?.rawMessage).toMatch(/^to: /);
  });

  test('the same idempotency key and content answers the first delivery and sends once; other content is ALREADY_EXISTS', async () => {
    const first = await sendSms(n, { to: TO, body: 'once', idempotencyKey: 'sms-key-1' });
    const again = await sendSms(n, { to: TO, body: 'once', idempotencyKey: 'sms-key-1' });
    expect(again.deliveryId).toBe(first.deliveryId);
    await final(n, first.deliveryId);
    const err = await grpcError(sendSms(n, { to: TO, body: 'other', idempotencyKey: 'sms-key-1' }));
    expect(err.code).toBe(grpc.status.ALREADY_EXISTS);
    expect(peer.requests).toHaveLength(1);
  });

  test('/health reports one check per SMS backend', async () => {
    const body = (await (await fetch(`${n.baseUrl}/health`)).json()) as {
      checks: Record<string, { status: string }>;
    };
    expect(body.checks['notifications.sms.twilio']?.status).toBe('healthy');
    expect(body.checks['notifications.sms.backup']?.status).toBe('healthy');
  });
});

describe('SendSms without an SMS backend, and health with a gateway that is down', () => {
  test('with no SMS backend, SendSms is FAILED_PRECONDITION "no SMS backend configured"', async () => {
    const n = await startNotificationApp({ server: { api_tokens: [TOKEN] } });
    try {
      const err = await grpcError(sendSms(n, { to: TO, body: 'hi' }));
      expect(err.code).toBe(grpc.status.FAILED_PRECONDITION);
      expect(err.details).toBe('no SMS backend configured');
    } finally {
      await n.close();
    }
  });

  test('a gateway that does not answer makes /health degraded (207), the backend named, no token shown', async () => {
    const peer = await startTwilioPeer();
    await peer.close();
    const n = await smsApp(peer);
    try {
      const res = await fetch(`${n.baseUrl}/health`);
      const text = await res.text();
      expect(res.status).toBe(207);
      const body = JSON.parse(text) as { checks: Record<string, { status: string }> };
      expect(body.checks['notifications.sms.twilio']?.status).toBe('degraded');
      expect(text).not.toContain(gatewayConfig(peer).auth_token);
    } finally {
      await n.close();
    }
  });
});
