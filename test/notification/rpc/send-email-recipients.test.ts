/**
 * SendEmail with far more recipients than the documented limit (`mailer.max_recipients`, default 100)
 * is INVALID_ARGUMENT naming the limit, over the real RPC (grpc-js and Connect), never INTERNAL: a
 * spread of 100,000 addresses into function arguments overflowed the stack (issue 22). Nothing is
 * sent and no delivery is recorded.
 */
import { Code, ConnectError } from '@connectrpc/connect';
import { status as GrpcStatus } from '@grpc/grpc-js';
import { unary } from '../../support/grpc-clients';
import {
  FAST_DELIVERY,
  smtpMailerConfig,
  startNotificationApp,
  type RunningNotificationApp,
} from '../../support/notification-app';
import { startSmtpPeer, type SmtpPeer } from '../../support/smtp-peer';

const TOKEN = 'token-send-email-recipients-0123456';
const metadata = { authorization: `Bearer ${TOKEN}` };

let smtp: SmtpPeer;
let n: RunningNotificationApp;

beforeAll(async () => {
  smtp = await startSmtpPeer();
  n = await startNotificationApp({
    server: { api_tokens: [TOKEN] },
    delivery: FAST_DELIVERY,
    mailer: smtpMailerConfig(smtp.port),
  });
});

afterAll(async () => {
  await n?.close();
  await smtp?.close();
});

const many = (count: number, field: string) =>
  Array.from({ length: count }, (_, i) => `${field}${i}@example.com`);

const deliveriesRecorded = async () =>
  (
    await unary<{ deliveries: unknown[] }>(
      n.notificationGrpc,
      'listDeliveries',
      { pageSize: 500 },
      { metadata },
    )
  ).response.deliveries.length;

it.each([
  ['to', { to: many(100_000, 'to') }],
  ['cc', { to: ['a@example.com'], cc: many(100_000, 'cc') }],
  ['bcc', { to: ['a@example.com'], bcc: many(150_000, 'bcc') }],
])(
  'when SendEmail over grpc-js has 100,000+ %s addresses, it is INVALID_ARGUMENT naming the limit of 100',
  async (_field, recipients) => {
    const before = await deliveriesRecorded();
    const err = await unary(
      n.notificationGrpc,
      'sendEmail',
      { ...recipients, subject: 'Hello', text: 'Hi' },
      { metadata },
    ).then(
      () => undefined,
      (e: { code: number; details: string }) => e,
    );
    expect(err?.code).toBe(GrpcStatus.INVALID_ARGUMENT);
    expect(err?.details).toContain('at most 100 recipients');
    expect(await deliveriesRecorded()).toBe(before);
    expect(smtp.acceptedCount).toBe(0);
  },
);

it('when SendEmail over Connect has 100,000 to addresses, it is INVALID_ARGUMENT naming the limit', async () => {
  const err = await n.notificationConnect
    .sendEmail(
      { to: many(100_000, 'c'), subject: 'Hello', text: 'Hi' },
      { headers: { authorization: `Bearer ${TOKEN}` } },
    )
    .then(
      () => undefined,
      (e: unknown) => ConnectError.from(e),
    );
  expect(err?.code).toBe(Code.InvalidArgument);
  expect(err?.rawMessage).toContain('at most 100 recipients');
});

it('when SendEmail has exactly 100 recipients, it is accepted', async () => {
  const { response } = await unary<{ deliveryId: string }>(
    n.notificationGrpc,
    'sendEmail',
    { to: many(60, 't'), cc: many(20, 'c'), bcc: many(20, 'b'), subject: 'Hello', text: 'Hi' },
    { metadata },
  );
  expect(response.deliveryId).toMatch(/^[0-9a-f-]{36}$/);
});
