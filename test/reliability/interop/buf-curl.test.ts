/**
 * Issue 16, interop: `buf curl`, a client other people wrote, against both started processes (tokens
 * on), on every protocol: gRPC with server reflection as its only schema, Connect and gRPC-Web with
 * the schema from proto/. Every method of every service (enumerated from the descriptors in
 * test/reliability/surfaces.ts, so a new RPC is tried without anyone listing it) answers an empty
 * request, and a minimal one where we have one, with a well-formed answer: a response or a proper
 * error code with a message, never INTERNAL or UNKNOWN, and the same code on every protocol. Server
 * streams open, carry an event and close on each protocol. The standard health protocol answers
 * through reflection alone.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import type { DescMethod, DescService } from '@bufbuild/protobuf';

import { grpcClient, unary } from '../../support/grpc-clients';
import { SMS_BACKEND } from '../../support/sms-service';
import { postSignedForm } from '../../notification/channels/sms/twilio-peer';
import { atLeast, exactly, recordFigures, reported } from '../results';
import { bufStream, bufUnary, PROTOCOLS, type BufAnswer, type Protocol } from './buf-curl';
import { AUTHORIZATION, inFlight, serverFaults, startTargets, type Target, type Targets } from './processes';

/** Proper answers to an empty or minimal request from a caller with a valid token. */
const PROPER = [
  'ok',
  'invalid_argument',
  'not_found',
  'failed_precondition',
  'already_exists',
  'out_of_range',
];
/** Answers that say the server, not the request, is wrong: never expected. */
const FAULTS = ['internal', 'unknown'];
/** A deadline against hangs while waiting on a stream (no timing assertion). */
const WAIT_MS = 30_000;

/** Methods tried at once (each on the three protocols at once): the machine has 2 cores. */
const CONCURRENT_METHODS = 3;

/** Runs `fn` over `items`, `width` at a time. */
async function pool<T>(items: readonly T[], width: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) await fn(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(width, items.length) }, worker));
}

const tag = (): string => `interop-${randomBytes(4).toString('hex')}`;

/** A minimal valid request for some methods, tried besides the empty one (keyed `pkg.Service/Method`). */
const MINIMAL: Record<string, () => unknown> = {
  'svc.notification.v1.InboxService/Send': () => ({ userId: tag(), title: 't', body: 'b' }),
  'svc.notification.v1.InboxService/GetInbox': () => ({ userId: tag() }),
  'svc.notification.v1.InboxService/CountUnread': () => ({ userId: tag() }),
  'svc.notification.v1.InboxService/MarkAllRead': () => ({ userId: tag() }),
  'svc.notification.v1.InboxService/ClearAll': () => ({ userId: tag() }),
  'svc.notification.v1.InboxService/MarkRead': () => ({ userId: tag(), messageId: randomUUID() }),
  'svc.notification.v1.InboxService/Delete': () => ({ userId: tag(), messageId: randomUUID() }),
  'svc.notification.v1.NotificationService/GetDelivery': () => ({ id: randomUUID() }),
  'svc.notification.v1.UserService/UpsertUser': () => ({
    userId: tag(),
    emails: ['Ana@Example.com'],
    locale: 'es-mx',
    attributes: { name: 'Ana 😀' },
  }),
  'svc.notification.v1.UserService/GetUser': () => ({ userId: tag() }),
  'svc.notification.v1.UserService/DeleteUser': () => ({ userId: tag() }),
  'svc.notification.v1.UserService/RegisterDevice': () => ({
    userId: tag(),
    token: tag(),
    platform: 'DEVICE_PLATFORM_FCM',
  }),
  'svc.notification.v1.UserService/SubscribeTopic': () => ({ topic: 'interop', userIds: [tag()] }),
  'svc.notification.v1.UserService/ListTopicSubscribers': () => ({ topic: 'interop', pageSize: 5 }),
  'svc.notification.v1.NotifyService/Notify': () => ({ userId: tag(), category: 'no-such-category' }),
  'svc.notification.v1.NotifyService/GetNotification': () => ({ id: randomUUID() }),
  'svc.notification.v1.NotifyService/ListNotifications': () => ({ userId: tag() }),
  'svc.notification.v1.NotifyService/CancelNotification': () => ({ id: randomUUID() }),
  'svc.monitor.v1.MonitorService/SendAlert': () => ({ title: tag(), severity: 'warning' }),
  'svc.monitor.v1.OnCallService/WhoIsOnCall': () => ({ schedule: tag() }),
  'svc.monitor.v1.MonitorService/RecordSloSamples': () => ({ metric: tag(), valuesMs: [12] }),
  'svc.monitor.v1.MonitorService/CaptureException': () => ({ type: 'TypeError', message: tag() }),
  'svc.monitor.v1.MonitorService/GetTrace': () => ({ traceId: randomBytes(16).toString('hex') }),
};

/** How to see an event on each server stream: the request, and a call that causes an event carrying `marker`. */
const STREAMS: Record<
  string,
  {
    request(marker: string): unknown;
    trigger(t: Target, marker: string): Promise<unknown>;
    /** The text the event carries, from the trigger's answer; the marker itself by default. */
    seen?(answer: unknown, marker: string): string;
  }
> = {
  'svc.notification.v1.InboxService/WatchInbox': {
    request: (marker) => ({ userId: marker }),
    trigger: (t, marker) =>
      call(t, 'svc.notification.v1.InboxService', 'send', { userId: marker, title: marker, body: 'b' }),
  },
  // Delivery events carry no content (personal data): the event is known by the delivery id.
  'svc.notification.v1.NotificationService/WatchDeliveries': {
    request: () => ({}),
    trigger: (t, marker) =>
      call(t, 'svc.notification.v1.NotificationService', 'sendSms', { to: '+15550001234', body: marker }),
    seen: (answer) => (answer as { deliveryId: string }).deliveryId,
  },
  // An inbound SMS, posted to the signed webhook as the provider does (the marker is its text).
  'svc.notification.v1.InboundSmsService/WatchInboundSms': {
    request: () => ({}),
    trigger: (t, marker) => {
      const url = `${t.baseUrl}/webhooks/sms/${SMS_BACKEND}/inbound`;
      return postSignedForm(url, url, {
        MessageSid: `SM${randomBytes(16).toString('hex')}`,
        From: '+15550001234',
        To: '+15550001111',
        Body: marker,
      });
    },
  },
  'svc.monitor.v1.MonitorService/WatchAlerts': {
    request: () => ({}),
    trigger: (t, marker) =>
      call(t, 'svc.monitor.v1.MonitorService', 'sendAlert', { title: marker, severity: 'warning' }),
  },
};

/** A grpc-js call with the token, to cause events (not what is under test). */
async function call(t: Target, service: string, method: string, request: unknown): Promise<unknown> {
  const desc = t.services.find((s) => s.typeName === service)!;
  const client = grpcClient(desc, t.grpcAddress);
  try {
    return (await unary(client, method, request, { metadata: { authorization: AUTHORIZATION } })).response;
  } finally {
    client.close();
  }
}

async function until(condition: () => Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + WAIT_MS;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

const pathOf = (s: DescService, m: DescMethod): string => `${s.typeName}/${m.name}`;

interface Tried {
  readonly target: string;
  readonly path: string;
  readonly protocol: Protocol;
  readonly answer: BufAnswer;
}

let targets: Targets;
const tried: Tried[] = [];
const streamsClosed: string[] = [];
const healthAnswers: string[] = [];

beforeAll(async () => {
  targets = await startTargets();
});
afterAll(async () => {
  await targets?.stop();
});

const byName = (name: string): Target => targets.all.find((t) => t.name === name)!;

describe.each([['notification'], ['monitor']])('the %s process, with buf curl', (name) => {
  test('every unary method answers an empty (and a minimal) request on every protocol, with the same proper code', async () => {
    const t = byName(name);
    const problems: string[] = [];
    const jobs = t.services.flatMap((service) =>
      service.methods
        .filter((m) => m.methodKind === 'unary')
        .flatMap((method) => {
          const path = pathOf(service, method);
          return [{}, ...(MINIMAL[path] ? [MINIMAL[path]()] : [])].map((request) => ({ path, request }));
        }),
    );
    await pool(jobs, CONCURRENT_METHODS, async ({ path, request }) => {
      const answers = await Promise.all(
        PROTOCOLS.map((protocol) =>
          bufUnary(t, protocol, path, request, [`Authorization: ${AUTHORIZATION}`]),
        ),
      );
      answers.forEach((answer, i) => tried.push({ target: name, path, protocol: PROTOCOLS[i]!, answer }));
      const what = `${path} ${JSON.stringify(request)}`;
      for (const [i, answer] of answers.entries()) {
        const on = `${PROTOCOLS[i]} ${what}`;
        if (!PROPER.includes(answer.code)) problems.push(`${on}: ${answer.code}`);
        if (answer.code === 'ok' && typeof (answer as { response: unknown }).response !== 'object') {
          problems.push(`${on}: a response that is not a message`);
        }
        if (answer.code !== 'ok' && !/\S/.test((answer as { message: string }).message)) {
          problems.push(`${on}: ${answer.code} without a message`);
        }
      }
      // One implementation behind three protocols: they agree.
      if (new Set(answers.map((a) => a.code)).size !== 1) {
        problems.push(`${what}: ${answers.map((a) => a.code).join(' / ')} over ${PROTOCOLS.join(' / ')}`);
      }
    });
    expect(problems).toEqual([]);
  });

  test('every server stream opens, carries an event and closes, on every protocol', async () => {
    const t = byName(name);
    for (const service of t.services) {
      for (const method of service.methods.filter((m) => m.methodKind === 'server_streaming')) {
        const path = pathOf(service, method);
        const spec = STREAMS[path];
        // A new server stream needs an entry in STREAMS: fail rather than leave it untried.
        expect({ path, known: spec !== undefined }).toEqual({ path, known: true });
        for (const protocol of PROTOCOLS) {
          const marker = tag();
          const before = await inFlight(t, path);
          const stream = bufStream(t, protocol, path, spec!.request(marker), [
            `Authorization: ${AUTHORIZATION}`,
          ]);
          try {
            await until(async () => (await inFlight(t, path)) > before, `${protocol} ${path} to open`);
            const answer = await spec!.trigger(t, marker);
            const text = spec!.seen ? spec!.seen(answer, marker) : marker;
            await until(async () => stream.output().includes(text), `the event on ${protocol} ${path}`);
          } finally {
            await stream.close();
          }
          await until(async () => (await inFlight(t, path)) === before, `${protocol} ${path} to close`);
          streamsClosed.push(`${name} ${protocol} ${path}`);
        }
      }
    }
  });

  test('the standard health protocol answers through reflection alone, for "" and every service', async () => {
    const t = byName(name);
    for (const service of ['', ...t.services.map((s) => s.typeName)]) {
      // Health itself is public (orchestrators probe it with its known schema, no reflection), but
      // reflection needs the token when tokens are on, and buf curl learns the schema through it.
      const answer = await bufUnary(t, 'grpc', 'grpc.health.v1.Health/Check', { service }, [
        `Authorization: ${AUTHORIZATION}`,
      ]);
      healthAnswers.push(answer.code);
      expect({ service, answer }).toEqual({
        service,
        answer: { code: 'ok', response: { status: 'SERVING' } },
      });
    }
  });

  test('without the token every protocol answers UNAUTHENTICATED (tokens are on)', async () => {
    const t = byName(name);
    const service = t.services[0]!;
    const path = pathOf(
      service,
      service.methods.find((m) => m.methodKind === 'unary')!,
    );
    for (const protocol of PROTOCOLS) {
      // The schema still comes through reflection (with the token); the call itself carries none.
      const answer = await bufUnary(t, protocol, path, {}, [], [`Authorization: ${AUTHORIZATION}`]);
      tried.push({ target: name, path, protocol, answer });
      expect(answer.code).toBe('unauthenticated');
    }
  });
});

test('figures: methods tried per protocol, answers by code, INTERNAL count', async () => {
  const faultsSeen = tried.filter((x) => FAULTS.includes(x.answer.code)).length;
  const faultsCounted = (await Promise.all(targets.all.map(serverFaults))).reduce((a, b) => a + b, 0);
  const unaryMethods = targets.all.flatMap((t) =>
    t.services.flatMap((s) => s.methods.filter((m) => m.methodKind === 'unary')),
  ).length;
  const codes = new Map<string, number>();
  for (const x of tried) codes.set(x.answer.code, (codes.get(x.answer.code) ?? 0) + 1);
  const perProtocol = PROTOCOLS.map((p) => {
    const methods = new Set(tried.filter((x) => x.protocol === p).map((x) => `${x.target} ${x.path}`));
    return atLeast(`unary methods tried over ${p}`, methods.size, unaryMethods);
  });
  recordFigures({
    section: 'interop-buf-curl',
    title: 'Interop: buf curl on gRPC (reflection alone), Connect and gRPC-Web',
    kind: 'interop',
    figures: [
      ...perProtocol,
      reported('calls made', tried.length),
      ...[...codes].sort().map(([code, n]) => reported(`answers ${code}`, n)),
      atLeast('server streams opened and closed', streamsClosed.length, 2 * PROTOCOLS.length),
      atLeast('health checks SERVING through reflection', healthAnswers.filter((c) => c === 'ok').length, 2),
      exactly('INTERNAL or UNKNOWN answers seen by buf curl', faultsSeen, 0),
      exactly('INTERNAL or UNKNOWN answers counted by the processes', faultsCounted, 0),
    ],
  });
  expect(perProtocol.filter((f) => !f.ok)).toEqual([]);
  expect([faultsSeen, faultsCounted]).toEqual([0, 0]);
  expect(streamsClosed.length).toBeGreaterThanOrEqual(Object.keys(STREAMS).length * PROTOCOLS.length);
  for (const t of targets.all) expect(t.proc.child.exitCode).toBeNull();
});
