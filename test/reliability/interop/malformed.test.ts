/**
 * Issue 16, interop: malformed protobuf bytes to every method of both started processes (tokens on),
 * enumerated from the descriptors in test/reliability/surfaces.ts, on all three protocols: gRPC (a
 * grpc-js client with an identity serializer, so the bytes go out as given), Connect binary and
 * gRPC-Web. Inputs come from each request message's own descriptor (malformed-inputs.ts): truncated
 * varints, wrong and illegal wire types, bad lengths, invalid UTF-8 in every string field, nesting far
 * past the recursion limit. Every one is INVALID_ARGUMENT with the kit's generic message (gRPC) or
 * 400 `invalid_argument` (Connect), never INTERNAL, and both processes are alive and serving after.
 */
import * as grpc from '@grpc/grpc-js';
import type { DescMethod, DescService } from '@bufbuild/protobuf';

import { MALFORMED_MESSAGE } from '../../../shared/rpc/errors';
import { healthCheck, healthClient } from '../../support/grpc-clients';
import { exactly, recordFigures, reported, atLeast } from '../results';
import { malformedInputs } from './malformed-inputs';
import { AUTHORIZATION, serverFaults, startTargets, type Target, type Targets } from './processes';

const PROTOCOLS = ['grpc', 'connect', 'grpcweb'] as const;
type Protocol = (typeof PROTOCOLS)[number];

/** What came back, reduced to a comparable shape: the gRPC status code, or the Connect code name. */
interface Answer {
  readonly code: string;
  readonly message: string;
}

/** Requests in flight at once per process. */
const CONCURRENCY = 8;
/** A deadline on each call: a hang becomes a DEADLINE_EXCEEDED answer, which fails the test. */
const DEADLINE_MS = 20_000;

/** A five-byte envelope (flags 0, big-endian length) around `body`: Connect streams and gRPC-Web. */
function envelope(body: Buffer): Buffer {
  const head = Buffer.alloc(5);
  head.writeUInt32BE(body.length, 1);
  return Buffer.concat([head, body]);
}

/** The envelopes of a Connect-streaming or gRPC-Web response body. */
function envelopes(bytes: Buffer): Array<{ flags: number; data: Buffer }> {
  const out: Array<{ flags: number; data: Buffer }> = [];
  for (let at = 0; at + 5 <= bytes.length;) {
    const size = bytes.readUInt32BE(at + 1);
    out.push({ flags: bytes[at]!, data: bytes.subarray(at + 5, at + 5 + size) });
    at += 5 + size;
  }
  return out;
}

const grpcName = (code: number): string => (grpc.status[code] ?? String(code)).toLowerCase();

function overGrpc(client: grpc.Client, path: string, streaming: boolean, body: Buffer): Promise<Answer> {
  const md = new grpc.Metadata();
  md.set('authorization', AUTHORIZATION);
  const options = { deadline: Date.now() + DEADLINE_MS };
  const identity = (b: Buffer): Buffer => b;
  return new Promise((resolve) => {
    const done = (s: grpc.StatusObject): void => resolve({ code: grpcName(s.code), message: s.details });
    if (streaming) {
      const call = client.makeServerStreamRequest(path, identity, identity, body, md, options);
      call.on('data', () => undefined);
      call.on('error', () => undefined);
      call.on('status', done);
    } else {
      const call = client.makeUnaryRequest(path, identity, identity, body, md, options, () => undefined);
      call.on('status', done);
    }
  });
}

async function overHttp(
  t: Target,
  protocol: 'connect' | 'grpcweb',
  path: string,
  streaming: boolean,
  body: Buffer,
): Promise<Answer> {
  const contentType =
    protocol === 'grpcweb'
      ? 'application/grpc-web+proto'
      : streaming
        ? 'application/connect+proto'
        : 'application/proto';
  const res = await fetch(`${t.baseUrl}/${path}`, {
    method: 'POST',
    headers: { 'content-type': contentType, authorization: AUTHORIZATION },
    body: protocol === 'connect' && !streaming ? body : envelope(body),
    signal: AbortSignal.timeout(DEADLINE_MS),
  });
  const bytes = Buffer.from(await res.arrayBuffer());
  if (protocol === 'grpcweb') {
    // The status is in the headers (a trailers-only answer) or in the trailer envelope (flag 0x80).
    const trailer =
      envelopes(bytes)
        .find((e) => e.flags & 0x80)
        ?.data.toString('utf8') ?? '';
    const status = res.headers.get('grpc-status') ?? /grpc-status:\s*(\d+)/i.exec(trailer)?.[1];
    const message =
      res.headers.get('grpc-message') ?? /grpc-message:\s*(.*)/i.exec(trailer)?.[1]?.trim() ?? '';
    return {
      code: status === undefined || status === null ? `http ${res.status}` : grpcName(Number(status)),
      message: decodeURIComponent(message),
    };
  }
  const json = streaming
    ? (
        JSON.parse(
          envelopes(bytes)
            .find((e) => e.flags & 0b10)
            ?.data.toString('utf8') ?? '{}',
        ) as { error?: Answer }
      ).error
    : res.status === 200
      ? { code: 'ok', message: '' }
      : (JSON.parse(bytes.toString('utf8') || '{}') as Answer);
  // A unary Connect error must come with HTTP 400 for invalid_argument; keep the status in the answer.
  const code = json?.code ?? 'ok';
  return {
    code:
      !streaming && code === 'invalid_argument' && res.status !== 400 ? `${code} (http ${res.status})` : code,
    message: json?.message ?? '',
  };
}

interface Tried {
  readonly target: string;
  readonly path: string;
  readonly input: string;
  readonly protocol: Protocol;
  readonly answer: Answer;
}

/** Runs `fn` over `items`, `width` at a time. */
async function pool<T>(items: readonly T[], width: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) await fn(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(width, items.length) }, worker));
}

let targets: Targets;
const tried: Tried[] = [];
const alive: string[] = [];

beforeAll(async () => {
  targets = await startTargets();
});
afterAll(async () => {
  await targets?.stop();
});

describe.each([['notification'], ['monitor']])('the %s process', (name) => {
  test('malformed bytes to every method, on gRPC, Connect and gRPC-Web, are INVALID_ARGUMENT with a generic message', async () => {
    const t = targets.all.find((x) => x.name === name)!;
    const client = new grpc.Client(t.grpcAddress, grpc.credentials.createInsecure());
    const jobs = t.services.flatMap((service: DescService) =>
      service.methods.flatMap((method: DescMethod) =>
        malformedInputs(method.input).flatMap((input) =>
          PROTOCOLS.map((protocol) => ({
            path: `${service.typeName}/${method.name}`,
            method,
            input,
            protocol,
          })),
        ),
      ),
    );
    try {
      await pool(jobs, CONCURRENCY, async ({ path, method, input, protocol }) => {
        const streaming = method.methodKind === 'server_streaming';
        const answer =
          protocol === 'grpc'
            ? await overGrpc(client, `/${path}`, streaming, input.body)
            : await overHttp(t, protocol, path, streaming, input.body);
        tried.push({ target: name, path, input: input.name, protocol, answer });
      });
    } finally {
      client.close();
    }
    const wrong = tried
      .filter((x) => x.target === name)
      .filter((x) => x.answer.code !== 'invalid_argument' || x.answer.message !== MALFORMED_MESSAGE)
      .map((x) => `${x.protocol} ${x.path} ${x.input}: ${x.answer.code} ${JSON.stringify(x.answer.message)}`);
    expect(wrong).toEqual([]);
  });

  test('is alive and serving after all of it', async () => {
    const t = targets.all.find((x) => x.name === name)!;
    expect(t.proc.child.exitCode).toBeNull();
    const health = healthClient(t.grpcAddress);
    try {
      expect(await healthCheck(health)).toBe('SERVING');
    } finally {
      health.close();
    }
    alive.push(name);
  });
});

test('figures: malformed inputs tried, answers by code, INTERNAL count', async () => {
  const faultsCounted = (await Promise.all(targets.all.map(serverFaults))).reduce((a, b) => a + b, 0);
  const seen = (code: string) => tried.filter((x) => x.answer.code === code).length;
  const methods = targets.all.flatMap((t) => t.services.flatMap((s) => s.methods));
  const codes = new Map<string, number>();
  for (const x of tried) codes.set(x.answer.code, (codes.get(x.answer.code) ?? 0) + 1);
  const perProtocol = PROTOCOLS.map((p) =>
    atLeast(
      `methods sent malformed bytes over ${p}`,
      new Set(tried.filter((x) => x.protocol === p).map((x) => `${x.target} ${x.path}`)).size,
      methods.length,
    ),
  );
  const figures = [
    ...perProtocol,
    reported(
      'distinct malformed inputs (per method, summed)',
      new Set(tried.map((x) => `${x.target} ${x.path} ${x.input}`)).size,
    ),
    reported('requests sent', tried.length),
    ...[...codes].sort().map(([code, n]) => reported(`answers ${code}`, n)),
    exactly('answers other than INVALID_ARGUMENT', tried.length - seen('invalid_argument'), 0),
    exactly('INTERNAL or UNKNOWN answers seen', seen('internal') + seen('unknown'), 0),
    exactly('INTERNAL or UNKNOWN answers counted by the processes', faultsCounted, 0),
    exactly('processes alive and SERVING after', alive.length, 2),
  ];
  recordFigures({
    section: 'interop-malformed',
    title: 'Interop: malformed protobuf bytes to every method',
    kind: 'interop',
    figures,
  });
  expect(figures.filter((f) => !f.ok)).toEqual([]);
});
