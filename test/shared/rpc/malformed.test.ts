/**
 * Found by fuzzing both ports: requests that do not decode are the caller's fault. They answer
 * INVALID_ARGUMENT on gRPC and HTTP 400 `invalid_argument` on Connect, with a generic message (never
 * the parser's), and every answer, these included, is counted in `rpc_server_handled_total`.
 */
import * as grpc from '@grpc/grpc-js';
import { connect } from 'node:net';
import fc from 'fast-check';
import { startEchoServer, type EchoHarness } from './harness';
import { startNotificationApp, type RunningNotificationApp } from '../../support/notification-app';

/** A varint, as protobuf writes lengths. */
function varint(n: number): number[] {
  const out: number[] = [];
  while (n > 0x7f) {
    out.push((n & 0x7f) | 0x80);
    n >>>= 7;
  }
  out.push(n);
  return out;
}

/** A length-delimited field. */
function field(tag: number, bytes: readonly number[]): number[] {
  return [(tag << 3) | 2, ...varint(bytes.length), ...bytes];
}

/** A google.protobuf.Struct nested `depth` deep: {"a": {"a": ... {}}}. */
function nestedStruct(depth: number): number[] {
  let struct: number[] = [];
  for (let i = 0; i < depth; i++) {
    const value = field(5, struct); // Value.struct_value
    const entry = [...field(1, [0x61]), ...field(2, value)]; // map entry: key "a", value
    struct = field(1, entry); // Struct.fields
  }
  return struct;
}

const utf8 = (s: string) => [...Buffer.from(s)];

/** Malformed EchoRequest bodies (binary protobuf). */
const MALFORMED: Array<[string, Buffer]> = [
  // A varint that never ends, then garbage.
  [
    'random bytes',
    Buffer.from([0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x13, 0x37]),
  ],
  // `message` says 10 bytes follow; 3 do.
  ['a truncated message', Buffer.from([0x0a, 10, 0x61, 0x62, 0x63])],
  // `message` holds 0xc3 0x28: not UTF-8.
  ['invalid UTF-8 in a string field', Buffer.from(field(1, [0xc3, 0x28]))],
];

/** grpc-js client for raw bytes: the request is sent exactly as given. */
function rawUnary(address: string, path: string, body: Buffer): Promise<grpc.StatusObject> {
  const client = new grpc.Client(address, grpc.credentials.createInsecure());
  return new Promise((resolve) => {
    client.makeUnaryRequest(
      path,
      (b: Buffer) => b,
      (b: Buffer) => b,
      body,
      (err) => {
        client.close();
        resolve(
          err
            ? (err as grpc.StatusObject)
            : { code: grpc.status.OK, details: '', metadata: new grpc.Metadata() },
        );
      },
    );
  });
}

async function connectPost(
  url: string,
  body: Buffer | string,
  contentType: string,
): Promise<{ status: number; body: { code?: string; message?: string } }> {
  const res = await fetch(url, { method: 'POST', headers: { 'Content-Type': contentType }, body });
  const text = await res.text();
  return { status: res.status, body: text ? (JSON.parse(text) as { code?: string; message?: string }) : {} };
}

describe('malformed requests on the echo kit', () => {
  let h: EchoHarness;
  beforeAll(async () => {
    h = await startEchoServer();
  });
  afterAll(async () => {
    await h.close();
  });

  test.each(MALFORMED)('%s: gRPC answers INVALID_ARGUMENT with a generic message', async (_name, body) => {
    const status = await rawUnary(h.grpcAddress, '/svc.testing.v1.EchoService/Echo', body);
    expect(status.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(status.details).toBe('malformed request message');
  });

  test.each(MALFORMED)(
    '%s: Connect answers 400 invalid_argument with a generic message',
    async (_name, body) => {
      const res = await connectPost(
        `${h.baseUrl}/svc.testing.v1.EchoService/Echo`,
        body,
        'application/proto',
      );
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ code: 'invalid_argument', message: 'malformed request message' });
    },
  );

  test.each(MALFORMED)(
    '%s: gRPC-Web unary answers grpc-status INVALID_ARGUMENT with a generic message, counted as such',
    async (_name, body) => {
      const counted = async (): Promise<number> => {
        const series =
          'rpc_server_handled_total{rpc_service="svc.testing.v1.EchoService",rpc_method="Echo",' +
          'rpc_code="invalid_argument",transport="http"}';
        const line = (await h.registry.metrics()).split('\n').find((l) => l.startsWith(series));
        return line ? Number(line.split(' ').pop()) : 0;
      };
      const before = await counted();
      const envelope = Buffer.concat([Buffer.from([0, 0, 0, 0, body.length]), body]);
      const res = await fetch(`${h.baseUrl}/svc.testing.v1.EchoService/Echo`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/grpc-web+proto' },
        body: envelope,
      });
      const bytes = Buffer.from(await res.arrayBuffer());
      expect(res.status).toBe(200);
      expect(bytes[0]).toBe(0x80); // the trailers envelope, and nothing before it
      expect(bytes.subarray(5).toString()).toBe(
        `grpc-status: ${grpc.status.INVALID_ARGUMENT}\r\ngrpc-message: malformed%20request%20message\r\n`,
      );
      expect(await counted()).toBe(before + 1);
    },
  );

  test.each(MALFORMED)(
    '%s: a server stream refuses it the same way (gRPC, Connect, gRPC-Web)',
    async (_name, body) => {
      const stream = '/svc.testing.v1.EchoService/EchoStream';
      const client = new grpc.Client(h.grpcAddress, grpc.credentials.createInsecure());
      const status = await new Promise<grpc.StatusObject>((resolve) => {
        const call = client.makeServerStreamRequest(
          stream,
          (b: Buffer) => b,
          (b: Buffer) => b,
          body,
        );
        call.on('data', () => undefined);
        call.on('error', () => undefined);
        call.on('status', resolve);
      });
      client.close();
      expect(status.code).toBe(grpc.status.INVALID_ARGUMENT);

      const envelope = Buffer.concat([Buffer.from([0, 0, 0, 0, body.length]), body]);
      const connect = await fetch(h.baseUrl + stream, {
        method: 'POST',
        headers: { 'Content-Type': 'application/connect+proto' },
        body: envelope,
      });
      const connectBody = Buffer.from(await connect.arrayBuffer());
      expect(connectBody[0]).toBe(0b10); // the end-stream envelope
      expect(JSON.parse(connectBody.subarray(5).toString())).toEqual({
        error: { code: 'invalid_argument', message: 'malformed request message' },
      });

      const web = await fetch(h.baseUrl + stream, {
        method: 'POST',
        headers: { 'Content-Type': 'application/grpc-web+proto' },
        body: envelope,
      });
      const webBody = Buffer.from(await web.arrayBuffer());
      expect(webBody[0]).toBe(0x80); // the trailers envelope
      expect(webBody.subarray(5).toString()).toContain(`grpc-status: ${grpc.status.INVALID_ARGUMENT}`);
    },
  );

  test('a JSON body with invalid UTF-8 is refused, not stored as replacement characters', async () => {
    const body = Buffer.from([...utf8('{"message":"'), 0xc3, 0x28, ...utf8('"}')]);
    const res = await connectPost(`${h.baseUrl}/svc.testing.v1.EchoService/Echo`, body, 'application/json');
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ code: 'invalid_argument', message: 'malformed request message' });
  });

  test('fuzz: arbitrary bytes never get INTERNAL, on either port', async () => {
    await fc.assert(
      fc.asyncProperty(fc.uint8Array({ maxLength: 64 }), async (bytes) => {
        const body = Buffer.from(bytes);
        const grpcStatus = await rawUnary(h.grpcAddress, '/svc.testing.v1.EchoService/Echo', body);
        expect([grpc.status.OK, grpc.status.INVALID_ARGUMENT]).toContain(grpcStatus.code);
        const res = await connectPost(
          `${h.baseUrl}/svc.testing.v1.EchoService/Echo`,
          body,
          'application/proto',
        );
        expect([200, 400]).toContain(res.status);
      }),
      { numRuns: 150, seed: 9 },
    );
  });

  test('every answer is counted: malformed, unknown methods, 405 and 415', async () => {
    await rawUnary(h.grpcAddress, '/svc.testing.v1.EchoService/Echo', MALFORMED[1]![1]);
    await connectPost(`${h.baseUrl}/svc.testing.v1.EchoService/Echo`, MALFORMED[1]![1], 'application/proto');
    const unknown = await rawUnary(
      h.grpcAddress,
      '/svc.testing.v1.EchoService/NoSuchMethod',
      Buffer.alloc(0),
    );
    expect(unknown.code).toBe(grpc.status.UNIMPLEMENTED);
    const unknownHttp = await connectPost(
      `${h.baseUrl}/svc.testing.v1.EchoService/NoSuchMethod`,
      '{}',
      'application/json',
    );
    expect(unknownHttp.status).toBe(404);
    // Echo has side effects: Connect refuses GET (405) and says what it allows.
    const get = await fetch(`${h.baseUrl}/svc.testing.v1.EchoService/Echo?encoding=json&message=%7B%7D`);
    expect(get.status).toBe(405);
    expect(get.headers.get('allow')).toBe('POST');
    const wrongType = await connectPost(`${h.baseUrl}/svc.testing.v1.EchoService/Echo`, 'hi', 'text/plain');
    expect(wrongType.status).toBe(415);
    // Found by the fuzzer: both came with an empty body. They say why, in Connect's error format.
    expect(wrongType.body).toEqual({
      code: 'unimplemented',
      message: expect.stringContaining('content type'),
    });
    expect(JSON.parse(await get.text())).toEqual({
      code: 'unimplemented',
      message: 'this RPC is served with POST only',
    });

    const text = await h.registry.metrics();
    const count = (labels: string): number => {
      const line = text.split('\n').find((l) => l.startsWith(`rpc_server_handled_total{${labels}}`));
      return line ? Number(line.split(' ').pop()) : 0;
    };
    const echo = 'rpc_service="svc.testing.v1.EchoService",rpc_method="Echo"';
    expect(count(`${echo},rpc_code="invalid_argument",transport="grpc"`)).toBeGreaterThanOrEqual(1);
    expect(count(`${echo},rpc_code="invalid_argument",transport="http"`)).toBeGreaterThanOrEqual(1);
    expect(
      count('rpc_service="unknown",rpc_method="unknown",rpc_code="unimplemented",transport="grpc"'),
    ).toBe(1);
    expect(
      count('rpc_service="unknown",rpc_method="unknown",rpc_code="unimplemented",transport="http"'),
    ).toBe(1);
    // 405 and 415: the method exists, but is not served that way.
    expect(count(`${echo},rpc_code="unimplemented",transport="http"`)).toBe(2);
    expect(text).not.toMatch(/rpc_code="internal"/);
  });
});

/** Writes `request` on a raw connection to `baseUrl` and reads until the server closes it. */
function rawHttp(baseUrl: string, request: string): Promise<string> {
  const { hostname, port } = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => socket.write(request));
    const chunks: Buffer[] = [];
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('error', reject);
    socket.on('close', () => resolve(Buffer.concat(chunks).toString('utf8')));
  });
}

describe("requests Node's HTTP parser refuses (found by the fuzzer: a bare status line, no reason)", () => {
  let h: EchoHarness;
  beforeAll(async () => {
    h = await startEchoServer();
  });
  afterAll(async () => {
    await h.close();
  });

  test('an unknown method token is 400 with the JSON error body, and the connection closes', async () => {
    const answer = await rawHttp(h.baseUrl, 'FUZZ /health HTTP/1.1\r\nHost: x\r\n\r\n');
    expect(answer).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
    expect(answer).toMatch(/\r\nConnection: close\r\n/);
    expect(JSON.parse(answer.split('\r\n\r\n')[1]!)).toEqual({
      error: { code: 'invalid_argument', message: 'malformed HTTP request' },
    });
  });

  test('headers over the size limit are 431 resource_exhausted with the JSON error body', async () => {
    const answer = await rawHttp(
      h.baseUrl,
      `GET / HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`,
    );
    expect(answer).toMatch(/^HTTP\/1\.1 431 /);
    expect(JSON.parse(answer.split('\r\n\r\n')[1]!)).toEqual({
      error: { code: 'resource_exhausted', message: 'request headers too large' },
    });
  });
});

describe('malformed requests on the notification service', () => {
  let svc: RunningNotificationApp;
  beforeAll(async () => {
    svc = await startNotificationApp();
  });
  afterAll(async () => {
    await svc.close();
  });

  const send = (metadata: number[]) =>
    Buffer.from([
      ...field(1, utf8('fuzz-user')),
      ...field(2, utf8('t')),
      ...field(3, utf8('b')),
      ...field(4, metadata),
    ]);

  test("a Struct nested past the decoder's limit (60 deep) is INVALID_ARGUMENT on gRPC and 400 on Connect", async () => {
    const body = send(nestedStruct(60));
    const status = await rawUnary(svc.grpcAddress, '/svc.notification.v1.InboxService/Send', body);
    expect(status.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(status.details).toBe('malformed request message');
    const res = await connectPost(
      `${svc.baseUrl}/svc.notification.v1.InboxService/Send`,
      body,
      'application/proto',
    );
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('invalid_argument');
    expect(res.body.message).not.toMatch(/recursion|depth|decode/);
  });

  test('invalid UTF-8 in a JSON title is refused and nothing is stored', async () => {
    const body = Buffer.from([
      ...utf8('{"userId":"utf8-user","title":"'),
      0xff,
      0xfe,
      ...utf8('","body":"b"}'),
    ]);
    const res = await connectPost(
      `${svc.baseUrl}/svc.notification.v1.InboxService/Send`,
      body,
      'application/json',
    );
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('invalid_argument');
    expect((await svc.inboxConnect.countUnread({ userId: 'utf8-user' })).unreadCount).toBe(0);
  });

  test('a well-formed Send still works', async () => {
    await svc.inboxConnect.send({ userId: 'fine-user', title: 'ok', body: 'fine' });
    expect((await svc.inboxConnect.countUnread({ userId: 'fine-user' })).unreadCount).toBe(1);
  });
});
