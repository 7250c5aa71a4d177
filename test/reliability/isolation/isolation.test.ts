/**
 * Issue 16, "Isolation and secrets", against the real notification and monitor processes started with
 * every secret of both config schemas set to a unique value (secret-pair.ts):
 *
 * 1. Auth on every method: every method of every service of both processes (from the descriptors,
 *    test/reliability/surfaces.ts), on both ports, answers UNAUTHENTICATED without a token, with a
 *    wrong one, with a malformed header and with the other process's token; only the standard health
 *    and reflection services answer without one. Every admin route that carries data answers 401
 *    without a JWT, with an expired one, a forged signature, the wrong audience or issuer, or
 *    `alg: none`; the provider webhooks answer 403 without their signature; `/health`, `/metrics` and
 *    `/status.json` need their tokens.
 * 2. Isolation: two users and two API callers. Every method whose request names a user or a record
 *    (found from the descriptors, so a new one fails until it is probed) is tried cross-user or
 *    cross-caller, as are the admin routes (the user is the JWT's `sub`): no read, mark, delete, watch
 *    or count reaches another's messages, no caller sees another's deliveries.
 * 3. Secrets: the traffic above, plus sends that fail at every refusing provider, alerts that fail at
 *    their webhook and their notification channel, and captured exceptions, all at debug level; then
 *    every captured log line, every error returned, `/health`, `/metrics` and `/status.json` are
 *    scanned for each secret (and its base64, and the forms it travels in). Target: 0 hits.
 */
import { PAGE_ASSET_FILES } from '../../../shared/http/page-assets';
import { create, type DescMessage, type DescMethod, type DescService } from '@bufbuild/protobuf';
import { ConnectError, createClient } from '@connectrpc/connect';
import { createConnectTransport } from '@connectrpc/connect-node';
import * as grpc from '@grpc/grpc-js';
import pino from 'pino';

import { loadJose } from '../../../shared/auth/jose';
import { InboxService } from '../../../shared/gen/svc/notification/v1/inbox_pb';
import { NotificationService } from '../../../shared/gen/svc/notification/v1/notification_pb';
import { DevicePlatform, UserService } from '../../../shared/gen/svc/notification/v1/users_pb';
import { MonitorService } from '../../../shared/gen/svc/monitor/v1/monitor_pb';
import { AlertService } from '../../../shared/gen/svc/monitor/v1/alerts_pb';
import { OnCallService } from '../../../shared/gen/svc/monitor/v1/oncall_pb';
import { AdminGateway } from '../../../services/notification/admin/gateway';
import type { AdminAuth } from '../../../services/notification/admin/auth';
import type { InboxServiceContract } from '../../../services/notification/inbox/types';
import {
  grpcClient,
  healthCheck,
  healthClient,
  listServicesByReflection,
  unary,
  type GenericClient,
} from '../../support/grpc-clients';
import { atLeast, exactly, recordFigures, reported } from '../results';
import { MONITOR_SERVICES, NOTIFICATION_SERVICES, PUBLIC_SERVICES, methodsOf } from '../surfaces';
import { allSecretKeys } from './secret-keys';
import { startSecretPair, type SecretPair } from './secret-pair';
import { MetricsService } from '../../../shared/gen/opentelemetry/proto/collector/metrics/v1/metrics_service_pb';
import { TraceService } from '../../../shared/gen/opentelemetry/proto/collector/trace/v1/trace_service_pb';
import {
  INBOX_METHOD_SCOPES,
  NOTIFICATION_METHOD_SCOPES,
  USER_METHOD_SCOPES,
  TEMPLATE_METHOD_SCOPES,
  NOTIFY_METHOD_SCOPES,
  INBOUND_SMS_METHOD_SCOPES,
} from '../../../services/notification/rpc/scopes';
import { InboundSmsService } from '../../../shared/gen/svc/notification/v1/inbound_sms_pb';
import { TemplateService } from '../../../shared/gen/svc/notification/v1/templates_pb';
import { NotificationStatus, NotifyService } from '../../../shared/gen/svc/notification/v1/notify_pb';
import {
  MONITOR_METHOD_SCOPES,
  ALERT_METHOD_SCOPES,
  ONCALL_METHOD_SCOPES,
  OTLP_METRICS_METHOD_SCOPES,
  OTLP_TRACE_METHOD_SCOPES,
} from '../../../services/monitor/rpc/scopes';

const UNAUTHENTICATED = grpc.status.UNAUTHENTICATED;
const NOT_FOUND = grpc.status.NOT_FOUND;
/** A deadline on every call: a hang fails the test instead of stalling it. */
const CALL_DEADLINE_MS = 10_000;
/** Valid-token calls to a stream: the stream is open (not refused) once this passes. */
const STREAM_PROBE_MS = 1_500;

let pair: SecretPair;
/** Every error message and error body a caller received: scanned for secrets at the end. */
const answers: string[] = [];

function bearer(token: string): Record<string, string> {
  return { authorization: `Bearer ${token}` };
}

/** Polls `probe` until it returns a value; a deadline against hangs, never a timing assertion. */
async function until<T>(what: string, probe: () => Promise<T | undefined> | T | undefined, ms = 60_000) {
  const deadline = Date.now() + ms;
  for (;;) {
    const found = await probe();
    if (found !== undefined) return found;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

// ---------------------------------------------------------------------------------------------
// Calling any method generically, over grpc-js (gRPC port) and Connect (HTTP port)

/** The gRPC status code of calling `method` with an empty request and `headers` (0: OK). */
async function grpcCode(
  client: GenericClient,
  method: DescMethod,
  headers: Record<string, string>,
  input: unknown = create(method.input),
): Promise<number> {
  if (method.methodKind === 'unary') {
    try {
      await unary(client, method.localName, input, { metadata: headers, deadlineMs: CALL_DEADLINE_MS });
      return grpc.status.OK;
    } catch (err) {
      const e = err as grpc.ServiceError;
      answers.push(e.details ?? e.message);
      return e.code;
    }
  }
  const md = new grpc.Metadata();
  for (const [k, v] of Object.entries(headers)) md.set(k, v);
  const open = client[method.localName] as unknown as (
    req: unknown,
    md: grpc.Metadata,
    opts: grpc.CallOptions,
  ) => grpc.ClientReadableStream<unknown>;
  const call = open.call(client, input, md, { deadline: Date.now() + STREAM_PROBE_MS });
  return new Promise<number>((resolve) => {
    call.on('data', () => undefined);
    call.on('error', (e: grpc.ServiceError) => answers.push(e.details ?? e.message));
    call.on('status', (s: grpc.StatusObject) => resolve(s.code));
  });
}

type AnyClient = Record<string, (req: unknown, opts?: object) => unknown>;

/** The same over Connect JSON on the HTTP port (Connect codes equal gRPC codes). */
async function connectCode(
  baseUrl: string,
  service: DescService,
  method: DescMethod,
  headers: Record<string, string>,
) {
  const transport = createConnectTransport({ baseUrl, httpVersion: '1.1', useBinaryFormat: false });
  const client = createClient(service, transport) as unknown as AnyClient;
  const input = create(method.input);
  try {
    if (method.methodKind === 'unary') {
      await (client[method.localName]!(input, { headers, timeoutMs: CALL_DEADLINE_MS }) as Promise<unknown>);
    } else {
      const stream = client[method.localName]!(input, {
        headers,
        timeoutMs: STREAM_PROBE_MS,
      }) as AsyncIterable<unknown>;
      for await (const _ of stream) break;
    }
    return grpc.status.OK;
  } catch (err) {
    const e = ConnectError.from(err);
    answers.push(e.rawMessage);
    return e.code as number;
  }
}

// ---------------------------------------------------------------------------------------------

beforeAll(async () => {
  pair = await startSecretPair();
}, 180_000);

afterAll(async () => {
  await pair?.close();
}, 60_000);

interface Process {
  name: 'notification' | 'monitor';
  services: readonly DescService[];
  grpcAddress: string;
  baseUrl: string;
  token: string;
  otherToken: string;
}

function processes(): Process[] {
  return [
    {
      name: 'notification',
      services: NOTIFICATION_SERVICES,
      grpcAddress: `127.0.0.1:${pair.notification.grpcPort}`,
      baseUrl: `http://127.0.0.1:${pair.notification.httpPort}`,
      token: pair.notificationTokens[0],
      otherToken: pair.monitorToken,
    },
    {
      name: 'monitor',
      services: MONITOR_SERVICES,
      grpcAddress: `127.0.0.1:${pair.monitor.grpcPort}`,
      baseUrl: `http://127.0.0.1:${pair.monitor.httpPort}`,
      token: pair.monitorToken,
      otherToken: pair.notificationTokens[0],
    },
  ];
}

describe('auth on every method of both processes', () => {
  test('every RPC on both ports is UNAUTHENTICATED without a valid token, and passes auth with one', async () => {
    const badHeaders: Record<string, Record<string, string>> = {
      'no token': {},
      'wrong token': bearer('not-a-configured-token-0000000000000000'),
      'malformed header': { authorization: 'Basic dXNlcjpwYXNz' },
      'empty bearer': { authorization: 'Bearer ' },
    };
    const failures: string[] = [];
    let methodsChecked = 0;
    let callsChecked = 0;
    for (const proc of processes()) {
      const variants = { ...badHeaders, "the other process's token": bearer(proc.otherToken) };
      for (const service of proc.services) {
        const client = grpcClient(service, proc.grpcAddress);
        try {
          for (const method of service.methods) {
            methodsChecked++;
            for (const [what, headers] of Object.entries(variants)) {
              for (const [port, code] of [
                ['grpc', await grpcCode(client, method, headers)],
                ['http', await connectCode(proc.baseUrl, service, method, headers)],
              ] as const) {
                callsChecked++;
                if (code !== UNAUTHENTICATED)
                  failures.push(`${proc.name} ${port} ${method.name} (${what}): ${code}`);
              }
            }
            // The right token passes auth (the answer may be anything else: the request is empty).
            for (const [port, code] of [
              ['grpc', await grpcCode(client, method, bearer(proc.token))],
              ['http', await connectCode(proc.baseUrl, service, method, bearer(proc.token))],
            ] as const) {
              if (code === UNAUTHENTICATED)
                failures.push(`${proc.name} ${port} ${method.name}: valid token refused`);
            }
          }
        } finally {
          client.close();
        }
      }
    }

    // Exactly the standard health service answers without a token; reflection needs one (any scope).
    const unexpectedOpen: string[] = [];
    for (const proc of processes()) {
      await expect(listServicesByReflection(proc.grpcAddress)).rejects.toMatchObject({
        code: UNAUTHENTICATED,
      });
      const listed = await listServicesByReflection(proc.grpcAddress, proc.token);
      const ours = new Set(proc.services.map((s) => s.typeName));
      const open = listed.filter((s) => !ours.has(s));
      expect(open).toContain('grpc.health.v1.Health');
      unexpectedOpen.push(
        ...open.filter((s) => !PUBLIC_SERVICES.includes(s)).map((s) => `${proc.name} ${s}`),
      );
      const health = healthClient(proc.grpcAddress);
      try {
        expect(await healthCheck(health, '')).toBe('SERVING');
      } finally {
        health.close();
      }
    }
    recordFigures({
      section: 'isolation-auth',
      title: 'Isolation: tokens and JWTs on every method and route',
      kind: 'isolation',
      figures: [
        atLeast('RPC methods checked (both processes)', methodsChecked, 1),
        reported('unauthenticated calls tried (both ports)', callsChecked),
        exactly('methods answering without a valid token', failures.length, 0),
        exactly('open services besides health and reflection', unexpectedOpen.length, 0),
      ],
    });
    expect(failures).toEqual([]);
    expect(methodsChecked).toBe(methodsOf([...NOTIFICATION_SERVICES, ...MONITOR_SERVICES]).length);
    expect(unexpectedOpen).toEqual([]);
  }, 300_000);
});

/** Every method's scope, per service, as the processes register them (their rpc/scopes.ts tables). */
const METHOD_SCOPES: Record<string, Readonly<Record<string, string>>> = {
  [NotificationService.typeName]: NOTIFICATION_METHOD_SCOPES,
  [InboxService.typeName]: INBOX_METHOD_SCOPES,
  [UserService.typeName]: USER_METHOD_SCOPES,
  [TemplateService.typeName]: TEMPLATE_METHOD_SCOPES,
  [NotifyService.typeName]: NOTIFY_METHOD_SCOPES,
  [InboundSmsService.typeName]: INBOUND_SMS_METHOD_SCOPES,
  [MonitorService.typeName]: MONITOR_METHOD_SCOPES,
  [AlertService.typeName]: ALERT_METHOD_SCOPES,
  [OnCallService.typeName]: ONCALL_METHOD_SCOPES,
  [TraceService.typeName]: OTLP_TRACE_METHOD_SCOPES,
  [MetricsService.typeName]: OTLP_METRICS_METHOD_SCOPES,
};

describe('scopes on every method of both processes', () => {
  test('every RPC on both ports is PERMISSION_DENIED to a token without its scope', async () => {
    const failures: string[] = [];
    let methodsChecked = 0;
    for (const proc of processes()) {
      const lacking = pair.lackingScope[proc.name];
      for (const service of proc.services) {
        const client = grpcClient(service, proc.grpcAddress);
        try {
          // From the descriptors: a method added later without a scope fails here.
          for (const method of service.methods) {
            methodsChecked++;
            const scope = METHOD_SCOPES[service.typeName]?.[method.localName];
            const token = scope === undefined ? undefined : lacking[scope];
            if (token === undefined) {
              failures.push(`${proc.name} ${method.name}: no scope (or no probe token for "${scope}")`);
              continue;
            }
            for (const [port, code] of [
              ['grpc', await grpcCode(client, method, bearer(token))],
              ['http', await connectCode(proc.baseUrl, service, method, bearer(token))],
            ] as const) {
              if (code !== grpc.status.PERMISSION_DENIED)
                failures.push(`${proc.name} ${port} ${method.name} without "${scope}": ${code}`);
            }
          }
        } finally {
          client.close();
        }
      }
    }
    recordFigures({
      section: 'isolation-scopes',
      title: 'Isolation: every method against a token without its scope',
      kind: 'isolation',
      figures: [
        atLeast('RPC methods checked (both processes)', methodsChecked, 1),
        exactly('methods answering a token without their scope', failures.length, 0),
      ],
    });
    expect(failures).toEqual([]);
    expect(methodsChecked).toBe(methodsOf([...NOTIFICATION_SERVICES, ...MONITOR_SERVICES]).length);
  }, 300_000);
});

// ---------------------------------------------------------------------------------------------
// Admin JWTs, webhooks, health, metrics, status page

/** Signs an admin JWT; `overrides` change the claims or the key. */
async function adminJwt(
  sub: string,
  overrides: { secret?: string; issuer?: string; audience?: string; expiresIn?: string | number } = {},
): Promise<string> {
  const { SignJWT } = await loadJose();
  return new SignJWT({})
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setSubject(sub)
    .setIssuedAt(Math.floor(Date.now() / 1000) - 7200)
    .setIssuer(overrides.issuer ?? pair.jwtIssuer)
    .setAudience(overrides.audience ?? pair.jwtAudience)
    .setExpirationTime(overrides.expiresIn ?? '10m')
    .sign(new TextEncoder().encode(overrides.secret ?? pair.jwtSecret));
}

function unsignedJwt(sub: string): string {
  const part = (o: object): string => Buffer.from(JSON.stringify(o)).toString('base64url');
  const exp = Math.floor(Date.now() / 1000) + 600;
  return `${part({ alg: 'none', typ: 'JWT' })}.${part({ sub, exp, iss: pair.jwtIssuer, aud: pair.jwtAudience })}.`;
}

/** Fetch with a deadline; the body is kept for the secret scan. */
async function httpCall(url: string, init: RequestInit = {}): Promise<{ status: number; body: string }> {
  const res = await fetch(url, { ...init, signal: AbortSignal.timeout(CALL_DEADLINE_MS) });
  const body = await res.text();
  answers.push(body);
  return { status: res.status, body };
}

/** The admin routes as the gateway registers them (its own `routes()`), not a list written here. */
function adminRoutes(): { method: string; path: string }[] {
  const gateway = new AdminGateway({
    inbox: {} as InboxServiceContract,
    auth: {} as AdminAuth,
    logger: pino({ level: 'silent' }),
    maxPageSize: 10,
  });
  return gateway.routes().map((r) => ({ method: r.methods[0]!, path: r.path }));
}

/** The admin page and its assets: public by design, they hold no data (the page gets its JWT in the fragment). */
/** The page and its static files (shared/http/page-assets.ts): nothing else of the admin is open. */
const ADMIN_PUBLIC_PATHS = [
  '/admin/notifications',
  ...PAGE_ASSET_FILES.map((name) => `/admin/notifications/assets/${name}`),
];

describe('auth on every HTTP route', () => {
  test('every admin data route answers 401 to a missing, expired, forged, mis-addressed or unsigned JWT', async () => {
    const base = `http://127.0.0.1:${pair.notification.httpPort}`;
    const variants: Record<string, string | undefined> = {
      'no token': undefined,
      expired: `Bearer ${await adminJwt('alice', { expiresIn: Math.floor(Date.now() / 1000) - 3600 })}`,
      'wrong signature': `Bearer ${await adminJwt('alice', { secret: 'another-secret-of-at-least-32-bytes-000' })}`,
      'wrong audience': `Bearer ${await adminJwt('alice', { audience: 'someone-else' })}`,
      'wrong issuer': `Bearer ${await adminJwt('alice', { issuer: 'https://evil.example.com' })}`,
      'alg none': `Bearer ${unsignedJwt('alice')}`,
      'an RPC token': `Bearer ${pair.notificationTokens[0]}`,
    };
    const routes = adminRoutes();
    const failures: string[] = [];
    const open: string[] = [];
    let attempts = 0;
    for (const route of routes) {
      const url = base + route.path.replace(':id', '00000000-0000-4000-8000-000000000000');
      const noAuth = await httpCall(url, { method: route.method });
      if (noAuth.status === 200) {
        open.push(route.path);
        continue;
      }
      for (const [what, authorization] of Object.entries(variants)) {
        attempts++;
        const res = await httpCall(url, {
          method: route.method,
          headers: authorization ? { authorization } : {},
        });
        if (res.status !== 401 || JSON.parse(res.body).error?.code !== 'unauthenticated') {
          failures.push(`${route.method} ${route.path} (${what}): ${res.status}`);
        }
      }
    }
    // Webhooks: the signature is the authentication; without it nothing is accepted.
    const webhooks = [
      `/webhooks/sms/${pair.backends.sms}/status`,
      `/webhooks/sms/${pair.backends.sms}/inbound`,
      `/webhooks/email/${pair.backends.httpApi}/events`,
    ];
    for (const path of webhooks) {
      attempts++;
      const res = await httpCall(base + path, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: 'MessageSid=SM00000000000000000000000000000000&MessageStatus=delivered&From=%2B15551234567&Body=STOP',
      });
      if (res.status !== 403 && res.status !== 404) failures.push(`POST ${path} unsigned: ${res.status}`);
    }
    // Health, metrics, the status page data and OTLP/HTTP need their tokens.
    const tokenRoutes: [string, string, string][] = [
      ['GET', base + '/health', pair.healthTokens.notification],
      ['GET', base + '/health/ready', pair.healthTokens.notification],
      ['GET', base + '/metrics', pair.metricsTokens.notification],
      ['GET', `http://127.0.0.1:${pair.monitor.httpPort}/health`, pair.healthTokens.monitor],
      ['GET', `http://127.0.0.1:${pair.monitor.httpPort}/metrics`, pair.metricsTokens.monitor],
      ['GET', `http://127.0.0.1:${pair.monitor.httpPort}/status.json`, pair.webToken],
      ['POST', `http://127.0.0.1:${pair.monitor.httpPort}/v1/traces`, pair.monitorToken],
    ];
    for (const [method, url, token] of tokenRoutes) {
      for (const authorization of [
        undefined,
        'Bearer wrong-token-00000000000000',
        `Bearer ${pair.jwtSecret}`,
      ]) {
        attempts++;
        const res = await httpCall(url, { method, headers: authorization ? { authorization } : {} });
        if (res.status !== 401) failures.push(`${method} ${url} (${authorization ?? 'none'}): ${res.status}`);
      }
      const ok = await httpCall(url, {
        method,
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        ...(method === 'POST' ? { body: '{}' } : {}),
      });
      if (ok.status === 401) failures.push(`${method} ${url}: its own token refused`);
    }
    // RPC tokens on HTTP routes keep their scopes: OTLP/HTTP needs monitor:ingest (403 without it),
    // the status page's data a server token with monitor:read (401 without it: not one of its tokens).
    const mBase = `http://127.0.0.1:${pair.monitor.httpPort}`;
    for (const [method, url, token, expected] of [
      ['POST', `${mBase}/v1/traces`, pair.lackingScope.monitor['monitor:ingest']!, 403],
      ['GET', `${mBase}/status.json`, pair.lackingScope.monitor['monitor:read']!, 401],
    ] as const) {
      attempts++;
      const res = await httpCall(url, {
        method,
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        ...(method === 'POST' ? { body: '{}' } : {}),
      });
      if (res.status !== expected) failures.push(`${method} ${url} without its scope: ${res.status}`);
    }
    // A valid JWT reaches the data.
    const inbox = await httpCall(`${base}/admin/notifications/inbox`, {
      headers: { authorization: `Bearer ${await adminJwt('alice')}` },
    });
    const figures = [
      atLeast('admin routes checked', routes.length, 1),
      reported('HTTP auth attempts (admin, webhooks, health, metrics, status, OTLP)', attempts),
      exactly('routes answering without valid credentials', failures.length, 0),
    ];
    recordFigures({
      section: 'isolation-http-auth',
      title: 'Isolation: JWTs, signatures and tokens on every HTTP route',
      kind: 'isolation',
      figures,
    });
    expect(failures).toEqual([]);
    expect(open.sort()).toEqual([...ADMIN_PUBLIC_PATHS].sort());
    expect(inbox.status).toBe(200);
  }, 120_000);
});

// ---------------------------------------------------------------------------------------------
// Isolation: users and callers

interface Ctx {
  inbox: GenericClient;
  notifications: GenericClient;
  users: GenericClient;
  notify: GenericClient;
  a: Record<string, string>;
  b: Record<string, string>;
}

async function call<T>(
  client: GenericClient,
  service: DescService,
  name: string,
  init: Record<string, unknown>,
  md: Record<string, string>,
) {
  const method = service.methods.find((m) => m.name === name)!;
  const { response } = await unary<T>(client, method.localName, create(method.input as DescMessage, init), {
    metadata: md,
    deadlineMs: CALL_DEADLINE_MS,
  });
  return response;
}

async function codeOf(promise: Promise<unknown>): Promise<number> {
  try {
    await promise;
    return grpc.status.OK;
  } catch (err) {
    const e = err as grpc.ServiceError;
    answers.push(e.details ?? e.message);
    return e.code;
  }
}

interface Msg {
  id: string;
  userId: string;
  read: boolean;
}

const inboxOf = async (ctx: Ctx, user: string): Promise<Msg[]> =>
  (await call<{ messages: Msg[] }>(ctx.inbox, InboxService, 'GetInbox', { userId: user }, ctx.a)).messages;
const sendTo = async (ctx: Ctx, user: string, title: string): Promise<Msg> =>
  (
    await call<{ message: Msg }>(
      ctx.inbox,
      InboxService,
      'Send',
      { userId: user, title, body: 'private to ' + user },
      ctx.a,
    )
  ).message;

/**
 * One cross-user or cross-caller probe per method: it tries the method on another's data and
 * returns the leaks it saw (0 when isolated) and the attempts it made.
 */
type Probe = (ctx: Ctx) => Promise<{ attempts: number; leaks: string[] }>;

/**
 * Idempotency keys are per caller: caller B sending with caller A's key makes its own delivery and
 * never answers A's (which would show B A's record).
 */
function idempotencyProbe(name: string, request: Record<string, unknown>): Probe {
  const idsOf = (r: { deliveryId?: string; results?: { deliveryId: string }[] }): string[] =>
    r.results ? r.results.map((x) => x.deliveryId) : [r.deliveryId ?? ''];
  return async (ctx) => {
    const req = { ...request, idempotencyKey: `iso-shared-key-${name}` };
    const a = idsOf(await call(ctx.notifications, NotificationService, name, req, ctx.a));
    const b = idsOf(await call(ctx.notifications, NotificationService, name, req, ctx.b));
    const shared = a.filter((id) => b.includes(id));
    return {
      attempts: 1,
      leaks: shared.length > 0 ? [`${name}: idempotency key answered across callers`] : [],
    };
  };
}

/** Bob's message as alice (or caller B) must not reach it: NOT_FOUND and bob's state unchanged. */
/** A topic notification of caller A (a topic works whatever the users area holds). */
const topicOfA = async (ctx: Ctx, key = ''): Promise<{ id: string }> =>
  (
    await call<{ notification: { id: string } }>(
      ctx.notify,
      NotifyService,
      'Notify',
      { topic: 'iso-topic', category: ISO_CATEGORY, idempotencyKey: key },
      ctx.a,
    )
  ).notification;

const PROBES: Record<string, Probe> = {
  // Notifications belong to the caller that made them (like deliveries): another caller's is NOT_FOUND.
  'NotifyService.GetNotification': async (ctx) => {
    const n = await topicOfA(ctx);
    const own = await codeOf(call(ctx.notify, NotifyService, 'GetNotification', { id: n.id }, ctx.a));
    const other = await codeOf(call(ctx.notify, NotifyService, 'GetNotification', { id: n.id }, ctx.b));
    const leaks = other === grpc.status.NOT_FOUND ? [] : [`GetNotification: B got A's (${other})`];
    if (own !== grpc.status.OK) leaks.push(`GetNotification: A misses its own (${own})`);
    return { attempts: 1, leaks };
  },
  'NotifyService.ListNotifications': async (ctx) => {
    const n = await topicOfA(ctx);
    const page = await call<{ notifications: { id: string; parentId: string }[] }>(
      ctx.notify,
      NotifyService,
      'ListNotifications',
      { userId: 'alice', pageSize: 500 },
      ctx.b,
    );
    const leaks = page.notifications.some((x) => x.id === n.id || x.parentId === n.id)
      ? ["ListNotifications: B sees A's"]
      : [];
    return { attempts: 1, leaks };
  },
  // CancelNotification acts on the caller's own notifications only: B cancelling A's (by id, or by
  // A's idempotency key) is NOT_FOUND and A's stays as it was.
  'NotifyService.CancelNotification': async (ctx) => {
    const key = `iso-cancel-${Date.now()}`;
    const n = (
      await call<{ notification: { id: string } }>(
        ctx.notify,
        NotifyService,
        'Notify',
        { topic: 'iso-topic', category: ISO_CATEGORY, idempotencyKey: key, delay: { seconds: 3600n } },
        ctx.a,
      )
    ).notification;
    const byId = await codeOf(call(ctx.notify, NotifyService, 'CancelNotification', { id: n.id }, ctx.b));
    const byKey = await codeOf(
      call(ctx.notify, NotifyService, 'CancelNotification', { idempotencyKey: key }, ctx.b),
    );
    const after = await call<{ notification: { status: number } }>(
      ctx.notify,
      NotifyService,
      'GetNotification',
      { id: n.id },
      ctx.a,
    );
    const leaks: string[] = [];
    if (byId !== grpc.status.NOT_FOUND) leaks.push(`CancelNotification: B reached A's by id (${byId})`);
    if (byKey !== grpc.status.NOT_FOUND) leaks.push(`CancelNotification: B reached A's by key (${byKey})`);
    if (after.notification.status !== NotificationStatus.SCHEDULED) {
      leaks.push(`CancelNotification: A's changed (${after.notification.status})`);
    }
    return { attempts: 2, leaks };
  },
  // Idempotency keys are per caller: B's call with A's key makes its own notification.
  'NotifyService.Notify': async (ctx) => {
    const a = await topicOfA(ctx, 'iso-shared-notify-key');
    const b = (
      await call<{ notification: { id: string } }>(
        ctx.notify,
        NotifyService,
        'Notify',
        { topic: 'iso-topic', category: ISO_CATEGORY, idempotencyKey: 'iso-shared-notify-key' },
        ctx.b,
      )
    ).notification;
    return { attempts: 1, leaks: a.id === b.id ? ['Notify: idempotency key answered across callers'] : [] };
  },
  'InboxService.Send': async (ctx) => {
    const m = await sendTo(ctx, 'alice', 'for alice only');
    const leaks = (await inboxOf(ctx, 'bob')).some((x) => x.id === m.id)
      ? ['Send: alice message in bob inbox']
      : [];
    return { attempts: 1, leaks };
  },
  'InboxService.GetInbox': async (ctx) => {
    const b = await sendTo(ctx, 'bob', 'bob secret');
    const seen = await inboxOf(ctx, 'alice');
    return {
      attempts: 1,
      leaks: seen.some((x) => x.id === b.id || x.userId !== 'alice') ? ['GetInbox'] : [],
    };
  },
  'InboxService.MarkRead': async (ctx) => {
    const b = await sendTo(ctx, 'bob', 'bob unread');
    const code = await codeOf(
      call(ctx.inbox, InboxService, 'MarkRead', { userId: 'alice', messageId: b.id }, ctx.a),
    );
    const still = (await inboxOf(ctx, 'bob')).find((x) => x.id === b.id);
    return { attempts: 1, leaks: code !== NOT_FOUND || still?.read !== false ? [`MarkRead: ${code}`] : [] };
  },
  'InboxService.MarkAllRead': async (ctx) => {
    const b = await sendTo(ctx, 'bob', 'bob stays unread');
    await call(ctx.inbox, InboxService, 'MarkAllRead', { userId: 'alice' }, ctx.a);
    const still = (await inboxOf(ctx, 'bob')).find((x) => x.id === b.id);
    return { attempts: 1, leaks: still?.read !== false ? ['MarkAllRead reached bob'] : [] };
  },
  'InboxService.Delete': async (ctx) => {
    const b = await sendTo(ctx, 'bob', 'bob keeps this');
    const code = await codeOf(
      call(ctx.inbox, InboxService, 'Delete', { userId: 'alice', messageId: b.id }, ctx.a),
    );
    const still = (await inboxOf(ctx, 'bob')).some((x) => x.id === b.id);
    return { attempts: 1, leaks: code !== NOT_FOUND || !still ? [`Delete: ${code}`] : [] };
  },
  'InboxService.CountUnread': async (ctx) => {
    const before = await call<{ unreadCount: number }>(
      ctx.inbox,
      InboxService,
      'CountUnread',
      { userId: 'alice' },
      ctx.a,
    );
    await sendTo(ctx, 'bob', 'bob counts alone');
    const after = await call<{ unreadCount: number }>(
      ctx.inbox,
      InboxService,
      'CountUnread',
      { userId: 'alice' },
      ctx.a,
    );
    return { attempts: 1, leaks: after.unreadCount !== before.unreadCount ? ['CountUnread counts bob'] : [] };
  },
  'InboxService.ClearAll': async (ctx) => {
    const b = await sendTo(ctx, 'bob', 'bob survives clear');
    await call(ctx.inbox, InboxService, 'ClearAll', { userId: 'alice' }, ctx.a);
    const still = (await inboxOf(ctx, 'bob')).some((x) => x.id === b.id);
    return { attempts: 1, leaks: still ? [] : ['ClearAll removed bob'] };
  },
  'InboxService.WatchInbox': async (ctx) => {
    // Alice's stream sees her own next message and nothing of bob's sent before it.
    const md = new grpc.Metadata();
    md.set('authorization', ctx.a.authorization!);
    const method = InboxService.methods.find((m) => m.name === 'WatchInbox')!;
    const open = ctx.inbox[method.localName] as unknown as (
      r: unknown,
      m: grpc.Metadata,
      o: grpc.CallOptions,
    ) => grpc.ClientReadableStream<{ type: number; messageId: string; message?: Msg }>;
    const stream = open.call(ctx.inbox, create(method.input, { userId: 'alice' }), md, {
      deadline: Date.now() + 30_000,
    });
    const frames: { type: number; messageId: string; message?: Msg }[] = [];
    stream.on('data', (f) => frames.push(f));
    stream.on('error', () => undefined);
    try {
      await until('the live frame', () => (frames.length > 0 ? true : undefined), 15_000);
      const b = await sendTo(ctx, 'bob', 'bob event');
      await call(ctx.inbox, InboxService, 'MarkRead', { userId: 'bob', messageId: b.id }, ctx.a);
      const a = await sendTo(ctx, 'alice', 'alice event');
      await until('alice event', () => (frames.some((f) => f.messageId === a.id) ? true : undefined), 15_000);
      const leaked = frames.filter(
        (f) => f.messageId === b.id || (f.message && f.message.userId !== 'alice'),
      );
      return { attempts: 2, leaks: leaked.map((f) => `WatchInbox frame ${f.type} of bob`) };
    } finally {
      stream.cancel();
    }
  },
  'NotificationService.WatchDeliveries': async (ctx) => {
    // Caller B's stream sees its own next delivery and nothing of caller A's sent before it.
    const md = new grpc.Metadata();
    md.set('authorization', ctx.b.authorization!);
    const method = NotificationService.methods.find((m) => m.name === 'WatchDeliveries')!;
    const open = ctx.notifications[method.localName] as unknown as (
      r: unknown,
      m: grpc.Metadata,
      o: grpc.CallOptions,
    ) => grpc.ClientReadableStream<{ type: number; deliveryId: string }>;
    const stream = open.call(ctx.notifications, create(method.input, {}), md, {
      deadline: Date.now() + 30_000,
    });
    const frames: { type: number; deliveryId: string }[] = [];
    stream.on('data', (f) => frames.push(f));
    stream.on('error', () => undefined);
    try {
      await until('the live frame', () => (frames.length > 0 ? true : undefined), 15_000);
      const ofA = await call<{ deliveryId: string }>(
        ctx.notifications,
        NotificationService,
        'SendSms',
        { to: '+15551230004', body: 'watched by nobody but A' },
        ctx.a,
      );
      const ofB = await call<{ deliveryId: string }>(
        ctx.notifications,
        NotificationService,
        'SendSms',
        { to: '+15551230005', body: 'B watches its own' },
        ctx.b,
      );
      await until(
        "B's own delivery",
        () => (frames.some((f) => f.deliveryId === ofB.deliveryId) ? true : undefined),
        15_000,
      );
      const leaked = frames.filter((f) => f.deliveryId === ofA.deliveryId);
      return {
        attempts: 1,
        leaks: leaked.map((f) => `WatchDeliveries frame ${f.type} of caller A seen by B`),
      };
    } finally {
      stream.cancel();
    }
  },
  'NotificationService.GetDelivery': async (ctx) => {
    const sent = await call<{ deliveryId: string }>(
      ctx.notifications,
      NotificationService,
      'SendSms',
      { to: '+15551230001', body: 'caller A only' },
      ctx.a,
    );
    const code = await codeOf(
      call(ctx.notifications, NotificationService, 'GetDelivery', { id: sent.deliveryId }, ctx.b),
    );
    const own = await codeOf(
      call(ctx.notifications, NotificationService, 'GetDelivery', { id: sent.deliveryId }, ctx.a),
    );
    return {
      attempts: 1,
      leaks: code !== NOT_FOUND || own !== grpc.status.OK ? [`GetDelivery by B: ${code}, by A: ${own}`] : [],
    };
  },
  'NotificationService.ListDeliveries': async (ctx) => {
    const sent = await call<{ deliveryId: string }>(
      ctx.notifications,
      NotificationService,
      'SendSms',
      { to: '+15551230002', body: 'listed for A' },
      ctx.a,
    );
    const listB = await call<{ deliveries: { id: string }[] }>(
      ctx.notifications,
      NotificationService,
      'ListDeliveries',
      { pageSize: 500 },
      ctx.b,
    );
    const listA = await call<{ deliveries: { id: string }[] }>(
      ctx.notifications,
      NotificationService,
      'ListDeliveries',
      { pageSize: 500 },
      ctx.a,
    );
    const leaks = listB.deliveries.some((d) => d.id === sent.deliveryId) ? ['ListDeliveries: B sees A'] : [];
    if (!listA.deliveries.some((d) => d.id === sent.deliveryId))
      leaks.push('ListDeliveries: A misses its own');
    return { attempts: 1, leaks };
  },
  // Idempotency keys are per caller: B's key never answers A's delivery.
  ...Object.fromEntries(
    (
      [
        ['SendSms', { to: '+15551230003', body: 'same key' }],
        ['SendEmail', { to: ['same-key@iso.example.com'], subject: 'same key', text: 'x' }],
        ['SendPush', { message: { deviceToken: 'a1b2c3d4e5f60718293a4b5c6d7e8f91', body: 'same key' } }],
        [
          'SendPushBatch',
          { messages: [{ deviceToken: 'a1b2c3d4e5f60718293a4b5c6d7e8f92', body: 'same key' }] },
        ],
      ] as const
    ).map(([name, request]): [string, Probe] => [
      `NotificationService.${name}`,
      idempotencyProbe(name, { ...request }),
    ]),
  ),
};

// The user directory: users are the service's (shared by every caller by design, proto/users.proto);
// what must hold is that a call about one user never reads or changes another.
interface WireUser {
  userId: string;
  emails: string[];
  devices: { token: string }[];
}

const ensureUsers = async (ctx: Ctx): Promise<{ alice: string; bob: string }> => {
  const tagged = (name: string) => `iso-user-${name}`;
  for (const name of ['alice', 'bob']) {
    await call(
      ctx.users,
      UserService,
      'UpsertUser',
      { userId: tagged(name), emails: [`${name}@iso.example.com`] },
      ctx.a,
    );
  }
  return { alice: tagged('alice'), bob: tagged('bob') };
};
const userOf = async (ctx: Ctx, userId: string): Promise<WireUser> =>
  (await call<{ user: WireUser }>(ctx.users, UserService, 'GetUser', { userId }, ctx.a)).user;
const bobDevice = async (ctx: Ctx, bob: string): Promise<string> => {
  const token = `iso-bob-${Math.random().toString(36).slice(2, 12)}`;
  await call(
    ctx.users,
    UserService,
    'RegisterDevice',
    { userId: bob, token, platform: DevicePlatform.FCM },
    ctx.a,
  );
  return token;
};
const USER_PROBES: Record<string, Probe> = {
  'UserService.UpsertUser': async (ctx) => {
    const { alice, bob } = await ensureUsers(ctx);
    await call(
      ctx.users,
      UserService,
      'UpsertUser',
      { userId: alice, emails: ['changed@iso.example.com'] },
      ctx.a,
    );
    const b = await userOf(ctx, bob);
    return {
      attempts: 1,
      leaks: b.emails.join() !== 'bob@iso.example.com' ? ['UpsertUser of alice changed bob'] : [],
    };
  },
  'UserService.GetUser': async (ctx) => {
    const { alice, bob } = await ensureUsers(ctx);
    const token = await bobDevice(ctx, bob);
    const a = await userOf(ctx, alice);
    const text = JSON.stringify({ emails: a.emails, devices: a.devices.map((d) => d.token) });
    return {
      attempts: 1,
      leaks: text.includes('bob') || text.includes(token) ? ['GetUser of alice shows bob'] : [],
    };
  },
  'UserService.DeleteUser': async (ctx) => {
    const { alice, bob } = await ensureUsers(ctx);
    const token = await bobDevice(ctx, bob);
    const m = await sendTo(ctx, bob, 'bob keeps his inbox');
    await call(ctx.users, UserService, 'DeleteUser', { userId: alice }, ctx.a);
    const b = await userOf(ctx, bob);
    const leaks: string[] = [];
    if (!b.devices.some((d) => d.token === token)) leaks.push('DeleteUser of alice removed bob device');
    if (!(await inboxOf(ctx, bob)).some((x) => x.id === m.id))
      leaks.push('DeleteUser of alice cleared bob inbox');
    return { attempts: 1, leaks };
  },
  'UserService.RegisterDevice': async (ctx) => {
    const { alice, bob } = await ensureUsers(ctx);
    const token = await bobDevice(ctx, bob);
    await call(
      ctx.users,
      UserService,
      'RegisterDevice',
      { userId: alice, token: `iso-alice-${token}`, platform: DevicePlatform.APNS },
      ctx.a,
    );
    const b = (await userOf(ctx, bob)).devices.map((d) => d.token);
    const changed = !b.includes(token) || b.some((t) => t.startsWith('iso-alice-'));
    return { attempts: 1, leaks: changed ? ['RegisterDevice of alice changed bob devices'] : [] };
  },
  'UserService.UnregisterDevice': async (ctx) => {
    const { alice, bob } = await ensureUsers(ctx);
    const token = await bobDevice(ctx, bob);
    const code = await codeOf(
      call(ctx.users, UserService, 'UnregisterDevice', { userId: alice, token }, ctx.a),
    );
    const kept = (await userOf(ctx, bob)).devices.some((d) => d.token === token);
    return {
      attempts: 1,
      leaks: code !== NOT_FOUND || !kept ? [`UnregisterDevice of bob token as alice: ${code}`] : [],
    };
  },
  'UserService.ListTopicSubscribers': async (ctx) => {
    // Topics are the service's; a topic lists its own members only.
    const { alice, bob } = await ensureUsers(ctx);
    const topic = `iso.${Math.random().toString(36).slice(2, 10)}`;
    await call(ctx.users, UserService, 'SubscribeTopic', { topic: `${topic}.other`, userIds: [bob] }, ctx.a);
    await call(ctx.users, UserService, 'SubscribeTopic', { topic, userIds: [alice] }, ctx.a);
    const page = await call<{ userIds: string[] }>(
      ctx.users,
      UserService,
      'ListTopicSubscribers',
      { topic },
      ctx.a,
    );
    return {
      attempts: 1,
      leaks: page.userIds.join() !== alice ? ['ListTopicSubscribers shows another topic'] : [],
    };
  },
  'UserService.GetPreferences': async (ctx) => {
    const { alice } = await ensureUsers(ctx);
    const got = await call<{ preferences: unknown[] }>(
      ctx.users,
      UserService,
      'GetPreferences',
      { userId: alice },
      ctx.a,
    );
    return {
      attempts: 1,
      leaks: JSON.stringify(got).includes('bob') ? ['GetPreferences of alice shows bob'] : [],
    };
  },
  'UserService.UpdatePreferences': async (ctx) => {
    const { alice, bob } = await ensureUsers(ctx);
    const before = await call(ctx.users, UserService, 'GetPreferences', { userId: bob }, ctx.a);
    const prefs = (
      before as { preferences: { category: string; channel: string; required: boolean }[] }
    ).preferences
      .filter((p) => !p.required)
      .map((p) => ({ category: p.category, channel: p.channel, enabled: false }));
    await codeOf(
      call(ctx.users, UserService, 'UpdatePreferences', { userId: alice, preferences: prefs }, ctx.a),
    );
    const after = await call(ctx.users, UserService, 'GetPreferences', { userId: bob }, ctx.a);
    return {
      attempts: 1,
      leaks:
        JSON.stringify(after) !== JSON.stringify(before) ? ['UpdatePreferences of alice changed bob'] : [],
    };
  },
};

/**
 * Methods that act on a user's or a caller's data: their request names a user or a record, or they
 * read (Get, List, Count, Watch). Each must have a probe. The suppression list is one list for the
 * whole service by design (delivery/README.md: a recipient who opted out did so for every caller),
 * so its methods are not per-caller and have no probe: see the README of this folder. Templates are
 * one catalog of the service too (templates/README.md): no user's or caller's data.
 */
/** The notify category the isolation process configures (secret-pair.ts). */
const ISO_CATEGORY = 'iso';

const SHARED_BY_DESIGN = new Set([
  'NotificationService.ListSuppressions',
  'TemplateService.GetTemplate',
  'TemplateService.ListTemplates',
  'TemplateService.DeleteTemplate',
  // Replies to the service's own numbers belong to no caller: the `sms:inbound` scope is the gate
  // (its refusal is in the scope table's test), and a holder reads every reply by design.
  'InboundSmsService.WatchInboundSms',
]);

function needsProbe(method: DescMethod): boolean {
  const fields = method.input.fields.map((f) => f.name);
  const names = ['user_id', 'id', 'message_id', 'delivery_id', 'idempotency_key'];
  return (
    fields.some((f) => names.includes(f)) || /^(Get|List|Count|Watch|Mark|Delete|Clear)/.test(method.name)
  );
}

describe('isolation between users and between callers', () => {
  test("no method reaches another user's messages or another caller's deliveries", async () => {
    const ctx: Ctx = {
      inbox: grpcClient(InboxService, `127.0.0.1:${pair.notification.grpcPort}`),
      notifications: grpcClient(NotificationService, `127.0.0.1:${pair.notification.grpcPort}`),
      users: grpcClient(UserService, `127.0.0.1:${pair.notification.grpcPort}`),
      notify: grpcClient(NotifyService, `127.0.0.1:${pair.notification.grpcPort}`),
      a: bearer(pair.notificationTokens[0]),
      b: bearer(pair.notificationTokens[1]),
    };
    const required = NOTIFICATION_SERVICES.flatMap((s) =>
      s.methods.filter(needsProbe).map((m) => `${s.name}.${m.name}`),
    ).filter((m) => !SHARED_BY_DESIGN.has(m));
    const unprobed = required.filter((m) => !(m in PROBES) && !(m in USER_PROBES));
    let attempts = 0;
    const leaks: string[] = [];
    try {
      for (const [name, probe] of Object.entries({ ...PROBES, ...USER_PROBES })) {
        const r = await probe(ctx);
        attempts += r.attempts;
        leaks.push(...r.leaks.map((l) => `${name}: ${l}`));
      }
      // The admin routes act for the JWT's `sub` only.
      const base = `http://127.0.0.1:${pair.notification.httpPort}/admin/notifications`;
      const asAlice = { authorization: `Bearer ${await adminJwt('alice')}` };
      const b = await sendTo(ctx, 'bob', 'bob admin');
      const page = JSON.parse((await httpCall(`${base}/inbox`, { headers: asAlice })).body) as {
        notifications: { id: string }[];
      };
      attempts++;
      if (page.notifications.some((n) => n.id === b.id)) leaks.push('admin GET inbox shows bob');
      attempts++;
      const mark = await httpCall(`${base}/read/${b.id}`, { method: 'POST', headers: asAlice });
      if (mark.status !== 404) leaks.push(`admin POST read of bob: ${mark.status}`);
      attempts++;
      await httpCall(`${base}/read-all`, { method: 'POST', headers: asAlice });
      const bob = (await inboxOf(ctx, 'bob')).find((x) => x.id === b.id);
      if (bob?.read !== false) leaks.push('admin read-all or read reached bob');
      // The admin stream of alice: bob's event never arrives, alice's does.
      attempts++;
      const controller = new AbortController();
      const res = await fetch(`${base}/stream`, { headers: asAlice, signal: controller.signal });
      const reader = res.body!.getReader();
      let text = '';
      const readUntil = async (needle: string) =>
        until(
          `SSE ${needle}`,
          async () => {
            const { value } = await reader.read();
            text += Buffer.from(value ?? new Uint8Array()).toString('utf8');
            return text.includes(needle) ? true : undefined;
          },
          15_000,
        );
      await readUntil(': connected');
      const b2 = await sendTo(ctx, 'bob', 'bob streamed');
      const a2 = await sendTo(ctx, 'alice', 'alice streamed');
      await readUntil(a2.id);
      controller.abort();
      if (text.includes(b2.id) || text.includes('bob')) leaks.push('admin stream shows bob');
    } finally {
      ctx.inbox.close();
      ctx.notifications.close();
      ctx.users.close();
      ctx.notify.close();
    }
    recordFigures({
      section: 'isolation-users',
      title: 'Isolation: users and API callers',
      kind: 'isolation',
      figures: [
        reported(
          'methods probed cross-user / cross-caller',
          Object.keys({ ...PROBES, ...USER_PROBES }).length,
        ),
        exactly('methods with user or record ids left unprobed', unprobed.length, 0),
        atLeast('cross-user and cross-caller attempts', attempts, Object.keys(PROBES).length),
        exactly('leaks', leaks.length, 0),
      ],
    });
    expect(unprobed).toEqual([]);
    expect(leaks).toEqual([]);
  }, 180_000);
});

// ---------------------------------------------------------------------------------------------
// Secrets never in output

describe('secrets never in output', () => {
  test('no configured secret appears in any log line, error, /health, /metrics or /status.json', async () => {
    // Every secret key of both schemas is configured (a new secret key fails here until it is).
    const configured = new Set(pair.secrets.map((s) => s.key));
    const uncovered = allSecretKeys().filter((k) => !configured.has(k));

    // Traffic that makes everything log: sends failing at every refusing provider, alerts failing at
    // their webhook and their notification channel, captured exceptions, bad calls.
    const n = grpcClient(NotificationService, `127.0.0.1:${pair.notification.grpcPort}`);
    const m = grpcClient(MonitorService, `127.0.0.1:${pair.monitor.grpcPort}`);
    const a = bearer(pair.notificationTokens[0]);
    const mon = bearer(pair.monitorToken);
    try {
      const { backends } = pair;
      await call(
        n,
        NotificationService,
        'SendSms',
        { to: '+15551239999', body: 'code 1', backend: backends.sms },
        a,
      );
      for (const backend of [backends.smtp, backends.httpApi]) {
        await call(
          n,
          NotificationService,
          'SendEmail',
          { to: ['jane@iso.example.com'], subject: 'hi', text: 'x', backend },
          a,
        );
      }
      for (const backend of [backends.fcmV1, backends.fcmLegacy, backends.apns]) {
        await call(
          n,
          NotificationService,
          'SendPush',
          { message: { deviceToken: 'a1b2c3d4e5f60718293a4b5c6d7e8f90', body: 'p' }, backend },
          a,
        );
      }
      await codeOf(call(n, NotificationService, 'SendEmail', { to: ['bob@'], subject: '' }, a));
      await call(
        m,
        MonitorService,
        'SendAlert',
        {
          title: 'iso alert',
          message: 'x',
          severity: 'critical',
          sourceService: 'iso',
          context: { tier: 'P0_PAGE' },
        },
        mon,
      );
      await call(
        m,
        MonitorService,
        'CaptureException',
        { type: 'IsoError', message: 'boom', sourceService: 'iso' },
        mon,
      );
      // Wait until each refusing peer has been reached: the failures are now in the logs.
      const seen = (peer: string, test: (r: { path: string; headers: Record<string, unknown> }) => boolean) =>
        pair.received.some((r) => r.peer === peer && test(r));
      await until('every provider tried and refused', () =>
        seen('smtp', () => true) &&
        seen('http', (r) => r.path.includes('/Messages')) &&
        seen('http', (r) => r.path.includes('/v3/mail/send')) &&
        seen('http', (r) => r.path === '/token') &&
        seen('http', (r) => r.path.startsWith('/hooks/')) &&
        seen('h2', (r) => r.path.includes('/fcm/send')) &&
        seen('h2', (r) => r.path.startsWith('/3/device/')) &&
        pair.notification.logs.some((l) => l.includes('UNAUTHENTICATED') || l.includes('unauthenticated'))
          ? true
          : undefined,
      );
      await until('the deliveries ended', async () => {
        const list = await call<{ deliveries: { status: number }[] }>(
          n,
          NotificationService,
          'ListDeliveries',
          { pageSize: 500 },
          a,
        );
        // 1 PENDING, 2 RETRYING: wait until none is still in flight.
        return list.deliveries.every((d) => d.status !== 1 && d.status !== 2) ? true : undefined;
      });
    } finally {
      n.close();
      m.close();
    }

    // The endpoints, read with their tokens.
    const nBase = `http://127.0.0.1:${pair.notification.httpPort}`;
    const mBase = `http://127.0.0.1:${pair.monitor.httpPort}`;
    const endpoints = [
      await httpCall(`${nBase}/health`, { headers: bearer(pair.healthTokens.notification) }),
      await httpCall(`${nBase}/metrics`, { headers: bearer(pair.metricsTokens.notification) }),
      await httpCall(`${mBase}/health`, { headers: bearer(pair.healthTokens.monitor) }),
      await httpCall(`${mBase}/metrics`, { headers: bearer(pair.metricsTokens.monitor) }),
      await httpCall(`${mBase}/status.json`, { headers: bearer(pair.webToken) }),
    ];
    for (const e of endpoints) expect(e.status).toBeLessThan(500 + 4); // 503 is a health answer, not a failure

    // Shutdown logs count too.
    await pair.close();
    const outputs: [string, string[]][] = [
      ['notification log', pair.notification.logs],
      ['monitor log', pair.monitor.logs],
      ['answers and endpoint bodies', answers],
    ];
    const hits: string[] = [];
    let linesScanned = 0;
    for (const [where, lines] of outputs) {
      linesScanned += lines.length;
      for (const line of lines) {
        for (const s of pair.secrets) {
          if (s.needles.some((needle) => line.includes(needle)))
            hits.push(`${s.key} in ${where}: ${line.slice(0, 200)}`);
        }
      }
    }
    // The secrets were really in use: the peers received the credentials they carry.
    const peerText = pair.received.map((r) => JSON.stringify(r.headers) + r.body + r.path).join('\n');
    const used = pair.secrets.filter((s) => s.needles.some((needle) => peerText.includes(needle))).length;

    recordFigures({
      section: 'isolation-secrets',
      title: 'Secrets: never in logs, errors, /health, /metrics, /status.json',
      kind: 'isolation',
      figures: [
        exactly('secret keys in the schemas left unconfigured', uncovered.length, 0),
        reported('secret values scanned for', pair.secrets.length),
        reported('secret values seen in use by the peers', used),
        reported('log lines, errors and bodies scanned', linesScanned),
        exactly('hits', hits.length, 0),
      ],
    });
    expect(uncovered).toEqual([]);
    expect(hits).toEqual([]);
    expect(used).toBeGreaterThanOrEqual(6);
  }, 240_000);
});
