/**
 * Bad input at the OTLP endpoints, over OTLP/HTTP and over gRPC/Connect: bad ids, an end before the
 * start, too many spans, oversize and garbage bodies, gzip bombs, wrong content types and encodings,
 * missing or wrong bearer tokens. Every refusal has the right status and a reason, and nothing of a
 * refused request is stored.
 */
import { request as httpRequest } from 'node:http';
import { gzipSync } from 'node:zlib';
import * as grpc from '@grpc/grpc-js';
import { create, toBinary, type MessageInitShape } from '@bufbuild/protobuf';
import { BinaryReader } from '@bufbuild/protobuf/wire';
import { Code, ConnectError, createClient } from '@connectrpc/connect';
import { createConnectTransport } from '@connectrpc/connect-node';
import {
  ExportTraceServiceRequestSchema,
  TraceService,
} from '../../../shared/gen/opentelemetry/proto/collector/trace/v1/trace_service_pb';
import type { SpanSchema } from '../../../shared/gen/opentelemetry/proto/trace/v1/trace_pb';
import { grpcClient, unary } from '../../support/grpc-clients';
import { startOtlpServer, type OtlpTestServer } from './support';

const TOKEN = 'otlp-secret';
const AUTH = { authorization: `Bearer ${TOKEN}` };
const MAX = 64 * 1024;

let server: OtlpTestServer;
beforeAll(async () => {
  server = await startOtlpServer({ apiTokens: [TOKEN], maxRequestBytes: MAX });
});
afterAll(() => server.close());

let seq = 0;
function freshTraceHex(): string {
  seq++;
  return seq.toString(16).padStart(32, '7');
}
const hexBytes = (hex: string) => Buffer.from(hex, 'hex');

type OtlpSpanInit = MessageInitShape<typeof SpanSchema>;

function otlpSpan(traceHex: string, n: number, extra: Record<string, unknown> = {}): OtlpSpanInit {
  return {
    traceId: hexBytes(traceHex),
    spanId: hexBytes(n.toString(16).padStart(16, '0')),
    name: `op-${n}`,
    startTimeUnixNano: 1_700_000_000_000_000_000n + BigInt(n),
    endTimeUnixNano: 1_700_000_000_100_000_000n + BigInt(n),
    ...extra,
  } as OtlpSpanInit;
}

function request(spans: MessageInitShape<typeof SpanSchema>[]) {
  return create(ExportTraceServiceRequestSchema, {
    resourceSpans: [
      {
        resource: {
          attributes: [{ key: 'service.name', value: { value: { case: 'stringValue', value: 'shop' } } }],
        },
        scopeSpans: [{ spans }],
      },
    ],
  });
}

const protobufBody = (spans: MessageInitShape<typeof SpanSchema>[]) =>
  toBinary(ExportTraceServiceRequestSchema, request(spans));

/** OTLP JSON as the JS exporter writes it: hex ids, int64 times as strings, enums as numbers. */
function jsonBody(traceHex: string, spans: Array<Record<string, unknown>>): string {
  return JSON.stringify({
    resourceSpans: [
      {
        resource: { attributes: [{ key: 'service.name', value: { stringValue: 'shop-json' } }] },
        scopeSpans: [
          { scope: { name: 's' }, spans: spans.map((s) => ({ traceId: traceHex, kind: 2, ...s })) },
        ],
      },
    ],
  });
}

async function post(
  path: string,
  body: Uint8Array | string,
  headers: Record<string, string>,
): Promise<{ status: number; type: string | null; bytes: Buffer }> {
  const res = await fetch(`${server.baseUrl}${path}`, { method: 'POST', body, headers });
  return {
    status: res.status,
    type: res.headers.get('content-type'),
    bytes: Buffer.from(await res.arrayBuffer()),
  };
}

/** google.rpc.Status from its two fields. */
function decodeStatus(bytes: Uint8Array): { code: number; message: string } {
  const reader = new BinaryReader(bytes);
  const out = { code: 0, message: '' };
  while (reader.pos < reader.len) {
    const [field] = reader.tag();
    if (field === 1) out.code = reader.int32();
    else if (field === 2) out.message = reader.string();
    else throw new Error(`unexpected field ${field}`);
  }
  return out;
}

const PROTO = { 'content-type': 'application/x-protobuf', ...AUTH };
const JSON_TYPE = { 'content-type': 'application/json', ...AUTH };
const stored = (traceHex: string) => server.traces.store.getTrace(traceHex).length;

describe('OTLP/HTTP', () => {
  it('stores protobuf spans and answers the empty response in protobuf', async () => {
    const t = freshTraceHex();
    const res = await post('/v1/traces', protobufBody([otlpSpan(t, 1), otlpSpan(t, 2)]), PROTO);
    expect(res).toMatchObject({ status: 200, type: 'application/x-protobuf' });
    expect(res.bytes.byteLength).toBe(0);
    expect(server.traces.store.getTrace(t).map((s) => s.serviceName)).toEqual(['shop', 'shop']);
  });

  it('stores OTLP JSON with hex ids (either case) and string or number times, answering JSON', async () => {
    const t = freshTraceHex();
    const body = jsonBody(t.toUpperCase(), [
      {
        spanId: '00000000000000AA',
        name: 'a',
        startTimeUnixNano: '1700000000000000001',
        endTimeUnixNano: '1700000000000000002',
      },
      {
        spanId: '00000000000000bb',
        parentSpanId: '00000000000000aa',
        name: 'b',
        startTimeUnixNano: 1700000000000,
        endTimeUnixNano: 1700000000001,
        status: { code: 2, message: 'bad' },
      },
    ]);
    const res = await post('/v1/traces', body, {
      'content-type': 'application/json; charset=utf-8',
      ...AUTH,
    });
    expect(res.status).toBe(200);
    expect(res.type).toBe('application/json');
    expect(JSON.parse(res.bytes.toString())).toEqual({});
    const spans = server.traces.store.getTrace(t);
    expect(spans.map((s) => [s.spanId, s.parentSpanId, s.kind, s.statusCode])).toEqual([
      ['00000000000000bb', '00000000000000aa', 'server', 'error'],
      ['00000000000000aa', '', 'server', 'unset'],
    ]);
    expect(spans[1]!.startNs).toBe(1_700_000_000_000_000_001n);
  });

  it('accepts a gzip body', async () => {
    const t = freshTraceHex();
    const res = await post('/v1/traces', gzipSync(protobufBody([otlpSpan(t, 1)])), {
      ...PROTO,
      'content-encoding': 'gzip',
    });
    expect(res.status).toBe(200);
    expect(stored(t)).toBe(1);
  });

  it('refuses a span with an all-zero trace id (protobuf) with 400 and a Status naming it', async () => {
    const t = freshTraceHex();
    const res = await post('/v1/traces', protobufBody([otlpSpan(t, 1), otlpSpan('0'.repeat(32), 2)]), PROTO);
    expect(res.status).toBe(400);
    expect(res.type).toBe('application/x-protobuf');
    const status = decodeStatus(res.bytes);
    expect(status.code).toBe(3);
    expect(status.message).toMatch(/resource_spans\[0\]\.scope_spans\[0\]\.spans\[1\]: trace_id/);
    expect(stored(t)).toBe(0);
  });

  it('refuses a span ending before it starts (JSON) with 400 naming it, storing none of the request', async () => {
    const t = freshTraceHex();
    const body = jsonBody(t, [
      { spanId: '0000000000000001', name: 'ok', startTimeUnixNano: '10', endTimeUnixNano: '20' },
      { spanId: '0000000000000002', name: 'bad', startTimeUnixNano: '30', endTimeUnixNano: '20' },
    ]);
    const res = await post('/v1/traces', body, JSON_TYPE);
    expect(res.status).toBe(400);
    expect(JSON.parse(res.bytes.toString())).toEqual({
      error: {
        code: 'invalid_argument',
        message: 'resource_spans[0].scope_spans[0].spans[1]: end_time is before start_time',
      },
    });
    expect(stored(t)).toBe(0);
  });

  it('refuses a short span id and a missing start', async () => {
    const t = freshTraceHex();
    const short = await post(
      '/v1/traces',
      protobufBody([otlpSpan(t, 1, { spanId: hexBytes('abcd') })]),
      PROTO,
    );
    expect(decodeStatus(short.bytes).message).toMatch(/span_id must be 16 lowercase hex/);
    const noStart = await post(
      '/v1/traces',
      protobufBody([otlpSpan(t, 1, { startTimeUnixNano: 0n })]),
      PROTO,
    );
    expect(decodeStatus(noStart.bytes).message).toMatch(/start_time is required/);
    expect(stored(t)).toBe(0);
  });

  it('refuses base64 (not hex) ids in OTLP JSON', async () => {
    const t = freshTraceHex();
    const body = jsonBody(Buffer.from(t, 'hex').toString('base64'), [
      { spanId: '0000000000000001', name: 'x', startTimeUnixNano: '1', endTimeUnixNano: '2' },
    ]);
    const res = await post('/v1/traces', body, JSON_TYPE);
    expect(res.status).toBe(400);
    expect(JSON.parse(res.bytes.toString()).error.message).toMatch(/traceId must be a hex string/);
  });

  it.each([
    [
      'garbage bytes as protobuf',
      Buffer.from([0xff, 0xff, 0xff, 0x01, 0x02]),
      PROTO,
      /not a valid .*ExportTraceServiceRequest in protobuf/,
    ],
    ['text that is not JSON', 'not json{', JSON_TYPE, /not valid UTF-8 JSON/],
    ['a JSON array', '[1,2]', JSON_TYPE, /must be a JSON object/],
    ['a field of the wrong type', '{"resourceSpans": 7}', JSON_TYPE, /not a valid .* in OTLP JSON/],
    ['invalid UTF-8', Buffer.from([0x7b, 0xc3, 0x28, 0x7d]), JSON_TYPE, /UTF-8/],
  ])('answers %s with 400 and a reason', async (_, body, headers, reason) => {
    const res = await post('/v1/traces', body, headers);
    expect(res.status).toBe(400);
    const message =
      headers === PROTO ? decodeStatus(res.bytes).message : JSON.parse(res.bytes.toString()).error.message;
    expect(message).toMatch(reason);
  });

  it('answers 400 for a body that is not valid gzip', async () => {
    const res = await post('/v1/traces', Buffer.from('not gzip at all'), {
      ...PROTO,
      'content-encoding': 'gzip',
    });
    expect(res.status).toBe(400);
    expect(decodeStatus(res.bytes).message).toMatch(/not valid gzip/);
  });

  it('answers 415 for another content type and for another content encoding', async () => {
    const type = await post('/v1/traces', 'hello', { 'content-type': 'text/plain', ...AUTH });
    expect(type.status).toBe(415);
    expect(JSON.parse(type.bytes.toString()).error.message).toMatch(
      /application\/x-protobuf or application\/json/,
    );
    const none = await post('/v1/metrics', 'hello', AUTH);
    expect(none.status).toBe(415);
    const encoding = await post('/v1/traces', protobufBody([]), { ...PROTO, 'content-encoding': 'br' });
    expect(encoding.status).toBe(415);
    expect(decodeStatus(encoding.bytes).message).toMatch(/Content-Encoding/);
  });

  it('answers 413 for a body over the limit, compressed or once inflated (a gzip bomb)', async () => {
    const big = await post('/v1/traces', Buffer.alloc(MAX + 1), PROTO);
    expect(big.status).toBe(413);
    const bomb = gzipSync(Buffer.alloc(MAX * 16));
    expect(bomb.byteLength).toBeLessThan(MAX);
    const inflated = await post('/v1/traces', bomb, { ...PROTO, 'content-encoding': 'gzip' });
    expect(inflated.status).toBe(413);
    expect(decodeStatus(inflated.bytes).message).toMatch(new RegExp(`larger than ${MAX} bytes`));
  });

  it('accepts a body of exactly the limit (then judges its content)', async () => {
    // MAX bytes of zeros: within the limit, so it is read and decoded (and does not decode).
    const res = await post('/v1/traces', Buffer.alloc(MAX), PROTO);
    expect(res.status).toBe(400);
    expect(decodeStatus(res.bytes).message).toMatch(/not a valid/);
  });

  it('answers 413 to a chunked body (no Content-Length) once it passes the limit', async () => {
    const status = await new Promise<number>((resolve, reject) => {
      const req = httpRequest(`${server.baseUrl}/v1/traces`, { method: 'POST', headers: PROTO }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      // The server may close the connection before all of it is sent: that is the point.
      req.on('error', (err) => (req.destroyed ? undefined : reject(err)));
      for (let i = 0; i < 8; i++) req.write(Buffer.alloc(MAX / 4));
      req.end();
    });
    expect(status).toBe(413);
  });

  it('asks for the RPC bearer token on both paths: 401 without it or with a wrong one', async () => {
    const t = freshTraceHex();
    for (const path of ['/v1/traces', '/v1/metrics']) {
      const missing = await post(path, protobufBody([otlpSpan(t, 1)]), {
        'content-type': 'application/x-protobuf',
      });
      expect(missing.status).toBe(401);
      const wrong = await post(path, protobufBody([otlpSpan(t, 1)]), {
        'content-type': 'application/x-protobuf',
        authorization: 'Bearer nope',
      });
      expect(wrong.status).toBe(401);
      expect(JSON.parse(wrong.bytes.toString()).error.code).toBe('unauthenticated');
    }
    expect(stored(t)).toBe(0);
  });

  it('answers 405 to GET', async () => {
    const res = await fetch(`${server.baseUrl}/v1/traces`, { headers: AUTH });
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('POST');
  });

  it('reports rejected metric data points on /metrics while answering the export as accepted', async () => {
    server.sink.reject = 1;
    try {
      const res = await post(
        '/v1/metrics',
        '{"resourceMetrics":[{"scopeMetrics":[{"metrics":[{"name":"m","gauge":{"dataPoints":[{"asDouble":1},{"asInt":"2"}]}}]}]}]}',
        JSON_TYPE,
      );
      expect(res.status).toBe(200);
      expect(JSON.parse(res.bytes.toString())).toEqual({});
    } finally {
      server.sink.reject = 0;
    }
    const text = await server.registry.metrics();
    expect(text).toMatch(/^monitor_otlp_metric_points_rejected_total 1$/m);
  });
});

describe('OTLP over gRPC and Connect', () => {
  const withToken = { metadata: AUTH };

  it('refuses a call without the bearer token with UNAUTHENTICATED', async () => {
    const client = grpcClient(TraceService, server.grpcAddress);
    try {
      await expect(unary(client, 'export', request([]))).rejects.toMatchObject({
        code: grpc.status.UNAUTHENTICATED,
      });
    } finally {
      client.close();
    }
  });

  it('refuses bad ids and an end before the start with INVALID_ARGUMENT naming the span', async () => {
    const client = grpcClient(TraceService, server.grpcAddress);
    const t = freshTraceHex();
    try {
      const cases: Array<[MessageInitShape<typeof SpanSchema>, RegExp]> = [
        [otlpSpan(t, 1, { traceId: hexBytes('ab') }), /spans\[0\]: trace_id/],
        [otlpSpan(t, 1, { parentSpanId: hexBytes('00'.repeat(8)) }), /spans\[0\]: parent_span_id/],
        [otlpSpan(t, 1, { endTimeUnixNano: 1n }), /spans\[0\]: end_time is before start_time/],
        [otlpSpan(t, 1, { name: '' }), /spans\[0\]: name is required/],
      ];
      for (const [bad, reason] of cases) {
        await expect(unary(client, 'export', request([bad]), withToken)).rejects.toMatchObject({
          code: grpc.status.INVALID_ARGUMENT,
          details: expect.stringMatching(reason),
        });
      }
      expect(stored(t)).toBe(0);
      await unary(client, 'export', request([otlpSpan(t, 1)]), withToken);
      expect(stored(t)).toBe(1);
    } finally {
      client.close();
    }
  });

  it('refuses a message over server.max_request_bytes with RESOURCE_EXHAUSTED', async () => {
    const client = grpcClient(TraceService, server.grpcAddress);
    const t = freshTraceHex();
    try {
      const huge = otlpSpan(t, 1, { name: 'x'.repeat(MAX + 10) });
      await expect(unary(client, 'export', request([huge]), withToken)).rejects.toMatchObject({
        code: grpc.status.RESOURCE_EXHAUSTED,
      });
      expect(stored(t)).toBe(0);
    } finally {
      client.close();
    }
  });

  it('over Connect, refuses more than 10,000 spans in one request', async () => {
    // The monitor's default limit (4 MiB) fits 10,001 small spans; this server's 64 KiB would not.
    const big = await startOtlpServer({ maxRequestBytes: 4 * 1024 * 1024 });
    try {
      const client = createClient(
        TraceService,
        createConnectTransport({ baseUrl: big.baseUrl, httpVersion: '1.1', useBinaryFormat: true }),
      );
      const t = freshTraceHex();
      const spans = Array.from({ length: 10_001 }, (_, i) => otlpSpan(t, i + 1));
      const err = await client.export(request(spans)).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ConnectError);
      expect((err as ConnectError).code).toBe(Code.InvalidArgument);
      expect((err as ConnectError).rawMessage).toMatch(/at most 10000 spans per request/);
      expect(big.traces.store.getTrace(t)).toEqual([]);
    } finally {
      await big.close();
    }
  });
});
