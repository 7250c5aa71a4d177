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
import { create, type DescMessage, type DescMethod, type DescService } from '@bufbuild/protobuf';
import { ConnectError, createClient, type Client } from '@connectrpc/connect';
import { createConnectTransport } from '@connectrpc/connect-node';
import * as grpc from '@grpc/grpc-js';
import pino from 'pino';

import { loadJose } from '../../../shared/auth/jose';
import { InboxService } from '../../../shared/gen/svc/notification/v1/inbox_pb';
import { NotificationService } from '../../../shared/gen/svc/notification/v1/notification_pb';
import { MonitorService } from '../../../shared/gen/svc/monitor/v1/monitor_pb';
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
async function connectCode(baseUrl: string, service: DescService, method: DescMethod, headers: Record<string, string>) {
  const transport = createConnectTransport({ baseUrl, httpVersion: '1.1', useBinaryFormat: false });
  const client = createClient(service, transport) as unknown as AnyClient;
  const input = create(method.input);
  try {
    if (method.methodKind === 'unary') {
      await (client[method.localName]!(input, { headers, timeoutMs: CALL_DEADLINE_MS }) as Promise<unknown>);
    } else {
      const stream = client[method.localName]!(input, { headers, timeoutMs: STREAM_PROBE_MS }) as AsyncIterable<unknown>;
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
                if (code !== UNAUTHENTICATED) failures.push(`${proc.name} ${port} ${method.name} (${what}): ${code}`);
              }
            }
            // The right token passes auth (the answer may be anything else: the request is empty).
            for (const [port, code] of [
              ['grpc', await grpcCode(client, method, bearer(proc.token))],
              ['http', await connectCode(proc.baseUrl, service, method, bearer(proc.token))],
            ] as const) {
              if (code === UNAUTHENTICATED) failures.push(`${proc.name} ${port} ${method.name}: valid token refused`);
            }
          }
        } finally {
          client.close();
        }
      }
    }

    // Exactly the standard health and reflection services answer without a token.
    const unexpectedOpen: string[] = [];
    for (const proc of processes()) {
      const listed = await listServicesByReflection(proc.grpcAddress); // reflection, no token
      const ours = new Set(proc.services.map((s) => s.typeName));
      const open = listed.filter((s) => !ours.has(s));
      expect(open).toContain('grpc.health.v1.Health');
      unexpectedOpen.push(...open.filter((s) => !PUBLIC_SERVICES.includes(s)).map((s) => `${proc.name} ${s}`));
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
