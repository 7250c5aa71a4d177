/**
 * Random HTTP requests for the fuzzer: any method, path, query, headers and body, sent with
 * `node:http` (which, unlike `fetch`, lets a test send any method token, a body on GET, a lying
 * `Content-Encoding`, and headers in any order), and the answer read with a size cap and a deadline.
 */
import { request, type Agent } from 'node:http';
import fc from 'fast-check';
import type { Jose } from '../../../shared/auth/jose';

/** One generated request. */
export interface HttpInput {
  readonly method: string;
  /** Path and query, already encoded as it goes on the wire. */
  readonly target: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: Buffer;
  /** What was odd about it, for the failure message. */
  readonly notes: readonly string[];
}

/** How one request ended. */
export interface HttpAnswer {
  /** The status, or 0 when no response came (connection reset, deadline). */
  readonly status: number;
  readonly contentType: string;
  /** The first bytes of the body (event streams are left after their headers). */
  readonly body: string;
  /** Why no response came. */
  readonly error?: string;
}

/** Longest a fuzzed HTTP request may take before it counts as a hang. */
export const HTTP_DEADLINE_MS = 15_000;

/** The first bytes of a response body kept for the checks. */
const BODY_CAP = 16 * 1024;

/** Sends `input` to `baseUrl` (`http://127.0.0.1:port`) through `agent`. */
export function send(baseUrl: string, input: HttpInput, agent: Agent): Promise<HttpAnswer> {
  const url = new URL(baseUrl);
  return new Promise((resolve) => {
    let done = false;
    const finish = (answer: HttpAnswer) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      req.destroy();
      resolve(answer);
    };
    const req = request({
      host: url.hostname,
      port: url.port,
      method: input.method,
      path: input.target,
      headers: { ...input.headers, 'content-length': String(input.body.length) },
      agent,
    });
    const timer = setTimeout(
      () => finish({ status: 0, contentType: '', body: '', error: 'no answer before the deadline' }),
      HTTP_DEADLINE_MS,
    );
    req.on('response', (res) => {
      const contentType = String(res.headers['content-type'] ?? '');
      // An event stream never ends by itself: its headers are the answer.
      if (contentType.startsWith('text/event-stream')) {
        finish({ status: res.statusCode ?? 0, contentType, body: '' });
        return;
      }
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (chunk: Buffer) => {
        if (size < BODY_CAP) chunks.push(chunk);
        size += chunk.length;
      });
      res.on('end', () =>
        finish({
          status: res.statusCode ?? 0,
          contentType,
          body: Buffer.concat(chunks).subarray(0, BODY_CAP).toString('utf8'),
        }),
      );
      res.on('error', (err) =>
        finish({ status: res.statusCode ?? 0, contentType, body: '', error: err.message }),
      );
    });
    req.on('error', (err) => finish({ status: 0, contentType: '', body: '', error: err.message }));
    req.end(input.body);
  });
}

/** Bearer tokens a caller might send: valid, expired, forged, `alg: none`, garbage, oversized. */
export async function authorizationValues(
  jose: Jose,
  opts: { apiToken: string; jwtSecret: string },
): Promise<string[]> {
  const key = new TextEncoder().encode(opts.jwtSecret);
  const wrong = new TextEncoder().encode('x'.repeat(40));
  const now = Math.floor(Date.now() / 1000);
  const sign = (claims: Record<string, unknown>, secret: Uint8Array) =>
    new jose.SignJWT(claims).setProtectedHeader({ alg: 'HS256' }).sign(secret);
  const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
  const valid = await sign({ sub: 'fuzz-user', exp: now + 3600 }, key);
  return [
    '',
    `Bearer ${opts.apiToken}`,
    `Bearer ${valid}`,
    `Bearer ${await sign({ sub: 'fuzz-user', exp: now - 3600 }, key)}`, // expired
    `Bearer ${await sign({ sub: 'fuzz-user', exp: now + 3600 }, wrong)}`, // forged
    `Bearer ${await sign({ exp: now + 3600 }, key)}`, // no sub
    `Bearer ${await sign({ sub: '\u0000\u202e', exp: now + 3600 }, key)}`, // control characters in sub
    `Bearer ${await sign({ sub: 'x'.repeat(5000), exp: now + 3600 }, key)}`, // huge sub
    `Bearer ${b64({ alg: 'none' })}.${b64({ sub: 'fuzz-user', exp: now + 3600 })}.`, // alg none
    `Bearer ${b64({ alg: 'RS256', kid: '../../etc' })}.${b64({ sub: 'a' })}.c2ln`, // no such key
    `Bearer ${valid.split('.').slice(0, 2).join('.')}`, // two segments
    'Bearer %%%.%%%.%%%',
    'Bearer ',
    'Bearer',
    'Basic dXNlcjpwYXNz',
    `Bearer ${'A'.repeat(12_000)}`,
    'bearer lower-case-scheme',
  ];
}

/** Path segments standing in for a `:param`: plausible, hostile, badly %-encoded, huge. */
const SEGMENTS = fc.oneof(
  fc.stringMatching(/^[A-Za-z0-9_-]{1,24}$/),
  fc.constantFrom(
    'twilio',
    'sendgrid',
    'apns',
    '00000000-0000-0000-0000-000000000000',
    '%zz',
    '%',
    '%00',
    '%c3%28', // %-encoded invalid UTF-8
    '%2F..%2F..%2Fetc%2Fpasswd',
    '..',
    '.',
    '%20',
    '-1',
    '9'.repeat(40),
  ),
  fc.string({ maxLength: 20 }).map((s) => encodeURIComponent(s)),
  fc.integer({ min: 1000, max: 8000 }).map((n) => 'a'.repeat(n)),
);

/** A route to aim at: its path pattern and the methods it serves. */
export interface RouteTarget {
  readonly path: string;
  readonly methods: readonly string[];
}

const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'TRACE', 'PROPFIND', 'FUZZ'];

/**
 * A method and path: mostly a route's own method on its pattern with random `:param`s (so requests
 * get past the 404 and 405 into the handlers), else any method, a mangled path, or a random one.
 */
export function methodAndPathArb(
  routes: readonly RouteTarget[],
): fc.Arbitrary<{ method: string; path: string }> {
  const fill = (pattern: string) =>
    fc
      .tuple(...pattern.split('/').map((seg) => (seg.startsWith(':') ? SEGMENTS : fc.constant(seg))))
      .map((segs) => segs.join('/'));
  const aimed = fc
    .constantFrom(...routes)
    .chain((r) =>
      fc.tuple(
        fc.oneof(
          { weight: 4, arbitrary: fc.constantFrom(...r.methods) },
          { weight: 1, arbitrary: fc.constantFrom(...METHODS) },
        ),
        fill(r.path),
      ),
    )
    .map(([method, path]) => ({ method, path }));
  const anyMethod = fc.constantFrom(...METHODS);
  const mangled = fc
    .tuple(anyMethod, fc.constantFrom(...routes), SEGMENTS)
    .map(([method, r, extra]) => ({ method, path: `${r.path}/${extra}` }));
  const random = fc
    .tuple(anyMethod, fc.array(SEGMENTS, { minLength: 1, maxLength: 4 }))
    .map(([method, segs]) => ({ method, path: `/${segs.join('/')}` }));
  const odd = fc
    .tuple(anyMethod, fc.constantFrom('//', '/./', '/%2e%2e/', '/admin/../metrics', '/*'))
    .map(([method, path]) => ({ method, path }));
  return fc.oneof(
    { weight: 8, arbitrary: aimed },
    { weight: 1, arbitrary: mangled },
    { weight: 1, arbitrary: random },
    { weight: 1, arbitrary: odd },
  );
}

const QUERY = fc.oneof(
  { weight: 3, arbitrary: fc.constant('') },
  {
    weight: 3,
    arbitrary: fc
      .array(
        fc.tuple(
          fc.constantFrom('limit', 'cursor', 'since', 'access_token', 'token', 'format', 'filter', 'x'),
          fc.oneof(
            fc.constantFrom('', '-1', '0', '1e9', 'NaN', '%zz', '%00', 'abc', '9'.repeat(30), 'true'),
            fc.string({ maxLength: 12 }).map((s) => encodeURIComponent(s)),
            fc.integer({ min: 1000, max: 6000 }).map((n) => 'q'.repeat(n)),
          ),
        ),
        { maxLength: 4 },
      )
      .map((pairs) => `?${pairs.map(([k, v]) => `${k}=${v}`).join('&')}`),
  },
);

const CONTENT_TYPES = [
  undefined,
  'application/json',
  'application/json; charset=utf-8',
  'application/json; charset=latin1',
  'application/x-www-form-urlencoded',
  'application/x-protobuf',
  'application/proto',
  'application/connect+proto',
  'application/connect+json',
  'application/grpc-web+proto',
  'application/grpc',
  'text/plain',
  'multipart/form-data; boundary=xyz',
  'garbage',
  '',
];

/** Bodies: none, random bytes, random JSON, broken JSON, deep JSON, forms, invalid UTF-8, oversized. */
function bodyArb(maxBodyBytes: number): fc.Arbitrary<{ body: Buffer; note?: string }> {
  return fc.oneof(
    { weight: 4, arbitrary: fc.constant({ body: Buffer.alloc(0) }) },
    { weight: 3, arbitrary: fc.uint8Array({ maxLength: 200 }).map((b) => ({ body: Buffer.from(b) })) },
    { weight: 3, arbitrary: fc.json({ maxDepth: 4 }).map((j) => ({ body: Buffer.from(j) })) },
    {
      weight: 2,
      arbitrary: fc
        .constantFrom(
          '{',
          '{"a":',
          '[1,2',
          '{"userId":}',
          'null',
          '"',
          '{"a":"\\ud800"}',
          '{"__proto__":{"x":1}}',
        )
        .map((s) => ({ body: Buffer.from(s), note: 'bad JSON' })),
    },
    {
      weight: 1,
      arbitrary: fc
        .integer({ min: 100, max: 20_000 })
        .map((d) => ({ body: Buffer.from('['.repeat(d) + ']'.repeat(d)), note: `JSON nested ${d} deep` })),
    },
    {
      weight: 1,
      arbitrary: fc
        .array(fc.tuple(fc.string({ maxLength: 10 }), fc.string({ maxLength: 20 })), { maxLength: 6 })
        .map((pairs) => ({ body: Buffer.from(new URLSearchParams(pairs).toString()) })),
    },
    {
      weight: 1,
      arbitrary: fc.constant({
        body: Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xc3, 0x28, 0x22, 0x7d]),
        note: 'invalid UTF-8',
      }),
    },
    {
      weight: 1,
      arbitrary: fc
        .integer({ min: maxBodyBytes + 1, max: maxBodyBytes * 2 })
        .map((n) => ({ body: Buffer.alloc(n, 0x61), note: `oversized (${n} bytes)` })),
    },
  );
}

/** Random requests to `routes` (and to paths near them). */
export function requestArb(
  routes: readonly RouteTarget[],
  authorizations: readonly string[],
  maxBodyBytes: number,
): fc.Arbitrary<HttpInput> {
  return fc
    .record({
      target: methodAndPathArb(routes),
      query: QUERY,
      contentType: fc.constantFrom(...CONTENT_TYPES),
      authorization: fc.constantFrom(...authorizations),
      extra: fc.subarray([
        ['content-encoding', 'gzip'],
        ['accept', 'text/event-stream'],
        ['accept', '*/*;q=garbage'],
        ['connect-protocol-version', '7'],
        ['x-twilio-signature', 'bm90IGEgc2lnbmF0dXJl'],
        ['x-twilio-email-event-webhook-signature', 'garbage'],
        ['x-twilio-email-event-webhook-timestamp', '-1'],
        ['last-event-id', '%zz'],
        ['x-forwarded-for', '::1, 10.0.0.1, ' + 'a'.repeat(300)],
        ['cookie', 'session=' + 'c'.repeat(2000)],
      ] as const),
      body: bodyArb(maxBodyBytes),
    })
    .map((r) => {
      const headers: Record<string, string> = {};
      if (r.contentType !== undefined) headers['content-type'] = r.contentType;
      if (r.authorization !== '') headers.authorization = r.authorization;
      for (const [k, v] of r.extra) headers[k] = v;
      const notes = [...(r.body.note ? [r.body.note] : []), ...r.extra.map(([k]) => k)];
      return { method: r.target.method, target: r.target.path + r.query, headers, body: r.body.body, notes };
    });
}

/** A short description of a request for a failure message. */
export function describeRequest(input: HttpInput): string {
  const target = input.target.length > 120 ? `${input.target.slice(0, 120)}...` : input.target;
  const auth = input.headers.authorization ? ` auth=${input.headers.authorization.slice(0, 30)}` : '';
  const notes = input.notes.length > 0 ? ` (${input.notes.join(', ')})` : '';
  return `${input.method} ${target} type=${input.headers['content-type'] ?? '-'}${auth} body=${input.body.length}B${notes}`;
}
