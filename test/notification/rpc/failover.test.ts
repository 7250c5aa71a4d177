/**
 * RPC sends fail over like pipeline sends (`delivery.routing.<channel>: fallback`): SendEmail, SendSms,
 * SendPush and SendPushBatch without a `backend` go through the secondary when the primary is down
 * (connection refused, or its circuit open), and the secondary sends with its OWN sender identity
 * (mailer `from_email` / `from_name`, SMS `from_number`, APNs topic) while the email keeps its one
 * Message-ID; the receipts of the secondary find the delivery. A named backend never fails over. A
 * suppressed recipient reaches neither backend (issue 12: "a bounce on the primary mailer then a send
 * with failover routing: neither mailer is contacted"). Real app over grpc-js, real local peers
 * (smtp-server, the SendGrid v3 and Twilio stand-ins, HTTP/2 APNs servers); memory store and real
 * PostgreSQL.
 */
import {
  AttemptOutcome,
  Channel,
  DeliveryFailure,
  DeliveryStatus,
  SuppressionReason,
} from '../../../shared/gen/svc/notification/v1/notification_pb';
import type { NotificationConfigInput } from '../../../services/notification/config';
import { createTestDatabase } from '../../support/database';
import { unary } from '../../support/grpc-clients';
import {
  FAST_DELIVERY,
  startNotificationApp,
  type RunningNotificationApp,
} from '../../support/notification-app';
import { createSmtpPeer, startSmtpPeer } from '../../support/smtp-peer';
import {
  eventWebhookKeys,
  postEvents,
  startV3Peer,
  type V3Peer,
  type V3Request,
} from '../channels/email/v3-peer';
import {
  gatewayConfig,
  sendStatusCallback,
  startTwilioPeer,
  twilioError,
  type TwilioPeer,
} from '../channels/sms/twilio-peer';
import { ecKeys, startApnsPeer, type ApnsPeer } from '../channels/push/push-peers';
import { refusedPort } from '../../support/ports';
import { finalDelivery } from '../../support/final-delivery';

const TOKEN = 'token-failover-0123456789abcdef';
const metadata = { authorization: `Bearer ${TOKEN}` };
const PUBLIC = 'https://notify.example.com';

const PRIMARY_FROM = 'noreply@primary.example.com';
const SECONDARY_FROM = 'mail@secondary.example.com';
const SECONDARY_NUMBER = '+15550009999';
const KEY_ID = 'KEY1234567';
const TEAM_ID = 'TEAM123456';
const PRIMARY_TOPIC = 'com.example.primary';
const SECONDARY_TOPIC = 'com.example.secondary';
const apnsKeys = ecKeys();
const webhookKeys = eventWebhookKeys();

type WireAttempt = { backend: string; outcome: AttemptOutcome; providerReference: string };
type WireDelivery = {
  id: string;
  backend: string;
  status: DeliveryStatus;
  failure: DeliveryFailure;
  attempts: number;
  providerReference: string;
  attemptLog: WireAttempt[];
};

/** The mail sends an http_api stand-in received (its health probes left out). */
function mailSends(api: V3Peer): V3Request[] {
  return api.requests.filter((r) => r.method === 'POST' && r.path === '/v3/mail/send');
}

/** Test settings of a smtp mailer backend at `port`. */
function smtpBackend(name: string, port: number, fromEmail: string, extra: Record<string, unknown> = {}) {
  return {
    name,
    driver: 'smtp' as const,
    from_email: fromEmail,
    smtp: { host: '127.0.0.1', port, pool: false, connection_timeout_ms: 2000, greeting_timeout_ms: 2000 },
    ...extra,
  };
}

/** Test settings of an http_api mailer backend at `baseUrl`, with the event webhook key. */
function apiBackend(name: string, baseUrl: string, fromEmail: string, extra: Record<string, unknown> = {}) {
  return {
    name,
    driver: 'http_api' as const,
    from_email: fromEmail,
    http_api: {
      base_url: baseUrl,
      api_key: 'SG.secret-key-for-tests',
      timeout_ms: 2000,
      event_webhook_public_key: webhookKeys.publicKey,
    },
    ...extra,
  };
}

/** Settings of an APNs backend at `baseUrl` sending for `topic`. */
function apnsBackend(name: string, baseUrl: string, topic: string) {
  return {
    name,
    driver: 'push_driver_b' as const,
    push_driver_b: {
      key_id: KEY_ID,
      team_id: TEAM_ID,
      private_key: apnsKeys.privatePem,
      topic,
      base_url: baseUrl,
      timeout_ms: 2000,
    },
  };
}

function apnsPeer(topic: string): Promise<ApnsPeer> {
  return startApnsPeer({ publicKey: apnsKeys.publicKey, keyId: KEY_ID, teamId: TEAM_ID, topic });
}

let unique = 0;
const address = (p: string) => `${p}-${unique++}-${Date.now().toString(36)}@example.com`;
const number = () =>
  `+1555${String(Date.now() % 1e5).padStart(5, '0')}${String(unique++ % 100).padStart(2, '0')}`;
const deviceToken = () => `${Date.now().toString(16)}${String(unique++).padStart(4, '0')}`.padEnd(64, 'a');

describe.each([
  ['the memory store', 'memory'],
  ['the database store on real PostgreSQL', 'postgres'],
] as const)('RPC sends with fallback routing on %s', (_label, store) => {
  let db: { url: string; drop(): Promise<void> } | undefined;
  /** What each test started, closed after it. */
  let cleanup: (() => Promise<void>)[] = [];

  beforeAll(async () => {
    if (store === 'postgres') db = await createTestDatabase('failover');
  });
  afterAll(async () => {
    await db?.drop();
  });
  afterEach(async () => {
    for (const close of cleanup.reverse()) await close();
    cleanup = [];
  });

  /** The app with fallback routing on every channel; `failureThreshold` opens a breaker that soon. */
  async function start(
    config: NotificationConfigInput,
    failureThreshold = 100,
  ): Promise<RunningNotificationApp> {
    const n = await startNotificationApp({
      server: { api_tokens: [TOKEN] },
      webhooks: { public_base_url: PUBLIC, max_age_seconds: 300 },
      ...(db ? { database: { url: db.url } } : {}),
      ...config,
      delivery: {
        ...FAST_DELIVERY,
        max_attempts: 3,
        routing: { email: 'fallback', sms: 'fallback', push: 'fallback' },
        circuit_breaker: { failure_threshold: failureThreshold, cooldown_seconds: 3600 },
        ...(db ? { store_backend: 'database' as const } : {}),
      },
    });
    cleanup.push(() => n.close());
    return n;
  }

  function closeAfter<T extends { close(): Promise<void> }>(peer: T): T {
    cleanup.push(() => peer.close());
    return peer;
  }

  async function call<T>(
    n: RunningNotificationApp,
    method: string,
    req: Record<string, unknown>,
  ): Promise<T> {
    return (await unary<T>(n.notificationGrpc, method, req, { metadata })).response;
  }

  async function get(n: RunningNotificationApp, id: string): Promise<WireDelivery> {
    return (await call<{ delivery: WireDelivery }>(n, 'getDelivery', { id })).delivery;
  }

  /** Polls GetDelivery until the record is final; a deadline against hangs, not a timing assertion. */
  function final(n: RunningNotificationApp, id: string): Promise<WireDelivery> {
    return finalDelivery(() => get(n, id), id, { stepMs: 20 });
  }

  async function sendEmail(n: RunningNotificationApp, req: Record<string, unknown>) {
    return call<{ deliveryId: string; messageId: string }>(n, 'sendEmail', {
      subject: 'Failover',
      text: 'Hello',
      ...req,
    });
  }

  describe('SendEmail', () => {
    it('when the smtp primary refuses connections, the email is SENT through the http_api secondary, from its address and name, with the same Message-ID; its receipts find the delivery', async () => {
      const api = closeAfter(await startV3Peer());
      const n = await start({
        mailer: {
          backends: [
            smtpBackend('primary', await refusedPort(), PRIMARY_FROM, { primary: true }),
            apiBackend('secondary', api.baseUrl, SECONDARY_FROM, { from_name: 'Secondary Desk' }),
          ],
        },
      });

      const to = address('jane');
      const sent = await sendEmail(n, { to: [to] });
      const d = await final(n, sent.deliveryId);

      expect(d).toMatchObject({ status: DeliveryStatus.SENT, backend: 'secondary' });
      expect(d.attemptLog.map((a) => [a.backend, a.outcome])).toEqual([
        ['primary', AttemptOutcome.RETRYABLE],
        ['secondary', AttemptOutcome.SENT],
      ]);
      expect(mailSends(api)).toHaveLength(1);
      const body = JSON.parse(mailSends(api)[0]!.body) as {
        from: { email: string; name?: string };
        headers: Record<string, string>;
        custom_args: { delivery_id: string };
        personalizations: { to: { email: string }[] }[];
      };
      expect(body.from).toEqual({ email: SECONDARY_FROM, name: 'Secondary Desk' });
      expect(body.headers['Message-ID']).toBe(sent.messageId);
      expect(body.personalizations[0]!.to).toEqual([{ email: to }]);
      expect(body.custom_args.delivery_id).toBe(sent.deliveryId);

      // The secondary's signed event webhook (by provider message id only) finds the delivery.
      const delivered = {
        email: to,
        event: 'delivered',
        sg_event_id: `ev-${sent.deliveryId}`,
        sg_message_id: `${d.providerReference}.filter0001`,
        timestamp: Math.floor(Date.now() / 1000),
      };
      const url = `${n.baseUrl}/webhooks/email/secondary/events`;
      expect((await postEvents(url, [delivered], webhookKeys.privateKey)).status).toBe(200);
      expect((await get(n, sent.deliveryId)).status).toBe(DeliveryStatus.DELIVERED);
    });

    it("when the http_api primary refuses connections, the email is SENT through the smtp secondary from its address, keeping the Message-ID and the caller's display name", async () => {
      const relay = closeAfter(await startSmtpPeer());
      const n = await start({
        mailer: {
          backends: [
            apiBackend('primary', `http://127.0.0.1:${await refusedPort()}`, PRIMARY_FROM, { primary: true }),
            smtpBackend('secondary', relay.port, SECONDARY_FROM, { from_name: 'Secondary Desk' }),
          ],
        },
      });

      const to = address('jane');
      const sent = await sendEmail(n, { to: [to], fromName: 'Jane App' });
      const d = await final(n, sent.deliveryId);

      expect(d).toMatchObject({ status: DeliveryStatus.SENT, backend: 'secondary' });
      expect(d.attemptLog.map((a) => a.backend)).toEqual(['primary', 'secondary']);
      expect(relay.received).toHaveLength(1);
      const mail = relay.received[0]!;
      expect(mail.from).toBe(SECONDARY_FROM); // the envelope (MAIL FROM)
      expect(mail.parsed.from?.value).toEqual([{ address: SECONDARY_FROM, name: 'Jane App' }]);
      expect(mail.parsed.messageId).toBe(sent.messageId);
      expect(mail.recipients).toEqual([to]);
    });

    it("when the primary's circuit is open, a new email goes straight to the secondary: the primary, up again, is not contacted", async () => {
      const primary = closeAfter(createSmtpPeer());
      await primary.start();
      await primary.stop(); // the port is fixed now; down until started again
      const secondary = closeAfter(await startSmtpPeer());
      const n = await start(
        {
          mailer: {
            backends: [
              smtpBackend('primary', primary.port, PRIMARY_FROM, { primary: true }),
              smtpBackend('secondary', secondary.port, SECONDARY_FROM),
            ],
          },
        },
        1, // one failure opens the primary's circuit (cool-down one hour)
      );

      const first = await final(n, (await sendEmail(n, { to: [address('a')] })).deliveryId);
      expect(first.attemptLog.map((a) => a.backend)).toEqual(['primary', 'secondary']);

      await primary.start();
      const sent = await sendEmail(n, { to: [address('b')] });
      const second = await final(n, sent.deliveryId);
      expect(second).toMatchObject({ status: DeliveryStatus.SENT, backend: 'secondary' });
      expect(second.attemptLog.map((a) => a.backend)).toEqual(['secondary']);
      expect(primary.dataCount).toBe(0);
      expect(secondary.received.map((m) => [m.from, m.parsed.messageId])).toEqual([
        [SECONDARY_FROM, expect.any(String)],
        [SECONDARY_FROM, sent.messageId],
      ]);
    });

    it('when the caller names the primary, the email never fails over: it ends FAILED on the primary and the secondary gets nothing', async () => {
      const secondary = closeAfter(await startSmtpPeer());
      const n = await start({
        mailer: {
          backends: [
            smtpBackend('primary', await refusedPort(), PRIMARY_FROM, { primary: true }),
            smtpBackend('secondary', secondary.port, SECONDARY_FROM),
          ],
        },
      });

      const named = await final(
        n,
        (await sendEmail(n, { to: [address('named')], backend: 'primary' })).deliveryId,
      );
      expect(named).toMatchObject({
        status: DeliveryStatus.FAILED,
        failure: DeliveryFailure.RETRIES_EXHAUSTED,
        backend: 'primary',
      });
      expect(named.attemptLog.map((a) => a.backend)).toEqual(['primary', 'primary', 'primary']);
      expect(secondary.dataCount).toBe(0);

      // The same setup fails an unnamed email over: the named one stayed put because it was named.
      const control = await final(n, (await sendEmail(n, { to: [address('control')] })).deliveryId);
      expect(control).toMatchObject({ status: DeliveryStatus.SENT, backend: 'secondary' });
      expect(secondary.dataCount).toBe(1);
    });

    it('a bounce on the primary mailer, then a send with failover routing: neither mailer is contacted', async () => {
      const api = closeAfter(await startV3Peer());
      const relay = closeAfter(await startSmtpPeer());
      const n = await start({
        mailer: {
          backends: [
            apiBackend('primary', api.baseUrl, PRIMARY_FROM, { primary: true }),
            smtpBackend('secondary', relay.port, SECONDARY_FROM),
          ],
        },
      });
      const gone = address('gone');
      const first = await final(n, (await sendEmail(n, { to: [gone] })).deliveryId);
      expect(first).toMatchObject({ status: DeliveryStatus.SENT, backend: 'primary' });
      const bounce = {
        email: gone,
        event: 'bounce',
        type: 'bounce',
        sg_event_id: `ev-bounce-${first.id}`,
        sg_message_id: `${first.providerReference}.filter0001`,
        timestamp: Math.floor(Date.now() / 1000),
        delivery_id: first.id,
      };
      const url = `${n.baseUrl}/webhooks/email/primary/events`;
      expect((await postEvents(url, [bounce], webhookKeys.privateKey)).status).toBe(200);
      expect((await get(n, first.id)).status).toBe(DeliveryStatus.UNDELIVERED);

      // The primary now answers 503 (down): any send that reached it would fail over to the relay.
      api.script.push(...Array.from({ length: 5 }, () => ({ kind: 'answer' as const, status: 503 })));
      const before = mailSends(api).length;
      const stopped = await final(n, (await sendEmail(n, { to: [gone] })).deliveryId);
      expect(stopped).toMatchObject({
        status: DeliveryStatus.FAILED,
        failure: DeliveryFailure.RECIPIENT_SUPPRESSED,
        attempts: 0,
      });
      expect(mailSends(api).length).toBe(before);
      expect(relay.dataCount).toBe(0);

      // Failover is live in this setup: another address goes to the primary (503), then the relay.
      const control = await final(n, (await sendEmail(n, { to: [address('fine')] })).deliveryId);
      expect(control).toMatchObject({ status: DeliveryStatus.SENT, backend: 'secondary' });
      expect(mailSends(api).length).toBe(before + 1);
      expect(relay.received.map((m) => m.recipients)).not.toContainEqual([gone]);
    });
  });

  describe('SendSms', () => {
    async function sms(primary: TwilioPeer | string, secondary: TwilioPeer): Promise<RunningNotificationApp> {
      const primaryUrl = typeof primary === 'string' ? primary : primary.baseUrl;
      return start({
        sms_backends: [
          { name: 'primary', sms_gateway: gatewayConfig({ baseUrl: primaryUrl }) },
          {
            name: 'secondary',
            sms_gateway: gatewayConfig(secondary, { from_number: SECONDARY_NUMBER }),
          },
        ],
      });
    }
    const sendSms = (n: RunningNotificationApp, req: Record<string, unknown>) =>
      call<{ deliveryId: string }>(n, 'sendSms', { body: 'Your code is 123456', ...req });

    it('when the primary refuses connections, the SMS is SENT through the secondary from its number; its status callback makes it DELIVERED', async () => {
      const secondary = closeAfter(await startTwilioPeer());
      const n = await sms(`http://127.0.0.1:${await refusedPort()}`, secondary);

      const to = number();
      const { deliveryId } = await sendSms(n, { to });
      const d = await final(n, deliveryId);

      expect(d).toMatchObject({ status: DeliveryStatus.SENT, backend: 'secondary' });
      expect(d.attemptLog.map((a) => [a.backend, a.outcome])).toEqual([
        ['primary', AttemptOutcome.RETRYABLE],
        ['secondary', AttemptOutcome.SENT],
      ]);
      expect(secondary.requests.map((r) => [r.form.To, r.form.From])).toEqual([[to, SECONDARY_NUMBER]]);
      const request = secondary.requests[0]!;
      expect(request.form.StatusCallback).toBe(`${PUBLIC}/webhooks/sms/secondary/status`);
      const callback = await sendStatusCallback(request, d.providerReference, 'delivered', n.baseUrl);
      expect(callback.status).toBe(200);
      expect((await get(n, deliveryId)).status).toBe(DeliveryStatus.DELIVERED);
    });

    it("a status callback on the primary's route with the secondary's message id does not touch the failed-over SMS", async () => {
      // Both stand-ins number their messages from SM...01: the same reference from two backends.
      const primary = closeAfter(await startTwilioPeer());
      const secondary = closeAfter(await startTwilioPeer());
      primary.script.push(twilioError(503, 20500, 'Service unavailable'));
      const n = await sms(primary, secondary);

      const { deliveryId } = await sendSms(n, { to: number() });
      const d = await final(n, deliveryId);
      expect(d.backend).toBe('secondary');
      // What the primary's webhook would post for ITS message with that id: not this delivery.
      const onPrimaryRoute = { ...secondary.requests[0]!, form: { ...secondary.requests[0]!.form } };
      onPrimaryRoute.form.StatusCallback = `${PUBLIC}/webhooks/sms/primary/status`;
      const answer = await sendStatusCallback(onPrimaryRoute, d.providerReference, 'undelivered', n.baseUrl, {
        errorCode: '30008',
      });
      expect(answer.status).toBe(200); // a message the primary's route does not know: counted, dropped
      expect((await get(n, deliveryId)).status).toBe(DeliveryStatus.SENT);
    });

    it('when the caller names the primary, the SMS never fails over', async () => {
      const secondary = closeAfter(await startTwilioPeer());
      const n = await sms(`http://127.0.0.1:${await refusedPort()}`, secondary);

      const named = await final(n, (await sendSms(n, { to: number(), backend: 'primary' })).deliveryId);
      expect(named).toMatchObject({ status: DeliveryStatus.FAILED, backend: 'primary' });
      expect(named.attemptLog.map((a) => a.backend)).toEqual(['primary', 'primary', 'primary']);
      expect(secondary.accepted).toBe(0);
    });

    it('a suppressed number reaches neither backend, while another number fails over', async () => {
      const primary = closeAfter(await startTwilioPeer());
      const secondary = closeAfter(await startTwilioPeer());
      primary.script.push(twilioError(503, 20500, 'Service unavailable'));
      const n = await sms(primary, secondary);
      const stoppedNumber = number();
      await call(n, 'addSuppression', {
        channel: Channel.SMS,
        recipient: stoppedNumber,
        reason: SuppressionReason.STOP_KEYWORD,
      });

      const stopped = await final(n, (await sendSms(n, { to: stoppedNumber })).deliveryId);
      expect(stopped).toMatchObject({
        status: DeliveryStatus.FAILED,
        failure: DeliveryFailure.RECIPIENT_SUPPRESSED,
        attempts: 0,
      });
      expect([primary.accepted, secondary.accepted]).toEqual([0, 0]);

      const control = await final(n, (await sendSms(n, { to: number() })).deliveryId);
      expect(control).toMatchObject({ status: DeliveryStatus.SENT, backend: 'secondary' });
      expect([primary.accepted, secondary.accepted]).toEqual([1, 1]);
    });
  });

  describe('SendPush and SendPushBatch', () => {
    async function push(primaryUrl: string, secondary: ApnsPeer): Promise<RunningNotificationApp> {
      return start({
        push_backends: [
          { ...apnsBackend('primary', primaryUrl, PRIMARY_TOPIC), primary: true },
          apnsBackend('secondary', secondary.baseUrl, SECONDARY_TOPIC),
        ],
      });
    }

    it('when the primary refuses connections, notifications are SENT through the secondary with its topic, one by one and in a batch', async () => {
      const secondary = closeAfter(await apnsPeer(SECONDARY_TOPIC));
      const n = await push(`http://127.0.0.1:${await refusedPort()}`, secondary);

      const one = deviceToken();
      const { deliveryId } = await call<{ deliveryId: string }>(n, 'sendPush', {
        message: { deviceToken: one, title: 'Hi', body: 'one' },
      });
      const d = await final(n, deliveryId);
      expect(d).toMatchObject({ status: DeliveryStatus.SENT, backend: 'secondary' });
      expect(d.attemptLog.map((a) => [a.backend, a.outcome])).toEqual([
        ['primary', AttemptOutcome.RETRYABLE],
        ['secondary', AttemptOutcome.SENT],
      ]);
      expect(d.providerReference).toBe(d.attemptLog[1]!.providerReference);

      const batch = [deviceToken(), deviceToken(), deviceToken()];
      const { results } = await call<{ results: { deliveryId: string }[] }>(n, 'sendPushBatch', {
        messages: batch.map((t) => ({ deviceToken: t, body: 'batch' })),
      });
      for (const r of results) {
        expect(await final(n, r.deliveryId)).toMatchObject({
          status: DeliveryStatus.SENT,
          backend: 'secondary',
        });
      }
      // The secondary's peer refuses any other topic (400 TopicDisallowed): every one carried its own.
      expect(secondary.requests.map((r) => r.token).sort()).toEqual([one, ...batch].sort());
      expect(new Set(secondary.requests.map((r) => r.headers['apns-topic']))).toEqual(
        new Set([SECONDARY_TOPIC]),
      );
    });

    it('when the caller names the primary, the notification never fails over', async () => {
      const secondary = closeAfter(await apnsPeer(SECONDARY_TOPIC));
      const n = await push(`http://127.0.0.1:${await refusedPort()}`, secondary);

      const { deliveryId } = await call<{ deliveryId: string }>(n, 'sendPush', {
        message: { deviceToken: deviceToken(), body: 'named' },
        backend: 'primary',
      });
      const named = await final(n, deliveryId);
      expect(named).toMatchObject({ status: DeliveryStatus.FAILED, backend: 'primary' });
      expect(named.attemptLog.map((a) => a.backend)).toEqual(['primary', 'primary', 'primary']);
      expect(secondary.answered).toBe(0);
    });

    it('a suppressed device token reaches neither backend, while another token fails over', async () => {
      const primary = closeAfter(await apnsPeer(PRIMARY_TOPIC));
      const secondary = closeAfter(await apnsPeer(SECONDARY_TOPIC));
      primary.respond = () => ({ status: 503, reason: 'ServiceUnavailable' });
      const n = await push(primary.baseUrl, secondary);
      const gone = deviceToken();
      await call(n, 'addSuppression', {
        channel: Channel.PUSH,
        recipient: gone,
        reason: SuppressionReason.UNREGISTERED_TOKEN,
      });

      const { deliveryId } = await call<{ deliveryId: string }>(n, 'sendPush', {
        message: { deviceToken: gone, body: 'stopped' },
      });
      expect(await final(n, deliveryId)).toMatchObject({
        status: DeliveryStatus.FAILED,
        failure: DeliveryFailure.RECIPIENT_SUPPRESSED,
        attempts: 0,
      });
      expect([primary.answered, secondary.answered]).toEqual([0, 0]);

      const fine = deviceToken();
      const control = await call<{ deliveryId: string }>(n, 'sendPush', {
        message: { deviceToken: fine, body: 'control' },
      });
      expect(await final(n, control.deliveryId)).toMatchObject({
        status: DeliveryStatus.SENT,
        backend: 'secondary',
      });
      expect(primary.requests.map((r) => r.token)).toEqual([fine]);
      expect(secondary.requests.map((r) => r.token)).toEqual([fine]);
    });
  });
});
