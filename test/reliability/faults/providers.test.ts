/**
 * Faults (issue 16): provider stand-ins that fail in every way, against a real notification process.
 * Email (the `http_api` mailer) and SMS (`sms_gateway`) reach their stand-ins (v3-peer.ts,
 * twilio-peer.ts) through an HTTP/1.1 front that fails chosen requests (http-fault-front.ts); APNs
 * and FCM reach theirs (push-peers.ts) through a TCP front that breaks the connection
 * (tcp-fault-front.ts), with the stand-ins' `respond` hooks for error statuses.
 *
 * 1. Per message: each send names its fault in its subject or body; the fault answers its first
 *    attempts (all of them for a permanent one), then the stand-in does. Retryable faults must end
 *    SENT and arrive exactly once (counted at the stand-in by delivery id for email, by the unique
 *    body text for SMS and push); a Retry-After must be honoured (the attempt times GetDelivery
 *    records); permanent ones must end FAILED with a reason and never reach the stand-in. A 2xx cut
 *    off after the stand-in accepted is SENT from its status alone: never sent again.
 * 2. Outages: every request (health probes too) fails with no answer, a reset, garbage or a 503;
 *    /health answers what the probes are documented to say, and everything sent meanwhile is SENT
 *    exactly once after the provider is back.
 * Figures: acknowledged, SENT, FAILED (with reasons), duplicates at the stand-ins, crashes.
 */
import { randomBytes } from 'node:crypto';

import {
  type AttemptOutcome,
  DeliveryFailure,
  DeliveryStatus,
} from '../../../shared/gen/svc/notification/v1/notification_pb';
import { notificationClient, until } from '../../support/email-service';
import { unary, type GenericClient } from '../../support/grpc-clients';
import { startServiceProcess, type ServiceProcess } from '../../support/service-process';
import { startV3Peer, type V3Peer } from '../../notification/channels/email/v3-peer';
import {
  ecKeys,
  rsaKeys,
  startApnsPeer,
  startFcmPeer,
  type ApnsPeer,
  type FcmPeer,
} from '../../notification/channels/push/push-peers';
import { gatewayConfig, startTwilioPeer, type TwilioPeer } from '../../notification/channels/sms/twilio-peer';
import { atLeast, exactly, recordFigures, reported, SOAK } from '../results';
import { startHttpFaultFront, type HttpFault, type HttpFaultFront } from './http-fault-front';
import { startTcpFaultFront, type TcpFault, type TcpFaultFront } from './tcp-fault-front';

/** Sends per fault kind and channel. */
const PER_FAULT = SOAK ? 20 : 2;
/** Sends per channel during each outage. */
const PER_OUTAGE = SOAK ? 20 : 3;
/** Attempts a retryable per-message fault answers before the stand-in does. */
const FAILS = 2;
/** The Retry-After the 503 and 429 answers ask for, in seconds. */
const RETRY_AFTER_S = 2;
/**
 * The drivers' request timeout: a hang is over after this. A stand-in that answers later than this
 * (a loaded machine) has accepted a message whose answer the driver no longer waits for, and it is
 * sent again: long enough that only the injected hangs reach it.
 */
const DRIVER_TIMEOUT_MS = 2000;
const SETTLE_TIMEOUT_MS = SOAK ? 300_000 : 60_000;

type Channel = 'email' | 'sms' | 'apns' | 'fcm';

/** Cases answering with Retry-After: 503 and 429 of email, SMS and FCM. */
const RETRY_AFTER_CASES = 6;

/** One send the test made, and what it expects of it. */
interface Sent {
  channel: Channel;
  /** Subject (email) or body text (SMS, push): unique, names the fault. */
  key: string;
  deliveryId: string;
  /** 'retryable' and 'outage' must end SENT once; 'permanent' FAILED, never at the stand-in. */
  expect: 'retryable' | 'once' | 'permanent' | 'outage';
  fault: string;
  /** The Retry-After asked for, when the fault gives one. */
  retryAfterMs?: number;
}

/** A delivery as GetDelivery answers it (the fields read here). */
interface WireDelivery {
  id: string;
  status: DeliveryStatus;
  attempts: number;
  lastError: string;
  failure: DeliveryFailure;
  attemptLog: {
    startedAt?: { seconds: bigint | number | string; nanos: number };
    outcome: AttemptOutcome;
    durationMs: bigint | number | string;
    error: string;
  }[];
}

/** A per-message fault of the HTTP fronts: what it answers, how many attempts, what it must end as. */
interface HttpCase {
  name: string;
  fault: HttpFault;
  /** Attempts it answers before forwarding; Infinity for permanent ones. */
  times: number;
  expect: Sent['expect'];
  retryAfterMs?: number;
}

const retryAfter = { 'retry-after': String(RETRY_AFTER_S) };
const HTTP_RETRYABLE: HttpCase[] = [
  {
    name: '500-cut-json',
    fault: { kind: 'status', status: 500, body: '{"errors":[{"message":"internal err', cut: true },
    times: FAILS,
    expect: 'retryable',
  },
  {
    name: '503-retry-after',
    fault: { kind: 'status', status: 503, headers: retryAfter, body: '{"errors":[{"message":"busy"}]}' },
    times: FAILS,
    expect: 'retryable',
    retryAfterMs: RETRY_AFTER_S * 1000,
  },
  {
    name: '429-retry-after',
    fault: {
      kind: 'status',
      status: 429,
      headers: retryAfter,
      body: '{"code":20429,"message":"Too Many Requests","errors":[{"message":"too many requests"}]}',
    },
    times: FAILS,
    expect: 'retryable',
    retryAfterMs: RETRY_AFTER_S * 1000,
  },
  { name: 'hang', fault: { kind: 'hang' }, times: FAILS, expect: 'retryable' },
  { name: 'reset', fault: { kind: 'reset' }, times: FAILS, expect: 'retryable' },
  { name: 'garbage', fault: { kind: 'garbage' }, times: FAILS, expect: 'retryable' },
  { name: 'cut-2xx', fault: { kind: 'cut-after-accept' }, times: 1, expect: 'once' },
  { name: 'ok', fault: { kind: 'forward' }, times: 0, expect: 'retryable' },
];
const EMAIL_PERMANENT: HttpCase[] = [
  {
    name: '401',
    fault: {
      kind: 'status',
      status: 401,
      body: '{"errors":[{"message":"The provided authorization grant is invalid"}]}',
    },
    times: Infinity,
    expect: 'permanent',
  },
  {
    name: '400',
    fault: { kind: 'status', status: 400, body: '{"errors":[{"message":"Bad Request","field":"subject"}]}' },
    times: Infinity,
    expect: 'permanent',
  },
];
const SMS_PERMANENT: HttpCase[] = [
  {
    name: '400-21211',
    fault: {
      kind: 'status',
      status: 400,
      body: '{"code":21211,"message":"Invalid \'To\' Phone Number","status":400}',
    },
    times: Infinity,
    expect: 'permanent',
  },
  {
    name: '401',
    fault: { kind: 'status', status: 401, body: '{"code":20003,"message":"Authenticate","status":401}' },
    times: Infinity,
    expect: 'permanent',
  },
];

/** A per-message status of the push stand-ins (their `respond` hooks). */
interface PushCase {
  name: string;
  status: number;
  /** APNs reason, or the FCM error body. */
  reason?: string;
  fcmBody?: unknown;
  /** FCM only: the Retry-After its answer asks for, in ms (APNs documents none). */
  retryAfterMs?: number;
  times: number;
  expect: Sent['expect'];
}

const fcmError = (code: number, status: string, errorCode?: string) => ({
  error: {
    code,
    status,
    message: status,
    details: errorCode ? [{ '@type': 'type.googleapis.com/google.firebase.fcm.v1.FcmError', errorCode }] : [],
  },
});
const APNS_CASES: PushCase[] = [
  { name: '500', status: 500, reason: 'InternalServerError', times: FAILS, expect: 'retryable' },
  { name: '503', status: 503, reason: 'ServiceUnavailable', times: FAILS, expect: 'retryable' },
  { name: '429', status: 429, reason: 'TooManyRequests', times: FAILS, expect: 'retryable' },
  { name: 'ok', status: 200, times: 0, expect: 'retryable' },
  { name: '410', status: 410, reason: 'Unregistered', times: Infinity, expect: 'permanent' },
  { name: '400-BadDeviceToken', status: 400, reason: 'BadDeviceToken', times: Infinity, expect: 'permanent' },
  {
    name: '403-InvalidProviderToken',
    status: 403,
    reason: 'InvalidProviderToken',
    times: Infinity,
    expect: 'permanent',
  },
];
const FCM_CASES: PushCase[] = [
  {
    name: '500',
    status: 500,
    fcmBody: fcmError(500, 'INTERNAL', 'INTERNAL'),
    times: FAILS,
    expect: 'retryable',
  },
  {
    name: '503-retry-after',
    status: 503,
    fcmBody: fcmError(503, 'UNAVAILABLE', 'UNAVAILABLE'),
    times: FAILS,
    expect: 'retryable',
    retryAfterMs: RETRY_AFTER_S * 1000,
  },
  {
    name: '429-retry-after',
    status: 429,
    fcmBody: fcmError(429, 'RESOURCE_EXHAUSTED', 'QUOTA_EXCEEDED'),
    times: FAILS,
    expect: 'retryable',
    retryAfterMs: RETRY_AFTER_S * 1000,
  },
  { name: 'ok', status: 200, times: 0, expect: 'retryable' },
  {
    name: '404-UNREGISTERED',
    status: 404,
    fcmBody: fcmError(404, 'NOT_FOUND', 'UNREGISTERED'),
    times: Infinity,
    expect: 'permanent',
  },
  {
    name: '403-SENDER_ID_MISMATCH',
    status: 403,
    fcmBody: fcmError(403, 'PERMISSION_DENIED', 'SENDER_ID_MISMATCH'),
    times: Infinity,
    expect: 'permanent',
  },
];

/** Epoch ms of a protobuf Timestamp as grpc-js hands it over. */
function tsMs(t: { seconds: bigint | number | string; nanos: number } | undefined): number {
  if (!t) return Number.NaN;
  return Number(t.seconds) * 1000 + Math.floor(t.nanos / 1e6);
}

/** GET /health: status and the status of each check (0 and {} when it did not answer in 15 s). */
async function health(port: number): Promise<{ status: number; checks: Record<string, string> }> {
  try {
    const res = await fetch(`http://127.0.0.1:${port}/health`, { signal: AbortSignal.timeout(15_000) });
    const body = (await res.json()) as { checks?: Record<string, { status: string }> };
    const checks = Object.fromEntries(Object.entries(body.checks ?? {}).map(([k, v]) => [k, v.status]));
    return { status: res.status, checks };
  } catch {
    return { status: 0, checks: {} };
  }
}

/** Polls /health until it answers `want`; the last answer (the caller asserts on it). */
async function healthBecomes(port: number, want: number, timeoutMs = 20_000) {
  let last = await health(port);
  for (const deadline = Date.now() + timeoutMs; last.status !== want && Date.now() < deadline;) {
    await new Promise((resolve) => setTimeout(resolve, 200));
    last = await health(port);
  }
  return last;
}

/** Progress on stderr when FAULTS_DEBUG is set (what phase a slow run is in). */
function step(what: string): void {
  if (process.env.FAULTS_DEBUG)
    process.stderr.write(`[faults-providers ${new Date().toISOString()}] ${what}\n`);
}

const peers: { close(): Promise<void> }[] = [];
let proc: ServiceProcess | undefined;
afterAll(async () => {
  await proc?.stop('SIGKILL', 1000);
  await Promise.all(peers.map((p) => p.close()));
});

test(
  'providers failing in every way: retryable faults SENT once, permanent ones FAILED with a reason, Retry-After honoured, health follows, no crash',
  async () => {
    // ---- stand-ins and fronts ----
    const v3: V3Peer = await startV3Peer();
    const twilio: TwilioPeer = await startTwilioPeer();
    const apnsKeys = ecKeys();
    const apnsOpts = {
      publicKey: apnsKeys.publicKey,
      keyId: 'KEY123ABCD',
      teamId: 'TEAM123ABC',
      topic: 'com.example.app',
    };
    const apns: ApnsPeer = await startApnsPeer(apnsOpts);
    apns.record = false;
    const fcmKeys = rsaKeys();
    const clientEmail = 'sender@faults.iam.example.com';
    const fcm: FcmPeer = await startFcmPeer({
      publicKey: fcmKeys.publicKey,
      clientEmail,
      projectId: 'faults',
    });
    peers.push(v3, twilio, apns, fcm);
    const mailFront: HttpFaultFront = await startHttpFaultFront(v3.baseUrl);
    const smsFront: HttpFaultFront = await startHttpFaultFront(twilio.baseUrl);
    const apnsFront: TcpFaultFront = await startTcpFaultFront(apns.baseUrl);
    const fcmFront: TcpFaultFront = await startTcpFaultFront(fcm.baseUrl);
    peers.push(mailFront, smsFront, apnsFront, fcmFront);

    // ---- per-message plans: the key (subject or body) names the case; attempts counted per key ----
    const httpPlans = new Map<string, HttpCase>();
    const pushPlans = new Map<string, PushCase>();
    const seen = new Map<string, number>();
    const attempt = (key: string) => {
      const n = (seen.get(key) ?? 0) + 1;
      seen.set(key, n);
      return n;
    };
    const httpDecide = (key: string | undefined): HttpFault => {
      const plan = key === undefined ? undefined : httpPlans.get(key);
      if (!plan) return { kind: 'forward' };
      return attempt(key!) <= plan.times ? plan.fault : { kind: 'forward' };
    };
    mailFront.decide = (req) => {
      if (req.method !== 'POST') return { kind: 'forward' };
      return httpDecide((JSON.parse(req.body) as { subject?: string }).subject);
    };
    smsFront.decide = (req) =>
      req.method !== 'POST'
        ? { kind: 'forward' }
        : httpDecide(new URLSearchParams(req.body).get('Body') ?? undefined);

    // Arrivals at the stand-ins: accepted messages by key (email: by delivery id, see below).
    const pushAccepted = new Map<string, number>();
    const pushDecide = (key: string): PushCase | undefined => {
      const plan = pushPlans.get(key);
      if (plan && attempt(key) <= plan.times) return plan;
      pushAccepted.set(key, (pushAccepted.get(key) ?? 0) + 1);
      return undefined;
    };
    apns.respond = (req) => {
      const key = String((req.body.aps as { alert?: { body?: string } } | undefined)?.alert?.body ?? '');
      const plan = pushDecide(key);
      return plan ? { status: plan.status, reason: plan.reason } : undefined;
    };
    fcm.respond = (req) => {
      const key = String((req.body.message as { notification?: { body?: string } }).notification?.body ?? '');
      const plan = pushDecide(key);
      if (!plan) return undefined;
      const headers: Record<string, string> =
        plan.retryAfterMs === undefined ? {} : { 'retry-after': String(plan.retryAfterMs / 1000) };
      return { status: plan.status, body: plan.fcmBody ?? {}, headers };
    };

    // ---- the process ----
    proc = await startServiceProcess('notification', {
      SVC_NOTIFICATION__INBOX__STORE_BACKEND: 'memory',
      SVC_NOTIFICATION__DELIVERY__STORE_BACKEND: 'memory',
      SVC_NOTIFICATION__DELIVERY__BASE_DELAY_MS: '50',
      // Above the Retry-After asked for, so the cap does not shorten it.
      SVC_NOTIFICATION__DELIVERY__MAX_DELAY_MS: '3000',
      SVC_NOTIFICATION__DELIVERY__MAX_ATTEMPTS: '40',
      SVC_NOTIFICATION__DELIVERY__POLL_INTERVAL_MS: '100',
      SVC_NOTIFICATION__DELIVERY__ATTEMPT_TIMEOUT_MS: '5000',
      SVC_NOTIFICATION__DELIVERY__LEASE_SECONDS: '10',
      // Per-message faults of many sends at once must not open the breaker and hold the healthy ones
      // back (the breaker has its own tests, and smtp-drop exercises it): /health then shows the probes.
      SVC_NOTIFICATION__DELIVERY__CIRCUIT_BREAKER__FAILURE_THRESHOLD: '1000',
      SVC_NOTIFICATION__DELIVERY__CIRCUIT_BREAKER__COOLDOWN_SECONDS: '1',
      SVC_NOTIFICATION__MAILER__BACKENDS: JSON.stringify([
        {
          name: 'api',
          primary: true,
          driver: 'http_api',
          from_email: 'noreply@example.com',
          http_api: {
            base_url: mailFront.baseUrl,
            api_key: 'SG.faults-api-key',
            timeout_ms: DRIVER_TIMEOUT_MS,
          },
        },
      ]),
      SVC_NOTIFICATION__SMS_BACKENDS: JSON.stringify([
        {
          name: 'twilio',
          primary: true,
          driver: 'sms_gateway',
          sms_gateway: gatewayConfig({ baseUrl: smsFront.baseUrl }, { timeout_ms: DRIVER_TIMEOUT_MS }),
        },
      ]),
      SVC_NOTIFICATION__PUSH_BACKENDS: JSON.stringify([
        {
          name: 'apns',
          primary: true,
          driver: 'push_driver_b',
          push_driver_b: {
            key_id: apnsOpts.keyId,
            team_id: apnsOpts.teamId,
            private_key: apnsKeys.privatePem,
            topic: apnsOpts.topic,
            base_url: apnsFront.baseUrl,
            timeout_ms: DRIVER_TIMEOUT_MS,
          },
        },
        {
          name: 'fcm',
          driver: 'push_driver_a',
          push_driver_a: {
            project_id: 'faults',
            service_account: {
              client_email: clientEmail,
              private_key: fcmKeys.privatePem,
              token_uri: fcm.tokenUri,
            },
            base_url: fcmFront.baseUrl,
            timeout_ms: DRIVER_TIMEOUT_MS,
          },
        },
      ]),
    });
    const client: GenericClient = notificationClient(proc.grpcPort);
    const sent: Sent[] = [];
    let seq = 0;
    const unique = (channel: Channel, fault: string) =>
      `${channel}-${fault}-${seq++}-${randomBytes(4).toString('hex')}`;

    /** Sends one message whose key names `fault`; `plan` registers the key's fault before the send. */
    const send = async (
      channel: Channel,
      fault: string,
      expect: Sent['expect'],
      opts: { retryAfterMs?: number; plan?: (key: string) => void } = {},
    ): Promise<Sent> => {
      const key = unique(channel, fault);
      opts.plan?.(key);
      let deliveryId: string;
      if (channel === 'email') {
        const req = { to: [`user-${seq}@example.com`], subject: key, text: `Hello, ${key}.` };
        deliveryId = (await unary<{ deliveryId: string }>(client, 'sendEmail', req, { deadlineMs: 10_000 }))
          .response.deliveryId;
      } else if (channel === 'sms') {
        const req = { to: `+1555${String(1_000_000 + seq).slice(-7)}`, body: key };
        deliveryId = (await unary<{ deliveryId: string }>(client, 'sendSms', req, { deadlineMs: 10_000 }))
          .response.deliveryId;
      } else {
        const req = {
          message: { deviceToken: randomBytes(32).toString('hex'), title: 'faults', body: key },
          backend: channel,
        };
        deliveryId = (await unary<{ deliveryId: string }>(client, 'sendPush', req, { deadlineMs: 10_000 }))
          .response.deliveryId;
      }
      const s: Sent = { channel, key, deliveryId, expect, fault };
      if (opts.retryAfterMs !== undefined) s.retryAfterMs = opts.retryAfterMs;
      sent.push(s);
      return s;
    };
    const get = async (id: string): Promise<WireDelivery> =>
      (await unary<{ delivery: WireDelivery }>(client, 'getDelivery', { id }, { deadlineMs: 10_000 }))
        .response.delivery;
    const allFinal = async (list: Sent[], timeoutMs: number) => {
      const open = new Map(list.map((s) => [s.deliveryId, s.key]));
      let last = '';
      try {
        await until(
          async () => {
            for (const id of [...open.keys()]) {
              const d = await get(id);
              if (d.status === DeliveryStatus.SENT || d.status === DeliveryStatus.FAILED) open.delete(id);
              else last = `${open.get(id)}: ${DeliveryStatus[d.status]} after ${d.attempts}, ${d.lastError}`;
            }
            return open.size === 0;
          },
          'every delivery SENT or FAILED',
          timeoutMs,
        );
      } catch (err) {
        throw new Error(`${(err as Error).message}: ${open.size} open, e.g. ${last}`, { cause: err });
      }
    };
    const everyAttempted = (list: Sent[]) =>
      until(
        async () => (await Promise.all(list.map((s) => get(s.deliveryId)))).every((d) => d.attempts >= 1),
        'a failed attempt of each',
        30_000,
      );

    const healthSeen: string[] = [];
    try {
      // ---- 1. per-message faults, every channel at once ----
      const perMessage: Promise<Sent>[] = [];
      for (let i = 0; i < PER_FAULT; i++) {
        for (const c of [...HTTP_RETRYABLE, ...EMAIL_PERMANENT]) perMessage.push(planAndSend('email', c));
        for (const c of [...HTTP_RETRYABLE, ...SMS_PERMANENT]) perMessage.push(planAndSend('sms', c));
        for (const c of APNS_CASES) perMessage.push(planAndSendPush('apns', c));
        for (const c of FCM_CASES) perMessage.push(planAndSendPush('fcm', c));
      }
      await Promise.all(perMessage);
      step(`per-message: ${sent.length} sent`);
      await allFinal(sent, SETTLE_TIMEOUT_MS);
      step('per-message: all final');

      // ---- 2. outages of the REST providers: every request, health probes included ----
      const httpOutages: { name: string; fault: HttpFault; health: number }[] = [
        { name: 'no answer', fault: { kind: 'hang' }, health: 207 },
        { name: 'reset', fault: { kind: 'reset' }, health: 207 },
        { name: 'garbage', fault: { kind: 'garbage' }, health: 207 },
        // The http_api and SMS probes count any HTTP status as an answer: a 503 for everyone is healthy.
        { name: '503', fault: { kind: 'status', status: 503, body: '{"message":"down"}' }, health: 200 },
      ];
      const outageHealth: { name: string; during: number; email?: string; sms?: string; after: number }[] =
        [];
      for (const o of httpOutages) {
        mailFront.outage = o.fault;
        smsFront.outage = o.fault;
        const batch: Sent[] = [];
        for (let i = 0; i < PER_OUTAGE; i++) {
          batch.push(await send('email', `outage-${o.name}`, 'outage'));
          batch.push(await send('sms', `outage-${o.name}`, 'outage'));
        }
        await everyAttempted(batch);
        step(`outage ${o.name}: attempted`);
        const during = await healthBecomes(proc.httpPort, o.health);
        step(`outage ${o.name}: health ${during.status}`);
        mailFront.outage = undefined;
        smsFront.outage = undefined;
        const after = await healthBecomes(proc.httpPort, 200);
        await allFinal(batch, SETTLE_TIMEOUT_MS);
        outageHealth.push({
          name: o.name,
          during: during.status,
          email: during.checks['notifications.mailer.api'],
          sms: during.checks['notifications.sms.twilio'],
          after: after.status,
        });
        healthSeen.push(`${o.name}: ${during.status} then ${after.status}`);
      }

      // ---- 3. connection faults of the HTTP/2 providers ----
      // The push probe asks only that a session to the provider connects (push-driver.ts probeSession):
      // a refused port degrades it; a silent peer accepts the TCP connection, so the probe is healthy.
      // A reset or garbage right after the accept races the probe's connect: reported, not asserted.
      const pushOutages: { mode: TcpFault; health?: number }[] = [
        { mode: 'refuse', health: 207 },
        { mode: 'silent', health: 200 },
        { mode: 'reset' },
        { mode: 'garbage' },
      ];
      const pushHealth: { mode: TcpFault; during: number; apns?: string; fcm?: string; after: number }[] = [];
      for (const o of pushOutages) {
        await apnsFront.setMode(o.mode);
        await fcmFront.setMode(o.mode);
        const batch: Sent[] = [];
        for (let i = 0; i < PER_OUTAGE; i++) {
          batch.push(await send('apns', `outage-${o.mode}`, 'outage'));
          batch.push(await send('fcm', `outage-${o.mode}`, 'outage'));
        }
        await everyAttempted(batch);
        step(`push ${o.mode}: attempted`);
        const during =
          o.health === undefined ? await health(proc.httpPort) : await healthBecomes(proc.httpPort, o.health);
        step(`push ${o.mode}: health ${during.status} ${JSON.stringify(during.checks)}`);
        await apnsFront.setMode('forward');
        await fcmFront.setMode('forward');
        const after = await healthBecomes(proc.httpPort, 200);
        // The next mode resets forwarded connections: an answer it cut after the stand-in accepted
        // would be a resend the test caused. This phase's sends end first.
        await allFinal(batch, SETTLE_TIMEOUT_MS);
        pushHealth.push({
          mode: o.mode,
          during: during.status,
          apns: during.checks['notifications.push.apns'],
          fcm: during.checks['notifications.push.fcm'],
          after: after.status,
        });
        healthSeen.push(`push ${o.mode}: ${during.status} then ${after.status}`);
      }
      await allFinal(sent, SETTLE_TIMEOUT_MS);
      step('all final');

      // ---- measure ----
      const deliveries = new Map<string, WireDelivery>();
      for (const s of sent) deliveries.set(s.deliveryId, await get(s.deliveryId));
      const mailArrivals = new Map<string, number>();
      for (const r of v3.requests.filter((x) => x.method === 'POST')) {
        const id =
          (JSON.parse(r.body) as { custom_args?: { delivery_id?: string } }).custom_args?.delivery_id ?? '';
        mailArrivals.set(id, (mailArrivals.get(id) ?? 0) + 1);
      }
      const smsArrivals = new Map<string, number>();
      for (const r of twilio.requests)
        smsArrivals.set(r.form.Body ?? '', (smsArrivals.get(r.form.Body ?? '') ?? 0) + 1);
      const arrivals = (s: Sent): number =>
        s.channel === 'email'
          ? (mailArrivals.get(s.deliveryId) ?? 0)
          : s.channel === 'sms'
            ? (smsArrivals.get(s.key) ?? 0)
            : (pushAccepted.get(s.key) ?? 0);

      const mustSend = sent.filter((s) => s.expect !== 'permanent');
      const permanent = sent.filter((s) => s.expect === 'permanent');
      const sentOk = sent.filter((s) => deliveries.get(s.deliveryId)!.status === DeliveryStatus.SENT);
      const failed = sent.filter((s) => deliveries.get(s.deliveryId)!.status === DeliveryStatus.FAILED);
      const notSent = mustSend.filter((s) => deliveries.get(s.deliveryId)!.status !== DeliveryStatus.SENT);
      const lost = mustSend.filter((s) => arrivals(s) === 0);
      const duplicated = sent.filter((s) => arrivals(s) > 1).map((s) => `${s.key} x${arrivals(s)}`);
      const notFailed = permanent.filter(
        (s) => deliveries.get(s.deliveryId)!.status !== DeliveryStatus.FAILED,
      );
      const failedWithoutReason = failed.filter((s) => {
        const d = deliveries.get(s.deliveryId)!;
        return d.lastError === '' || d.failure === DeliveryFailure.UNSPECIFIED;
      });
      const permanentRetried = permanent.filter((s) => deliveries.get(s.deliveryId)!.attempts !== 1);
      const permanentArrived = permanent.filter((s) => arrivals(s) > 0);
      // A per-message retryable fault answered exactly FAILS attempts: then the stand-in accepted.
      const wrongAttempts = sent
        .filter((s) => s.expect === 'retryable' && s.fault !== 'ok')
        .filter((s) => deliveries.get(s.deliveryId)!.attempts !== FAILS + 1)
        .map((s) => `${s.key}: ${deliveries.get(s.deliveryId)!.attempts}`);
      // The cut 2xx: SENT from its status on the first attempt, never sent again.
      const cutResent = sent.filter(
        (s) => s.expect === 'once' && deliveries.get(s.deliveryId)!.attempts !== 1,
      );
      // Retry-After: no attempt began before the answer's time plus the delay it asked for.
      const retryAfterChecked: string[] = [];
      const retryAfterEarly: string[] = [];
      for (const s of sent.filter((x) => x.retryAfterMs !== undefined)) {
        const log = deliveries.get(s.deliveryId)!.attemptLog;
        for (let i = 0; i + 1 < log.length; i++) {
          const answeredAt = tsMs(log[i]!.startedAt) + Math.floor(Number(log[i]!.durationMs));
          const next = tsMs(log[i + 1]!.startedAt);
          retryAfterChecked.push(s.key);
          // 1 ms: the record's times are whole milliseconds of the same clock.
          if (!(next >= answeredAt + s.retryAfterMs! - 1))
            retryAfterEarly.push(`${s.key} #${i + 2}: ${next - answeredAt} ms`);
        }
      }
      const reasons = new Map<string, number>();
      for (const s of failed) {
        const d = deliveries.get(s.deliveryId)!;
        const k = `${s.channel} ${DeliveryFailure[d.failure]}: ${d.lastError.slice(0, 60)}`;
        reasons.set(k, (reasons.get(k) ?? 0) + 1);
      }
      const injected = [
        ...[...mailFront.failed].map(([k, n]) => `email ${k} ${n}`),
        ...[...smsFront.failed].map(([k, n]) => `sms ${k} ${n}`),
        ...[...apnsFront.connections].filter(([k]) => k !== 'forward').map(([k, n]) => `apns conn ${k} ${n}`),
        ...[...fcmFront.connections].filter(([k]) => k !== 'forward').map(([k, n]) => `fcm conn ${k} ${n}`),
      ];
      const crashed = proc.child.exitCode !== null || proc.child.signalCode !== null ? 1 : 0;

      recordFigures({
        section: 'faults-providers',
        title:
          'Faults: provider stand-ins (HTTP 500/503/429, hang, reset, garbage, cut 2xx; HTTP/2 refused, silent, reset, garbage)',
        kind: 'faults',
        figures: [
          reported('sends acknowledged', sent.length),
          exactly('SENT', sentOk.length, mustSend.length),
          exactly('FAILED', failed.length, permanent.length),
          reported('FAILED reasons', [...reasons].map(([k, n]) => `${n}x ${k}`).join('; ')),
          exactly('FAILED without a reason or failure kind', failedWithoutReason.length, 0),
          exactly('retryable faults not SENT', notSent.length, 0),
          exactly('lost (never reached the stand-in)', lost.length, 0),
          exactly('duplicates at the stand-ins', duplicated.length, 0),
          exactly(
            'permanent faults retried or delivered',
            permanentRetried.length + permanentArrived.length,
            0,
          ),
          exactly(`per-message faults not SENT on attempt ${FAILS + 1}`, wrongAttempts.length, 0),
          exactly('cut 2xx sent again', cutResent.length, 0),
          atLeast(
            'Retry-After waits checked',
            retryAfterChecked.length,
            RETRY_AFTER_CASES * PER_FAULT * FAILS,
          ),
          exactly('attempts before Retry-After', retryAfterEarly.length, 0),
          reported('faults injected', injected.join(', ')),
          reported('/health during / after', healthSeen.join('; ')),
          exactly('crashes', crashed, 0),
        ],
      });

      expect(notSent.map((s) => s.key)).toEqual([]);
      expect(lost.map((s) => s.key)).toEqual([]);
      expect(duplicated).toEqual([]);
      expect(notFailed.map((s) => s.key)).toEqual([]);
      expect(failedWithoutReason.map((s) => s.key)).toEqual([]);
      expect(permanentRetried.map((s) => s.key)).toEqual([]);
      expect(permanentArrived.map((s) => s.key)).toEqual([]);
      expect(wrongAttempts).toEqual([]);
      expect(cutResent.map((s) => s.key)).toEqual([]);
      expect(retryAfterChecked.length).toBeGreaterThanOrEqual(RETRY_AFTER_CASES * PER_FAULT * FAILS);
      expect(retryAfterEarly).toEqual([]);
      // Every kind of fault was really served.
      for (const k of [
        'status:500',
        'status:503',
        'status:429',
        'hang',
        'reset',
        'garbage',
        'cut-after-accept',
        'status:401',
      ]) {
        expect([k, (mailFront.failed.get(k) ?? 0) > 0, (smsFront.failed.get(k) ?? 0) > 0]).toEqual([
          k,
          true,
          true,
        ]);
      }
      for (const mode of ['reset', 'garbage', 'silent', 'refuse'] as const) {
        expect([
          mode,
          (apnsFront.connections.get(mode) ?? 0) > 0,
          (fcmFront.connections.get(mode) ?? 0) > 0,
        ]).toEqual([mode, true, true]);
      }
      // Health: degraded while a provider gives no answer, healthy again after; a 5xx is an answer.
      expect(outageHealth).toEqual(
        httpOutages.map((o) => ({
          name: o.name,
          during: o.health,
          email: o.health === 207 ? 'degraded' : 'healthy',
          sms: o.health === 207 ? 'degraded' : 'healthy',
          after: 200,
        })),
      );
      for (const [i, o] of pushOutages.entries()) {
        const seen = pushHealth[i]!;
        // Never unhealthy (a provider down must not take the inbox out of service), always back to 200.
        expect([o.mode, [200, 207].includes(seen.during), seen.after]).toEqual([o.mode, true, 200]);
        if (o.health === undefined) continue;
        const check = o.health === 207 ? 'degraded' : 'healthy';
        expect(seen).toEqual({ mode: o.mode, during: o.health, apns: check, fcm: check, after: 200 });
      }
      expect(crashed).toBe(0);
    } finally {
      client.close();
    }

    /** Sends one message of an HTTP case, its fault planned under the message's key. */
    function planAndSend(channel: 'email' | 'sms', c: HttpCase): Promise<Sent> {
      const opts: { retryAfterMs?: number; plan: (key: string) => void } = {
        plan: (key) => httpPlans.set(key, c),
      };
      if (c.retryAfterMs !== undefined) opts.retryAfterMs = c.retryAfterMs;
      return send(channel, c.name, c.expect, opts);
    }

    /** Sends one push of a status case, planned under its body text. */
    function planAndSendPush(channel: 'apns' | 'fcm', c: PushCase): Promise<Sent> {
      const opts: { retryAfterMs?: number; plan: (key: string) => void } = {
        plan: (key) => pushPlans.set(key, c),
      };
      if (c.retryAfterMs !== undefined) opts.retryAfterMs = c.retryAfterMs;
      return send(channel, c.name, c.expect, opts);
    }
  },
  SOAK ? 900_000 : 240_000,
);
