/**
 * OTLP/HTTP's gzip bodies in the port's in-flight byte budget: a gunzipped body holds what it expands
 * to, as a compressed RPC does (shared/rpc/request-budget.ts `inflateWithin`), not its few wire bytes.
 * Before, a 200-byte gzip body expanding to 20 KiB was served while the budget had 8 KiB free.
 */
import { request as httpRequest, type ClientRequest } from 'node:http';
import { gzipSync } from 'node:zlib';
import { create, toBinary } from '@bufbuild/protobuf';
import { ExportTraceServiceRequestSchema } from '../../../shared/gen/opentelemetry/proto/collector/trace/v1/trace_service_pb';
import { startOtlpServer, type OtlpTestServer } from './support';

const TOKEN = 'otlp-secret';
const KIB = 1024;
const MAX = 64 * KIB;
const BUDGET = 128 * KIB;
const HEADERS = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/x-protobuf' };

let server: OtlpTestServer;
beforeAll(async () => {
  server = await startOtlpServer({
    apiTokens: [TOKEN],
    maxRequestBytes: MAX,
    maxInFlightRequestBytes: BUDGET,
  });
});
afterAll(() => server.close());

/** A valid export of `n` spans (names in CJK and emoji: about 70 bytes a span). */
function exportBody(n: number): Buffer {
  const spans = Array.from({ length: n }, (_, i) => ({
    traceId: Buffer.from('7'.repeat(31) + 'a', 'hex'),
    spanId: Buffer.from((i + 1).toString(16).padStart(16, '0'), 'hex'),
    name: `操作-${i}-🚀-عملية`,
    startTimeUnixNano: 1_700_000_000_000_000_000n + BigInt(i),
    endTimeUnixNano: 1_700_000_000_100_000_000n + BigInt(i),
  }));
  return Buffer.from(
    toBinary(
      ExportTraceServiceRequestSchema,
      create(ExportTraceServiceRequestSchema, { resourceSpans: [{ scopeSpans: [{ spans }] }] }),
    ),
  );
}

async function post(body: Buffer, gzip: boolean): Promise<number> {
  const res = await fetch(`${server.baseUrl}/v1/traces`, {
    method: 'POST',
    headers: gzip ? { ...HEADERS, 'content-encoding': 'gzip' } : HEADERS,
    body: gzip ? gzipSync(body) : body,
  });
  await res.arrayBuffer();
  return res.status;
}

/** A request that declares `declared` bytes, sends `sent` of them and holds the rest back. */
function holdBody(declared: number, sent: number): ClientRequest {
  const req = httpRequest(`${server.baseUrl}/v1/traces`, {
    method: 'POST',
    headers: { ...HEADERS, 'content-length': String(declared) },
  });
  req.on('error', () => undefined);
  req.write(Buffer.alloc(sent));
  return req;
}

it('a gzip body holds what it expands to: refused (429) past what the budget has free, served once it is free', async () => {
  const body = exportBody(300);
  expect(body.byteLength).toBeGreaterThan(16 * KIB);
  expect(body.byteLength).toBeLessThan(MAX);
  expect(gzipSync(body).byteLength).toBeLessThan(4 * KIB);
  expect(await post(body, true)).toBe(200);

  // Two slow requests hold 120 KiB of the 128 KiB: 8 KiB are left.
  const holders = [holdBody(63 * KIB, 60 * KIB), holdBody(63 * KIB, 60 * KIB)];
  try {
    // Until their bytes have arrived, a plain 12 KiB body may still fit; after, it is refused.
    const deadline = Date.now() + 30_000;
    while ((await post(Buffer.alloc(12 * KIB), false)) !== 429) {
      if (Date.now() > deadline) throw new Error('the held bodies never filled the budget');
    }
    // Its wire bytes would fit; what it expands to does not.
    expect(await post(body, true)).toBe(429);
  } finally {
    for (const h of holders) h.destroy();
  }
  // Given back when the holders go: served again.
  const until = Date.now() + 30_000;
  let status = await post(body, true);
  while (status !== 200 && Date.now() < until) status = await post(body, true);
  expect(status).toBe(200);
});
