/**
 * The suppression list against the real app, over gRPC and Connect, with real peers: a local
 * Twilio-style SMS API, two smtp-server relays under fallback routing, and a local HTTP/2 APNs server.
 * A STOP-like entry then a send: nothing reaches the SMS stand-in; a suppressed address: no relay is
 * contacted (with failover routing: suppression-routing.test.ts); an email's suppressed recipients left out; an APNs 410 suppresses the
 * token; the RPCs' validation, NOT_FOUND, auth and keyset pages. Memory store and real PostgreSQL.
 */
import * as grpc from '@grpc/grpc-js';
import { Code } from '@connectrpc/connect';
import {
  Channel,
  DeliveryFailure,
  DeliveryStatus,
  SuppressionReason,
} from '../../../shared/gen/svc/notification/v1/notification_pb';
import type { NotificationConfigInput } from '../../../services/notification/config';
import {
  FAST_DELIVERY,
  smtpMailerConfig,
  startNotificationApp,
  type RunningNotificationApp,
} from '../../support/notification-app';
import { createTestDatabase } from '../../support/database';
import { unary } from '../../support/grpc-clients';
import { startSmtpPeer, type SmtpPeer } from '../../support/smtp-peer';
import { gatewayConfig, startTwilioPeer, type TwilioPeer } from '../channels/sms/twilio-peer';
import { ecKeys, startApnsPeer, type ApnsPeer } from '../channels/push/push-peers';
import { grpcError, connectError } from '../../support/call-errors';
import { finalDelivery } from '../../support/final-delivery';

const TOKEN = 'token-suppress-0123456789abcdef';
const metadata = { authorization: `Bearer ${TOKEN}` };
const connectHeaders = { headers: { authorization: `Bearer ${TOKEN}` } };
const KEY_ID = 'KEY1234567';
const TEAM_ID = 'TEAM123456';
const TOPIC = 'com.example.app';
const keys = ecKeys();

type WireDelivery = {
  id: string;
  status: DeliveryStatus;
  failure: DeliveryFailure;
  attempts: number;
  recipient: string;
  suppressedRecipients: string[];
};
type WireSuppression = {
  id: string;
  channel: Channel;
  recipient: string;
  reason: SuppressionReason;
  source: string;
};

async function call<T>(n: RunningNotificationApp, method: string, req: Record<string, unknown>): Promise<T> {
  return (await unary<T>(n.notificationGrpc, method, req, { metadata })).response;
}

async function get(n: RunningNotificationApp, id: string): Promise<WireDelivery> {
  return (await call<{ delivery: WireDelivery }>(n, 'getDelivery', { id })).delivery;
}

/** Polls GetDelivery until the record is final; a deadline against hangs, not a timing assertion. */
function final(n: RunningNotificationApp, id: string): Promise<WireDelivery> {
  return finalDelivery(() => get(n, id), id);
}

let unique = 0;
const number = () =>
  `+1555${String(Date.now() % 1e5).padStart(5, '0')}${String(unique++ % 100).padStart(2, '0')}`;
const address = (p: string) => `${p}-${unique++}-${Date.now().toString(36)}@example.com`;

describe.each([
  ['the memory store', 'memory'],
  ['the database store on real PostgreSQL', 'postgres'],
] as const)('the suppression list on %s', (_label, store) => {
  let twilio: TwilioPeer;
  let relays: SmtpPeer[];
  let apns: ApnsPeer;
  let n: RunningNotificationApp;
  let db: { url: string; drop(): Promise<void> } | undefined;

  beforeAll(async () => {
    twilio = await startTwilioPeer();
    relays = [await startSmtpPeer(), await startSmtpPeer()];
    apns = await startApnsPeer({ publicKey: keys.publicKey, keyId: KEY_ID, teamId: TEAM_ID, topic: TOPIC });
    if (store === 'postgres') db = await createTestDatabase('suprpc');
    const [primary, second] = relays.map(
      (r, i) => smtpMailerConfig(r.port, { name: `relay${i}` }).backends![0]!,
    );
    const config: NotificationConfigInput = {
      server: { api_tokens: [TOKEN] },
      delivery: {
        ...FAST_DELIVERY,
        max_attempts: 3,
        routing: { email: 'fallback', sms: 'fallback', push: 'fallback' },
        ...(db ? { store_backend: 'database' as const } : {}),
      },
      ...(db ? { database: { url: db.url } } : {}),
      mailer: { backends: [primary!, { ...second!, primary: false }] },
      sms_backends: [
        { name: 'twilio', sms_gateway: gatewayConfig(twilio) },
        { name: 'backup', sms_gateway: gatewayConfig(twilio, { from_number: '+15550009999' }) },
      ],
      push_backends: [
        {
          name: 'apns',
          driver: 'push_driver_b',
          push_driver_b: {
            key_id: KEY_ID,
            team_id: TEAM_ID,
            private_key: keys.privatePem,
            topic: TOPIC,
            base_url: apns.baseUrl,
          },
        },
      ],
    };
    n = await startNotificationApp(config);
  });

  afterAll(async () => {
    await n?.close();
    await twilio?.close();
    for (const r of relays ?? []) await r.close();
    await apns?.close();
    await db?.drop();
  });

  test('a STOP-like entry then SendSms: FAILED / RECIPIENT_SUPPRESSED at once, nothing reaches the SMS stand-in', async () => {
    const to = number();
    const added = await call<{ suppression: WireSuppression; created: boolean }>(n, 'addSuppression', {
      channel: Channel.SMS,
      recipient: to,
      reason: SuppressionReason.STOP_KEYWORD,
    });
    expect(added.created).toBe(true);
    expect(added.suppression).toMatchObject({
      channel: Channel.SMS,
      reason: SuppressionReason.STOP_KEYWORD,
      recipient: `${to.slice(0, 5)}****${to.slice(-3)}`,
    });
    expect(added.suppression.source).toMatch(/^api:token:[0-9a-f]{16}$/);
    expect(JSON.stringify(added, (_k, v: unknown) => (typeof v === 'bigint' ? String(v) : v))).not.toContain(
      to,
    );
    const sent = await call<{ deliveryId: string; status: DeliveryStatus }>(n, 'sendSms', { to, body: 'hi' });
    expect(sent.status).toBe(DeliveryStatus.FAILED);
    expect(await get(n, sent.deliveryId)).toMatchObject({
      status: DeliveryStatus.FAILED,
      failure: DeliveryFailure.RECIPIENT_SUPPRESSED,
      attempts: 0,
    });
    // A send to another number afterwards is delivered: the worker ran, and the stand-in saw only it.
    const other = number();
    const control = await call<{ deliveryId: string }>(n, 'sendSms', { to: other, body: 'hi' });
    expect((await final(n, control.deliveryId)).status).toBe(DeliveryStatus.SENT);
    expect(twilio.requests.map((r) => r.form.To)).not.toContain(to);
    expect(twilio.requests.map((r) => r.form.To)).toContain(other);

    // A STOP is the recipient's to lift: RemoveSuppression is refused and the entry stays.
    const refused = await grpcError(call(n, 'removeSuppression', { channel: Channel.SMS, recipient: to }));
    expect(refused.code).toBe(grpc.status.FAILED_PRECONDITION);
    expect(refused.details).toContain('only their START lifts it');
    expect(await n.app.suppressions.isSuppressed('sms', to)).toBe(true);

    // Lifting it as the inbound START does: the next send goes out.
    expect(await n.app.suppressions.remove('sms', to)).toBe(true);
    const after = await call<{ deliveryId: string }>(n, 'sendSms', { to, body: 'hi again' });
    expect((await final(n, after.deliveryId)).status).toBe(DeliveryStatus.SENT);
    expect(twilio.requests.map((r) => r.form.To)).toContain(to);
  });

  test('a suppressed address over Connect: FAILED / RECIPIENT_SUPPRESSED, no relay contacted', async () => {
    const to = address('Bounced');
    await n.notificationConnect.addSuppression(
      { channel: Channel.EMAIL, recipient: to.toUpperCase(), reason: SuppressionReason.HARD_BOUNCE },
      connectHeaders,
    );
    const sent = await n.notificationConnect.sendEmail({ to: [to], subject: 's', text: 't' }, connectHeaders);
    expect(sent.status).toBe(DeliveryStatus.FAILED);
    // A send afterwards is delivered: the worker ran, and no relay saw the suppressed address.
    const control = await n.notificationConnect.sendEmail(
      { to: [address('ok')], subject: 's', text: 't' },
      connectHeaders,
    );
    expect((await final(n, control.deliveryId)).status).toBe(DeliveryStatus.SENT);
    const { delivery } = await n.notificationConnect.getDelivery({ id: sent.deliveryId }, connectHeaders);
    expect(delivery?.failure).toBe(DeliveryFailure.RECIPIENT_SUPPRESSED);
    expect(delivery?.attemptLog).toEqual([]);
    const reached = relays.flatMap((r) =>
      r.received.flatMap((m) => m.recipients.map((x) => x.toLowerCase())),
    );
    expect(reached).not.toContain(to.toLowerCase());
  });

  test('an email to several: the suppressed ones are left out and reported in the record', async () => {
    const [keep, drop, copy] = [address('keep'), address('drop'), address('copy')];
    await call(n, 'addSuppression', {
      channel: Channel.EMAIL,
      recipient: drop,
      reason: SuppressionReason.UNSUBSCRIBED,
    });
    const sent = await call<{ deliveryId: string; status: DeliveryStatus }>(n, 'sendEmail', {
      to: [keep, drop],
      cc: [copy],
      subject: 's',
      text: 't',
    });
    expect(sent.status).toBe(DeliveryStatus.PENDING);
    const d = await final(n, sent.deliveryId);
    expect(d.status).toBe(DeliveryStatus.SENT);
    expect(d.suppressedRecipients).toEqual(['d***@example.com']);
    expect(d.recipient).toBe('k***@example.com, c***@example.com');
    const mail = relays.flatMap((r) => r.received).find((m) => m.recipients.includes(keep));
    expect(mail?.recipients.sort()).toEqual([copy, keep].sort());
    // The To header names only who gets it.
    expect(mail?.parsed.headers.get('to')).toBeDefined();
    expect(JSON.stringify(mail?.parsed.to)).not.toContain(drop);
  });

  test('an APNs 410 suppresses the token: the next push is stopped before APNs', async () => {
    const token = `${unique++}`.padStart(8, '0') + 'ab'.repeat(28);
    apns.unregistered.add(token);
    const first = await call<{ deliveryId: string }>(n, 'sendPush', {
      message: { deviceToken: token, title: 't', body: 'b' },
    });
    expect(await final(n, first.deliveryId)).toMatchObject({
      status: DeliveryStatus.FAILED,
      failure: DeliveryFailure.RECIPIENT_UNREGISTERED,
    });
    const listed = await call<{ suppressions: WireSuppression[] }>(n, 'listSuppressions', {
      channel: Channel.PUSH,
      pageSize: 500,
    });
    const entry = listed.suppressions.find((s) => s.recipient === `${token.slice(0, 4)}…${token.slice(-4)}`);
    expect(entry).toMatchObject({
      reason: SuppressionReason.UNREGISTERED_TOKEN,
      source: 'provider_error:apns',
    });
    const second = await call<{ deliveryId: string; status: DeliveryStatus }>(n, 'sendPush', {
      message: { deviceToken: token, title: 't', body: 'b' },
    });
    expect(second.status).toBe(DeliveryStatus.FAILED);
    expect((await get(n, second.deliveryId)).failure).toBe(DeliveryFailure.RECIPIENT_SUPPRESSED);
    expect(apns.requests.filter((r) => r.token === token)).toHaveLength(1);
  });

  test('AddSuppression refuses bad input with INVALID_ARGUMENT naming the field; RemoveSuppression of an unknown one is NOT_FOUND', async () => {
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ channel: Channel.UNSPECIFIED, recipient: '+15551234567' }, /channel is required/],
      [{ channel: 99, recipient: '+15551234567' }, /channel: unknown value/],
      [{ channel: Channel.SMS, recipient: '' }, /recipient is required/],
      [{ channel: Channel.SMS, recipient: '5551234' }, /recipient is not a telephone number/],
      [{ channel: Channel.EMAIL, recipient: 'nobody' }, /recipient is not an email address/],
      [{ channel: Channel.SMS, recipient: '+15551234567', reason: 42 }, /reason: unknown value/],
    ];
    for (const [req, message] of cases) {
      const err = await grpcError(call(n, 'addSuppression', req));
      expect(err.code).toBe(grpc.status.INVALID_ARGUMENT);
      expect(err.details).toMatch(message);
    }
    const missing = await grpcError(
      call(n, 'removeSuppression', { channel: Channel.SMS, recipient: number() }),
    );
    expect(missing.code).toBe(grpc.status.NOT_FOUND);
    // Any other reason is lifted by hand (a bounced address that was fixed).
    const bounced = number();
    await call(n, 'addSuppression', {
      channel: Channel.SMS,
      recipient: bounced,
      reason: SuppressionReason.HARD_BOUNCE,
    });
    await call(n, 'removeSuppression', { channel: Channel.SMS, recipient: bounced });
    expect(await n.app.suppressions.isSuppressed('sms', bounced)).toBe(false);
    const viaConnect = await connectError(
      n.notificationConnect.addSuppression({ channel: Channel.PUSH, recipient: 'a b' }, connectHeaders),
    );
    expect(viaConnect.code).toBe(Code.InvalidArgument);
  });

  test('the suppression RPCs need an API token like the other RPCs', async () => {
    const err = await grpcError(
      unary(n.notificationGrpc, 'listSuppressions', {}, { metadata: { authorization: 'Bearer wrong' } }),
    );
    expect(err.code).toBe(grpc.status.UNAUTHENTICATED);
    const viaConnect = await connectError(
      n.notificationConnect.addSuppression({ channel: Channel.SMS, recipient: '+15551234567' }),
    );
    expect(viaConnect.code).toBe(Code.Unauthenticated);
  });

  test('ListSuppressions pages newest first without repeats; a token under another channel is INVALID_ARGUMENT', async () => {
    for (let i = 0; i < 5; i++) {
      await n.notificationConnect.addSuppression(
        { channel: Channel.SMS, recipient: number(), reason: SuppressionReason.MANUAL },
        connectHeaders,
      );
    }
    const ids: string[] = [];
    let pageToken = '';
    for (let pages = 0; pages < 100; pages++) {
      const page = await n.notificationConnect.listSuppressions(
        { channel: Channel.SMS, pageSize: 2, pageToken },
        connectHeaders,
      );
      expect(page.suppressions.length).toBeLessThanOrEqual(2);
      ids.push(...page.suppressions.map((s) => s.id));
      for (const s of page.suppressions) expect(s.channel).toBe(Channel.SMS);
      pageToken = page.nextPageToken;
      if (!pageToken) break;
    }
    expect(ids.length).toBeGreaterThanOrEqual(5);
    expect(new Set(ids).size).toBe(ids.length);
    const first = await n.notificationConnect.listSuppressions(
      { channel: Channel.SMS, pageSize: 1 },
      connectHeaders,
    );
    const err = await connectError(
      n.notificationConnect.listSuppressions(
        { channel: Channel.EMAIL, pageToken: first.nextPageToken },
        connectHeaders,
      ),
    );
    expect(err.code).toBe(Code.InvalidArgument);
  });
});
