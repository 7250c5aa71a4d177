/**
 * Receipts stay within their backend and replays change nothing (issue 22), under random traffic.
 *
 * Two replicas of the notification service on one PostgreSQL database (database stores: the replay
 * ids are shared), two callers (Alice, Bob), two email backends (an SMTP relay without webhooks and a
 * SendGrid-style http_api with signed events) and two SMS backends (two Twilio accounts whose
 * stand-ins hand out the same MessageSids). Each caller sends one message through each backend; then
 * a seeded random sequence of signed webhooks goes to either replica: SendGrid events naming any of
 * the emails (by our id, the provider's id or both), Twilio status callbacks on either route for any
 * SMS sid, inbound STOP/START, and verbatim replays of requests already sent.
 *
 * Held to: every signed request answered 200; every receipt in a delivery's history was posted on the
 * route of the delivery's own backend (the relay's deliveries have none); a replay, on the replica
 * that took the original or the other, changes no delivery and no suppression. Seeded: the seed is
 * printed; `FUZZ_SEED=<n>` replays a run. `npm test` sends 80 requests, `npm run soak` 600.
 */
import type { KeyObject } from 'node:crypto';
import fc from 'fast-check';
import { DeliveryStatus, ReceiptEffect } from '../../../shared/gen/svc/notification/v1/notification_pb';
import { createTestDatabase } from '../../support/database';
import { unary } from '../../support/grpc-clients';
import {
  FAST_DELIVERY,
  startNotificationApp,
  type RunningNotificationApp,
} from '../../support/notification-app';
import { SMS_ROUTES, startReceiptStandIns, type ReceiptStandIns } from '../../support/receipt-stand-ins';
import { postEvents } from '../../notification/channels/email/v3-peer';
import { postSignedForm } from '../../notification/channels/sms/twilio-peer';
import { atLeast, exactly, recordFigures, reported, SOAK } from '../results';
import { fuzzSeed } from '../fuzz/tally';

const PUBLIC = 'https://notify.example.com';
const CALLERS = {
  alice: 'token-receipts-iso-alice-0123456789',
  bob: 'token-receipts-iso-bob-0123456789ab',
} as const;
type Caller = keyof typeof CALLERS;
const as = (caller: Caller) => ({ metadata: { authorization: `Bearer ${CALLERS[caller]}` } });
const ACTIONS = SOAK ? 600 : 80;
const INBOUND_NUMBERS = ['+15558880001', '+15558880002', '+15558880003'];

type WireDelivery = {
  id: string;
  backend: string;
  status: DeliveryStatus;
  failure: number;
  providerReference: string;
  receipts: Array<{ eventId: string; effect: ReceiptEffect }>;
};

/** One message sent by a caller through a backend. */
interface Sent {
  caller: Caller;
  channel: 'email' | 'sms';
  backend: string;
  id: string;
  recipient: string;
  providerReference: string;
}

/** A signed request as posted, so it can be posted again verbatim. */
interface Posted {
  route: string;
  describe: string;
  post(base: string): Promise<{ status: number; body: string }>;
}

type Action =
  | { kind: 'email'; target: number; event: string; by: 'id' | 'ref' | 'both'; replica: number }
  | { kind: 'status'; route: number; target: number; status: string; code: string; replica: number }
  | { kind: 'inbound'; route: number; number: number; stop: boolean; replica: number }
  | { kind: 'replay'; which: number; replica: number };

const actionArb: fc.Arbitrary<Action> = fc.oneof(
  fc.record({
    kind: fc.constant('email' as const),
    target: fc.nat(3),
    event: fc.constantFrom('delivered', 'bounce', 'dropped', 'spamreport', 'unsubscribe', 'open'),
    by: fc.constantFrom('id' as const, 'ref' as const, 'both' as const),
    replica: fc.nat(1),
  }),
  fc.record({
    kind: fc.constant('status' as const),
    route: fc.nat(1),
    target: fc.nat(3),
    status: fc.constantFrom('sent', 'delivered', 'undelivered', 'failed'),
    code: fc.constantFrom('', '21610', '30003'),
    replica: fc.nat(1),
  }),
  fc.record({
    kind: fc.constant('inbound' as const),
    route: fc.nat(1),
    number: fc.nat(2),
    stop: fc.boolean(),
    replica: fc.nat(1),
  }),
  fc.record({ kind: fc.constant('replay' as const), which: fc.nat(), replica: fc.nat(1) }),
  fc.record({ kind: fc.constant('replay' as const), which: fc.nat(), replica: fc.nat(1) }),
);

let standIns: ReceiptStandIns;
const replicas: RunningNotificationApp[] = [];
let drop: (() => Promise<void>) | undefined;

beforeAll(async () => {
  standIns = await startReceiptStandIns();
  const db = await createTestDatabase('receipts_isolation');
  drop = db.drop;
  for (let i = 0; i < 2; i++) {
    replicas.push(
      await startNotificationApp({
        server: { api_tokens: [CALLERS.alice, CALLERS.bob] },
        database: { url: db.url },
        delivery: { ...FAST_DELIVERY, store_backend: 'database' },
        webhooks: { public_base_url: PUBLIC },
        ...standIns.config,
      }),
    );
  }
}, 60_000);

afterAll(async () => {
  for (const r of replicas) await r.close();
  await standIns?.close();
  await drop?.();
});

const get = async (s: Pick<Sent, 'caller' | 'id'>): Promise<WireDelivery> =>
  (
    await unary<{ delivery: WireDelivery }>(
      replicas[0]!.notificationGrpc,
      'getDelivery',
      { id: s.id },
      as(s.caller),
    )
  ).response.delivery;

async function send(
  caller: Caller,
  channel: 'email' | 'sms',
  backend: string,
  recipient: string,
): Promise<Sent> {
  const { deliveryId } = (
    await unary<{ deliveryId: string }>(
      replicas[0]!.notificationGrpc,
      channel === 'email' ? 'sendEmail' : 'sendSms',
      channel === 'email'
        ? { to: [recipient], subject: 'Hello', text: 'Hi', backend }
        : { to: recipient, body: 'hi', backend },
      as(caller),
    )
  ).response;
  for (let i = 0; i < 3000; i++) {
    const d = await get({ caller, id: deliveryId });
    if (d.status === DeliveryStatus.SENT) {
      return { caller, channel, backend, id: deliveryId, recipient, providerReference: d.providerReference };
    }
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`${channel} through ${backend} was not sent`);
}

/** What a replay must not change: each delivery's status, cause and applied history; the list. */
async function snapshot(sent: readonly Sent[]): Promise<string> {
  const parts: unknown[] = [];
  for (const s of sent) {
    const d = await get(s);
    parts.push([
      s.id,
      d.status,
      d.failure,
      d.receipts.filter((r) => r.effect !== ReceiptEffect.DUPLICATE).length,
    ]);
  }
  const list = replicas[0]!.app.suppressions;
  for (const s of sent) parts.push([s.recipient, await list.isSuppressed(s.channel, s.recipient)]);
  for (const n of INBOUND_NUMBERS) parts.push([n, await list.isSuppressed('sms', n)]);
  return JSON.stringify(parts);
}

it('receipts only reach deliveries of their own backend, and replays on either replica change nothing', async () => {
  const seed = fuzzSeed();
  console.log(`receipts isolation seed ${seed} (replay with FUZZ_SEED=${seed})`);
  const sent: Sent[] = [];
  for (const caller of ['alice', 'bob'] as const) {
    sent.push(await send(caller, 'email', 'relay', `${caller}.relay@example.com`));
    sent.push(await send(caller, 'email', 'sendgrid', `${caller}.api@example.com`));
  }
  // The first message on each Twilio account: the stand-ins give both the same sid.
  for (const [i, caller] of (['alice', 'bob'] as const).entries()) {
    sent.push(await send(caller, 'sms', 'twilio-a', `+1555777000${i * 2 + 1}`));
    sent.push(await send(caller, 'sms', 'twilio-b', `+1555777000${i * 2 + 2}`));
  }
  const emails = sent.filter((s) => s.channel === 'email');
  const sms = sent.filter((s) => s.channel === 'sms');
  expect(new Set(sms.map((s) => s.providerReference)).size).toBeLessThan(sms.length);

  /** Event ids posted per route (backend): what may appear in the histories of its deliveries. */
  const postedIds = new Map<string, Set<string>>();
  const note = (route: string, id: string) => {
    if (!postedIds.has(route)) postedIds.set(route, new Set());
    postedIds.get(route)!.add(id);
  };
  const posted: Posted[] = [];
  const failures: string[] = [];
  let seq = 0;
  let inboundSeq = 0;
  let replays = 0;
  let replaysThatChanged = 0;

  const build = (a: Exclude<Action, { kind: 'replay' }>): Posted => {
    if (a.kind === 'email') {
      const target = emails[a.target]!;
      const eventId = `ev-iso-${seed}-${++seq}`;
      const e: Record<string, unknown> = {
        email: target.recipient,
        event: a.event,
        sg_event_id: eventId,
        timestamp: Math.floor(Date.now() / 1000),
      };
      if (a.event === 'bounce') e.type = 'bounce';
      if (a.by !== 'ref') e.delivery_id = target.id;
      if (a.by !== 'id') e.sg_message_id = `${target.providerReference}.filter0001`;
      note('sendgrid', eventId);
      const body = JSON.stringify([e]);
      const privateKey: KeyObject = standIns.keys.privateKey;
      const timestamp = Math.floor(Date.now() / 1000);
      return {
        route: 'sendgrid',
        describe: `email ${a.event} for ${target.backend}/${target.caller} by ${a.by}`,
        post: (base) =>
          postEvents(`${base}/webhooks/email/sendgrid/events`, [e], privateKey, { body, timestamp }),
      };
    }
    const route = SMS_ROUTES[a.route]!;
    if (a.kind === 'status') {
      const target = sms[a.target]!;
      const form: Record<string, string> = {
        MessageSid: target.providerReference,
        MessageStatus: a.status,
        To: target.recipient,
        From: '+15550001111',
      };
      if (a.code !== '' && a.status === 'undelivered') form.ErrorCode = a.code;
      note(route, `${target.providerReference}:${a.status}`);
      return {
        route,
        describe: `status ${a.status}${form.ErrorCode ? `/${form.ErrorCode}` : ''} on ${route} for ${target.backend}/${target.caller}`,
        post: (base) =>
          postSignedForm(
            `${base}/webhooks/sms/${route}/status`,
            `${PUBLIC}/webhooks/sms/${route}/status`,
            form,
          ),
      };
    }
    const form = {
      MessageSid: `SMin${seed}x${++inboundSeq}`,
      From: INBOUND_NUMBERS[a.number]!,
      To: '+15550001111',
      Body: a.stop ? 'STOP' : 'START',
    };
    return {
      route,
      describe: `inbound ${form.Body} on ${route} from ${form.From}`,
      post: (base) =>
        postSignedForm(
          `${base}/webhooks/sms/${route}/inbound`,
          `${PUBLIC}/webhooks/sms/${route}/inbound`,
          form,
        ),
    };
  };

  for (const a of fc.sample(actionArb, { seed, numRuns: ACTIONS })) {
    const base = replicas[a.replica]!.baseUrl;
    if (a.kind === 'replay') {
      if (posted.length === 0) continue;
      const original = posted[a.which % posted.length]!;
      const before = await snapshot(sent);
      const answer = await original.post(base);
      replays++;
      if (answer.status !== 200) failures.push(`replay of ${original.describe}: ${answer.status}`);
      if ((await snapshot(sent)) !== before) {
        replaysThatChanged++;
        failures.push(`replay of ${original.describe} on replica ${a.replica} changed state`);
      }
      continue;
    }
    const request = build(a);
    const answer = await request.post(base);
    if (answer.status !== 200) failures.push(`${request.describe}: ${answer.status} ${answer.body}`);
    posted.push(request);
  }

  // Every receipt in a history came through the route of the delivery's own backend.
  let foreignReceipts = 0;
  for (const s of sent) {
    const d = await get(s);
    for (const r of d.receipts) {
      if (!postedIds.get(s.backend)?.has(r.eventId)) {
        foreignReceipts++;
        failures.push(`${s.backend}/${s.caller}'s delivery holds ${r.eventId}, not posted on its route`);
      }
    }
  }
  const receiptsOnRelay = (await Promise.all(sent.filter((s) => s.backend === 'relay').map(get))).reduce(
    (n, d) => n + d.receipts.length,
    0,
  );

  recordFigures({
    section: 'isolation-receipts',
    title: 'Isolation: receipts per backend, replays refused (two replicas, two callers, four backends)',
    kind: 'isolation',
    figures: [
      reported('signed webhook requests', posted.length + replays),
      atLeast('replays sent (either replica)', replays, 1),
      exactly('replays that changed a delivery or the suppression list', replaysThatChanged, 0),
      exactly('receipts applied to a delivery of another backend', foreignReceipts, 0),
      exactly('receipts on the SMTP relay deliveries (no webhook)', receiptsOnRelay, 0),
      exactly('answers other than 200', failures.filter((f) => /: \d{3}/.test(f)).length, 0),
    ],
  });
  expect(failures.slice(0, 5)).toEqual([]);
  expect(replays).toBeGreaterThan(0);
}, 240_000);
