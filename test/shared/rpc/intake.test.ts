/**
 * What both ports decide before they read a request (issue 22): scopes of named API tokens, and the
 * one budget of request bytes held at once by all calls of both ports.
 */
import * as http2 from 'node:http2';
import * as net from 'node:net';
import { gzipSync } from 'node:zlib';
import { create, toBinary } from '@bufbuild/protobuf';
import * as grpc from '@grpc/grpc-js';
import { Code, ConnectError, createClient, type HandlerContext } from '@connectrpc/connect';
import { compressionGzip, createConnectTransport, createGrpcWebTransport } from '@connectrpc/connect-node';
import { BODY_TOO_LARGE, readBoundedBody } from '../../../shared/http/body';
import { EchoRequestSchema, EchoService, type EchoRequest } from '../../../shared/gen/svc/testing/v1/echo_pb';
import { grpcClient, unary, type GenericClient } from '../../support/grpc-clients';
import { EchoServiceImpl } from '../../support/echo-service';
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

  /** A route that reads its body (200 KiB at most); reads that failed. */
  let failedReads = 0;
  beforeAll(() => {
    h.server.addHttpRoutes({
      methods: ['POST'],
      path: '/upload',
      handler: async (req, res) => {
        const body = await readBoundedBody(req, 200 * KIB).catch((err: unknown) => {
          failedReads++;
          throw err;
        });
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.end(String(body === BODY_TOO_LARGE ? 'too large' : body.length));
      },
    });
  });

  test("a gateway route's body counts in the same budget as it arrives: beyond it 429 with Retry-After", async () => {
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
    // The route's read of the refused body ends (it does not wait forever for bytes never taken).
    while (failedReads === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    await held;
    const ok = await fetch(`${h.baseUrl}/upload`, { method: 'POST', body: Buffer.alloc(150 * KIB) });
    expect(await ok.text()).toBe(String(150 * KIB));
  });
});

describe('gateway bodies that are declared and never sent (slow clients on a route without a token)', () => {
  // Found by the black-box probe: 130 connections to an SMS webhook (no token: the signature covers
  // the body) that declared 1 MiB and sent 11 bytes held the whole 128 MiB budget until the request
  // timeout, and every RPC of both ports was refused RESOURCE_EXHAUSTED meanwhile.
  let h: EchoHarness;
  let reading = 0;
  beforeAll(async () => {
    h = await startEchoServer({ maxRequestBytes: 200 * KIB, maxInFlightRequestBytes: 256 * KIB });
    h.server.addHttpRoutes({
      methods: ['POST'],
      path: '/webhook',
      handler: async (req, res) => {
        reading++;
        const body = await readBoundedBody(req, 200 * KIB).catch(() => undefined);
        if (body === undefined) return;
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.end(body === BODY_TOO_LARGE ? 'too large' : body.toString('utf8'));
      },
    });
  });
  afterAll(() => h.close());

  test('a body larger than the budget sent after the answer (404, 401) is dropped: the client reads the answer', async () => {
    // A client that writes its whole body before it reads (as curl does): a reset under the answer
    // would discard the answer unread.
    const socket = net.connect(Number(new URL(h.baseUrl).port), '127.0.0.1');
    let received = '';
    socket.on('data', (d: Buffer) => (received += d.toString('latin1')));
    const closed = new Promise<string>((resolve) => {
      socket.on('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? 'error'));
      socket.on('close', () => resolve('closed'));
    });
    socket.write(`POST /no-such-route HTTP/1.1\r\nHost: x\r\nContent-Length: ${8192 * KIB}\r\n\r\n`);
    for (let sent = 0; sent < 8192 * KIB && !socket.destroyed; sent += 64 * KIB) {
      if (!socket.write(Buffer.alloc(64 * KIB)))
        await Promise.race([new Promise((resolve) => socket.once('drain', resolve)), closed]);
    }
    socket.end();
    expect(await closed).toBe('closed');
    expect(received).toMatch(/^HTTP\/1\.1 404 /);
  });

  test('hold only the bytes they sent: RPCs of both ports still fit, and the route reads a whole body', async () => {
    let answered = 0;
    const sockets = Array.from({ length: 10 }, () =>
      net
        .connect(Number(new URL(h.baseUrl).port), '127.0.0.1', function (this: net.Socket) {
          this.write(`POST /webhook HTTP/1.1\r\nHost: x\r\nContent-Length: ${200 * KIB}\r\n\r\nMessageSid=`);
        })
        .once('data', () => answered++),
    );
    try {
      while (reading + answered < sockets.length) await new Promise((resolve) => setTimeout(resolve, 5));
      // None was refused: a route that waits for its body holds no budget for it.
      expect(answered).toBe(0);
      // Declared: 2 MiB against a 256 KiB budget. Sent: 110 bytes.
      const message = 'ß'.repeat(75 * KIB); // 150 KiB
      expect((await unary<{ message: string }>(h.grpc, 'echo', { message })).response.message).toBe(message);
      expect((await h.connect().echo({ message })).message).toBe(message);
      const body = 'Body=' + encodeURIComponent('STOP 停止 🛑');
      const res = await fetch(`${h.baseUrl}/webhook`, { method: 'POST', body });
      expect(await res.text()).toBe(body);
    } finally {
      for (const socket of sockets) socket.destroy();
    }
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

describe('a compressed request holds what it expands to in the budget (not its wire bytes)', () => {
  // 200 KiB per message, 256 KiB in flight. A 150 KiB message of one letter is a few hundred bytes
  // gzipped: counted by its wire bytes, a call holding it left the budget nearly empty.
  /** Echo whose calls with a delay wait until the test lets them go (they hold their request). */
  class HoldingEcho extends EchoServiceImpl {
    holding = 0;
    private waiting: Array<() => void> = [];
    override async echo(req: EchoRequest, ctx: HandlerContext) {
      if (req.delayMs > 0) {
        this.holding++;
        await new Promise<void>((resolve) => this.waiting.push(resolve));
        this.holding--;
      }
      return super.echo({ ...req, delayMs: 0 }, ctx);
    }
    release(): void {
      for (const go of this.waiting.splice(0)) go();
    }
  }
  const impl = new HoldingEcho();
  let h: EchoHarness;
  let gzipGrpc: GenericClient;
  beforeAll(async () => {
    h = await startEchoServer({ impl, maxRequestBytes: 200 * KIB, maxInFlightRequestBytes: 256 * KIB });
    gzipGrpc = grpcClient(EchoService, h.grpcAddress, {
      'grpc.default_compression_algorithm': grpc.compressionAlgorithms.gzip,
    });
  });
  afterAll(async () => {
    gzipGrpc.close();
    await h.close();
  });

  const gzipConnect = () =>
    createClient(
      EchoService,
      createConnectTransport({ baseUrl: h.baseUrl, httpVersion: '1.1', sendCompression: compressionGzip }),
    );
  const gzipGrpcWeb = () =>
    createClient(
      EchoService,
      createGrpcWebTransport({ baseUrl: h.baseUrl, httpVersion: '1.1', sendCompression: compressionGzip }),
    );
  /** Compressed Echo calls, one per protocol that allows compression. */
  const protocols: Record<string, (message: string, delayMs?: number) => Promise<string>> = {
    'gRPC (grpc-encoding: gzip)': async (message, delayMs = 0) =>
      (await unary<{ message: string }>(gzipGrpc, 'echo', { message, delayMs })).response.message,
    'Connect (Content-Encoding: gzip)': async (message, delayMs = 0) =>
      (await gzipConnect().echo({ message, delayMs })).message,
    'gRPC-Web (grpc-encoding: gzip)': async (message, delayMs = 0) =>
      (await gzipGrpcWeb().echo({ message, delayMs })).message,
  };
  // A grpc-js ServiceError's code is the same number as Connect's.
  const codeOf = (e: unknown) => (e instanceof ConnectError ? e.code : (e as { code: Code }).code);
  afterEach(() => impl.release());

  async function untilHolding(n: number): Promise<void> {
    while (impl.holding < n) await new Promise((resolve) => setTimeout(resolve, 5));
  }

  test.each(Object.keys(protocols))(
    'on %s: a held call counts its expanded 150 KiB, so 110 KiB more is refused and 100 KiB more fits',
    async (name) => {
      const call = protocols[name]!;
      const message = '数'.repeat(50 * KIB); // 150 KiB of UTF-8 (CJK: three bytes each)
      const held = call(message, 1);
      await untilHolding(1);
      // About 106 KiB are left: less than the method's 200 KiB limit.
      await expect(unary(h.grpc, 'echo', { message: 'x'.repeat(110 * KIB) })).rejects.toMatchObject({
        code: grpc.status.RESOURCE_EXHAUSTED,
      });
      for (const other of Object.values(protocols)) {
        // Compressed too: its decompression stops at what is free (retry later), not at its limit.
        await expect(other('y'.repeat(110 * KIB)).catch(codeOf)).resolves.toBe(Code.ResourceExhausted);
        await expect(other('🙂'.repeat(25 * KIB))).resolves.toBe('🙂'.repeat(25 * KIB));
      }
      impl.release();
      expect(await held).toBe(message);
      // Everything was given back: a message of 150 KiB fits again, on every protocol.
      for (const other of Object.values(protocols)) await expect(other(message)).resolves.toBe(message);
      expect((await unary<{ message: string }>(h.grpc, 'echo', { message })).response.message).toBe(message);
    },
  );

  test('a compressed message that does not decompress is INVALID_ARGUMENT on both ports, never INTERNAL', async () => {
    const corrupt = Buffer.from('1f8b0800000000000003ffffffff', 'hex');
    const session = http2.connect(`http://${h.grpcAddress}`);
    const trailers = await new Promise<http2.IncomingHttpHeaders>((resolve, reject) => {
      const frame = Buffer.concat([Buffer.from([1, 0, 0, 0, corrupt.length]), corrupt]);
      const call = session.request({
        ':method': 'POST',
        ':path': '/svc.testing.v1.EchoService/Echo',
        'content-type': 'application/grpc',
        te: 'trailers',
        'grpc-encoding': 'gzip',
      });
      const seen: http2.IncomingHttpHeaders = {};
      call.on('response', (r) => Object.assign(seen, r));
      call.on('trailers', (t) => Object.assign(seen, t));
      call.on('data', () => undefined);
      call.on('error', reject);
      call.on('close', () => resolve(seen));
      call.end(frame);
    });
    session.close();
    expect(trailers['grpc-status']).toBe(String(grpc.status.INVALID_ARGUMENT));
    const res = await fetch(`${h.baseUrl}/svc.testing.v1.EchoService/Echo`, {
      method: 'POST',
      headers: { 'content-type': 'application/proto', 'content-encoding': 'gzip' },
      body: corrupt,
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { code: string }).code).toBe('invalid_argument');
  });
});

describe('a gRPC call whose request never completes (slow client on the gRPC port)', () => {
  // Found by the black-box probe: 20,000 calls on one connection, each a length prefix that claims
  // 10 bytes and one byte, held about 200 MB of the process for as long as the connection lived.
  let h: EchoHarness;
  beforeAll(async () => {
    h = await startEchoServer({ httpHeadersTimeoutMs: 300, httpRequestTimeoutMs: 300 });
  });
  afterAll(() => h.close());

  /** Opens a call that sends `sent` and never half-closes; its status, or 'no answer' after 10 s. */
  async function unfinishedCall(sent: Buffer): Promise<{ status: string; message: string }> {
    const session = http2.connect(`http://${h.grpcAddress}`);
    try {
      return await new Promise((resolve) => {
        const seen: http2.IncomingHttpHeaders = {};
        const call = session.request(
          {
            ':method': 'POST',
            ':path': '/svc.testing.v1.EchoService/Echo',
            'content-type': 'application/grpc',
            te: 'trailers',
          },
          { endStream: false },
        );
        // A bound for the test only, so that a server without the fix fails instead of hanging.
        const giveUp = setTimeout(() => resolve({ status: 'no answer', message: '' }), 10_000);
        call.on('response', (r) => Object.assign(seen, r));
        call.on('trailers', (t) => Object.assign(seen, t));
        call.on('data', () => undefined);
        call.on('error', () => undefined);
        call.on('close', () => {
          clearTimeout(giveUp);
          resolve({
            status: String(seen['grpc-status']),
            message: decodeURIComponent(String(seen['grpc-message'] ?? '')),
          });
        });
        call.write(sent);
      });
    } finally {
      session.destroy();
    }
  }

  test.each([
    ['a length prefix that claims more than is sent', Buffer.from([0, 0, 0, 0, 10, 0x0a])],
    ['a whole message and no half-close', Buffer.from([0, 0, 0, 0, 3, 0x0a, 1, 0x78])],
    ['nothing but headers', Buffer.alloc(0)],
  ])('%s is DEADLINE_EXCEEDED after the request timeout, as on the HTTP port', async (_, sent) => {
    await expect(unfinishedCall(sent)).resolves.toEqual({
      status: String(grpc.status.DEADLINE_EXCEEDED),
      message: 'the request was not received in time',
    });
  });

  test('a call that sent its request whole may run longer than the request timeout', async () => {
    const ok = await unary<{ message: string }>(h.grpc, 'echo', { message: 'سلام 👋', delayMs: 900 });
    expect(ok.response.message).toBe('سلام 👋');
  });
});
