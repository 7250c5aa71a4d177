/**
 * What both ports decide before they read a request (issue 22): scopes of named API tokens, and the
 * one budget of request bytes held at once by all calls of both ports.
 */
import * as http2 from 'node:http2';
import { gzipSync } from 'node:zlib';
import { create, toBinary } from '@bufbuild/protobuf';
import * as grpc from '@grpc/grpc-js';
import { Code, ConnectError } from '@connectrpc/connect';
import { BODY_TOO_LARGE, readBoundedBody } from '../../../shared/http/body';
import { EchoRequestSchema } from '../../../shared/gen/svc/testing/v1/echo_pb';
import { unary } from '../../support/grpc-clients';
import { capturingLogger, startEchoServer, type EchoHarness } from './harness';

const KIB = 1024;

describe('API tokens with scopes', () => {
  const tokens = {
    caller: 'echo-caller-token-31f4',
    watcher: 'echo-watcher-token-8c2d',
    rotated: 'echo-caller-token-new-77aa',
  };
  const captured = capturingLogger();
  let h: EchoHarness;
  beforeAll(async () => {
    h = await startEchoServer({
      logger: captured.logger,
      apiTokens: [
        { name: 'caller', token: tokens.caller, scopes: ['echo:call'] },
        { name: 'caller', token: tokens.rotated, scopes: ['echo:call'] },
        { name: 'watcher', token: tokens.watcher, scopes: ['echo:watch'] },
        'plain-token-every-scope-5e6f',
      ],
      scopes: { echo: 'echo:call', echoStream: 'echo:watch' },
    });
  });
  afterAll(() => h.close());

  const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

  test("a token without the method's scope is PERMISSION_DENIED on both ports; one with it passes", async () => {
    await expect(
      unary(h.grpc, 'echo', { message: 'x' }, { metadata: bearer(tokens.watcher) }),
    ).rejects.toMatchObject({ code: grpc.status.PERMISSION_DENIED });
    const denied = await h
      .connect(bearer(tokens.watcher))
      .echo({ message: 'x' })
      .catch((e: unknown) => ConnectError.from(e));
    expect(denied).toMatchObject({ code: Code.PermissionDenied });
    const res = await fetch(`${h.baseUrl}/svc.testing.v1.EchoService/Echo`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...bearer(tokens.watcher) },
      body: '{}',
    });
    expect(res.status).toBe(403);

    for (const token of [tokens.caller, tokens.rotated, 'plain-token-every-scope-5e6f']) {
      const ok = await unary<{ message: string }>(
        h.grpc,
        'echo',
        { message: 'y' },
        { metadata: bearer(token) },
      );
      expect(ok.response.message).toBe('y');
      expect((await h.connect(bearer(token)).echo({ message: 'z' })).message).toBe('z');
    }
  });

  test("the caller's name is in the log line of a refused call, and no token is in any line", async () => {
    await unary(
      h.grpc,
      'echo',
      { message: 'x', failCode: 'NOT_FOUND' },
      { metadata: bearer(tokens.rotated) },
    ).catch(() => undefined);
    await h
      .connect(bearer(tokens.watcher))
      .echo({ message: 'x' })
      .catch(() => undefined);
    const lines = captured.lines();
    expect(lines).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ caller: 'caller', rpcMethod: 'Echo', code: 'not_found' }),
        expect.objectContaining({ caller: 'watcher', rpcMethod: 'Echo', code: 'permission_denied' }),
      ]),
    );
    const text = JSON.stringify(lines);
    for (const token of [...Object.values(tokens), 'plain-token-every-scope-5e6f'])
      expect(text).not.toContain(token);
  });
});

describe('request bytes in flight', () => {
  let h: EchoHarness;
  beforeAll(async () => {
    h = await startEchoServer({ maxRequestBytes: 200 * KIB, maxInFlightRequestBytes: 256 * KIB });
  });
  afterAll(() => h.close());

  test('beyond the shared budget a request is RESOURCE_EXHAUSTED on both ports, and fits again once the holder ends', async () => {
    const message = 'x'.repeat(150 * KIB);
    // One call holds 150 KiB of the 256 KiB budget while it runs.
    const big = unary<{ message: string }>(h.grpc, 'echo', { message, delayMs: 1500 });
    for (let inFlight = 0; inFlight < 1;) {
      await new Promise((resolve) => setTimeout(resolve, 10));
      const metric = await h.registry.getSingleMetric('rpc_server_in_flight')?.get();
      inFlight = Math.max(0, ...(metric?.values ?? []).map((v) => v.value));
    }
    await expect(unary(h.grpc, 'echo', { message })).rejects.toMatchObject({
      code: grpc.status.RESOURCE_EXHAUSTED,
    });
    const res = await fetch(`${h.baseUrl}/svc.testing.v1.EchoService/Echo`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ message }),
    });
    expect(res.status).toBe(429);
    expect(((await res.json()) as { code: string }).code).toBe('resource_exhausted');
    expect((await big).response.message).toBe(message);
    // The budget is free again.
    expect((await unary<{ message: string }>(h.grpc, 'echo', { message })).response.message).toBe(message);
    const again = await h.connect().echo({ message });
    expect(again.message).toBe(message);
  });

  test("a gateway route's declared body counts in the same budget: beyond it 429 before the route runs", async () => {
    let ran = 0;
    h.server.addHttpRoutes({
      methods: ['POST'],
      path: '/upload',
      handler: async (req, res) => {
        ran++;
        const body = await readBoundedBody(req, 200 * KIB);
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.end(String(body === BODY_TOO_LARGE ? 'too large' : body.length));
      },
    });
    const message = 'x'.repeat(150 * KIB);
    const held = unary<{ message: string }>(h.grpc, 'echo', { message, delayMs: 1500 });
    for (let inFlight = 0; inFlight < 1;) {
      await new Promise((resolve) => setTimeout(resolve, 10));
      const metric = await h.registry.getSingleMetric('rpc_server_in_flight')?.get();
      inFlight = Math.max(0, ...(metric?.values ?? []).map((v) => v.value));
    }
    const refused = await fetch(`${h.baseUrl}/upload`, { method: 'POST', body: Buffer.alloc(150 * KIB) });
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('1');
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('resource_exhausted');
    expect(ran).toBe(0);
    await held;
    const ok = await fetch(`${h.baseUrl}/upload`, { method: 'POST', body: Buffer.alloc(150 * KIB) });
    expect(await ok.text()).toBe(String(150 * KIB));
  });
});

describe('a compressed request message', () => {
  // Echo takes 64 KiB; EchoStream is raised to 8 MiB, so grpc-js's own bound (the largest method
  // limit) is 8 MiB. Found by the black-box probe: a ~100 KB gzip bomb inflated to the largest
  // method's limit whatever method it was sent to.
  let h: EchoHarness;
  beforeAll(async () => {
    h = await startEchoServer({
      maxRequestBytes: 64 * KIB,
      methodMaxRequestBytes: { echoStream: 8192 * KIB },
    });
  });
  afterAll(() => h.close());

  /** One gRPC call over raw HTTP/2 with a gzip-compressed message (`grpc-encoding: gzip`). */
  async function gzipCall(method: string, message: Uint8Array): Promise<{ status: string; details: string }> {
    const compressed = gzipSync(message);
    const frame = Buffer.alloc(5 + compressed.length);
    frame.writeUInt8(1, 0);
    frame.writeUInt32BE(compressed.length, 1);
    compressed.copy(frame, 5);
    const session = http2.connect(`http://${h.grpcAddress}`);
    try {
      return await new Promise((resolve, reject) => {
        const headers: Record<string, string> = {};
        const call = session.request({
          ':method': 'POST',
          ':path': `/svc.testing.v1.EchoService/${method}`,
          'content-type': 'application/grpc',
          te: 'trailers',
          'grpc-encoding': 'gzip',
        });
        call.on('response', (h) => Object.assign(headers, h));
        call.on('trailers', (t) => Object.assign(headers, t));
        call.on('data', () => undefined);
        call.on('error', reject);
        call.on('close', () =>
          resolve({
            status: String(headers['grpc-status']),
            details: decodeURIComponent(String(headers['grpc-message'] ?? '')),
          }),
        );
        call.end(frame);
      });
    } finally {
      session.close();
    }
  }

  test("inflates only up to its method's limit: beyond it RESOURCE_EXHAUSTED at that limit, not the largest method's", async () => {
    // 16 MiB of one letter is about 16 KB gzipped: far below the limit on the wire.
    const bomb = toBinary(EchoRequestSchema, create(EchoRequestSchema, { message: 'x'.repeat(16384 * KIB) }));
    const { status, details } = await gzipCall('Echo', bomb);
    expect(status).toBe(String(grpc.status.RESOURCE_EXHAUSTED));
    // Decompression stopped at Echo's 64 KiB, not at EchoStream's 8 MiB (grpc-js's own bound).
    expect(details).toContain(String(64 * KIB));
    expect(details).not.toContain(String(8192 * KIB));
  });

  test('within its limit a compressed message is served as before', async () => {
    const message = 'y'.repeat(32 * KIB);
    const ok = await gzipCall('Echo', toBinary(EchoRequestSchema, create(EchoRequestSchema, { message })));
    expect(ok.status).toBe(String(grpc.status.OK));
  });
});
