/**
 * The RPC side of the HTTP/1.1 port: Connect protocol and gRPC-Web requests go to Connect's universal
 * handlers; everything else to the service's route table. It is connect-node's `connectNodeAdapter`
 * plus what the kit needs on this port:
 *
 * - Stream responses send their headers at once (a quiet stream must not look dead to clients and
 *   proxies), not with the first message as connect-node does.
 * - Answers given by the protocol layer before any interceptor ran (a unary request that does not
 *   decode, a wrong HTTP method or content type) are counted in the RPC metrics, and an undecodable
 *   request (Connect reports it as `internal` with the parser's message, on the Connect protocol and
 *   on gRPC-Web alike) is answered `invalid_argument` with a generic message, as on the gRPC port. (A stream reads its request
 *   inside the interceptors: see `errorInterceptor`.)
 * - A client that goes away mid-response is logged at debug level through our logger, never
 *   `console.error`.
 * - Nothing is read before it is authorised: the token and its scope (`RpcAccess`) are checked on
 *   the request headers, and a refused call is answered in its protocol's error format before its
 *   body is read (what the client still sends is dropped, never kept). Then the body's bytes are taken from the
 *   server's `RequestBudget` (all of a declared `Content-Length` at once, else chunk by chunk):
 *   beyond it the call gets RESOURCE_EXHAUSTED (429).
 * - A compressed request (Connect `Content-Encoding` / `Connect-Content-Encoding`, gRPC-Web
 *   `grpc-encoding`) holds what it expands to: Connect decompresses through `budgetedCompressions`,
 *   which inflates within the call's share (`inflateWithin`), found through an AsyncLocalStorage
 *   the port runs each call in (Connect's compression is one object per router, not per call).
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Code, ConnectError, createContextValues, type ConnectRouter } from '@connectrpc/connect';
import type { Compression, UniversalHandler, UniversalServerResponse } from '@connectrpc/connect/protocol';
import {
  compressionBrotli,
  compressionGzip,
  universalRequestFromNodeRequest,
} from '@connectrpc/connect-node';
import { connectCodeName, httpStatusForCode, sendJsonError, type ErrorCodeName } from '../http/errors';
import type { HttpRouteTable } from '../http/routes';
import { parseTarget } from '../http/routes';
import { drainedOrClosed } from '../http/drain';
import type { Logger } from '../logging/logger';
import type { RpcAccess } from './access';
import { admittedKey, countedKey, streamStartKey, transportKey } from './context';
import { MALFORMED_MESSAGE } from './errors';
import type { RpcMetrics } from './interceptors';
import { SERVER_BUSY, inflateWithin, RequestBudget, type RequestShare } from './request-budget';

/** Labels of calls to a path that names no RPC: attacker-chosen paths must not become label values. */
const UNKNOWN = { service: 'unknown', method: 'unknown' } as const;
// `/package.Service/Method`: what an RPC path looks like on either protocol.
const RPC_PATH = /^\/[A-Za-z_][\w.]*\.[A-Za-z_]\w*\/[A-Za-z_]\w*$/;

/** The budget share of the HTTP call being served, for Connect's decompression. */
const callShare = new AsyncLocalStorage<RequestShare>();

const OUTSIDE_A_CALL = new ConnectError('internal error', Code.Internal);

/**
 * Connect's gzip and br, decompressing within the share of the call they serve (`inflateWithin`):
 * a compressed message holds what it expands to, up to the method's limit (`readMaxBytes`). Give
 * these to the router that `createHttpPortHandler` serves.
 */
export function budgetedCompressions(): Compression[] {
  return [compressionGzip, compressionBrotli].map((c) => ({
    name: c.name,
    compress: (bytes) => c.compress(bytes),
    decompress: (bytes, readMaxBytes) => {
      const share = callShare.getStore();
      // Only the port's handler runs Connect's decompression, always inside a call: never unguarded.
      if (!share) return Promise.reject(OUTSIDE_A_CALL);
      return inflateWithin(share, readMaxBytes, c.name, bytes);
    },
  }));
}

/**
 * A gateway route's compressed body (OTLP/HTTP's gzip), decompressed within the share of the request
 * being served, as Connect's decompression is: it holds what it expands to, up to `limit` (its wire
 * bytes alone were counted before, so a few small gzip bodies could hold many times the budget).
 * Outside the port (a route served on its own, as in a unit test) `limit` alone bounds it. Throws
 * `inflateWithin`'s ConnectErrors: SERVER_BUSY, past `limit` RESOURCE_EXHAUSTED, corrupt
 * INVALID_ARGUMENT.
 */
export function inflateRouteBody(limit: number, encoding: string, bytes: Uint8Array): Promise<Uint8Array> {
  const share = callShare.getStore() ?? new RequestBudget(limit).share();
  return inflateWithin(share, limit, encoding, bytes);
}

type Handler = UniversalHandler & { service: { typeName: string }; method: { name: string } };

function isStreamingContentType(contentType: string | null): boolean {
  return contentType !== null && /^application\/(connect\+|grpc-web)/.test(contentType);
}

/** The code and message of a Connect unary error body (`{"code","message"}`). */
function parseConnectErrorJson(bytes: Uint8Array): { code: string; message?: string } | undefined {
  try {
    const parsed = JSON.parse(Buffer.from(bytes).toString('utf8')) as unknown;
    if (parsed && typeof parsed === 'object' && typeof (parsed as { code?: unknown }).code === 'string') {
      return parsed as { code: string; message?: string };
    }
  } catch {
    // Not a Connect error body.
  }
  return undefined;
}

/**
 * True when a protocol-level error means the request did not decode: Connect answers that with
 * `internal` ("parse binary: ...") or, for JSON, `invalid_argument` with the parser's message.
 */
function isDecodeFailure(code: string): boolean {
  return code === 'internal' || code === 'invalid_argument';
}

async function readAll(body: AsyncIterable<Uint8Array> | undefined): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [];
  if (body) for await (const c of body) chunks.push(c);
  return Buffer.concat(chunks);
}

/**
 * A unary answer given before any handler ran: counted, and an undecodable request answered 400
 * `invalid_argument` with the generic message. 405 and 415 (the method is not served that way) are
 * counted as `unimplemented` and carry a reason (Connect sends them without a body).
 */
async function settleRefusedUnary(
  uRes: UniversalServerResponse,
  onCode: (code: ErrorCodeName) => void,
  allow: string,
): Promise<UniversalServerResponse> {
  if (uRes.status === 405 || uRes.status === 415) {
    onCode('unimplemented');
    // Connect leaves these bodies empty; a caller gets the reason in Connect's error format.
    const message =
      uRes.status === 405
        ? `this RPC is served with ${allow} only`
        : 'unsupported content type for this RPC: send Connect (JSON or binary protobuf) or gRPC-Web';
    const body = Buffer.from(JSON.stringify({ code: 'unimplemented', message }));
    const header = new Headers(uRes.header);
    if (uRes.status === 405) header.set('Allow', allow);
    header.set('Content-Type', 'application/json');
    header.set('Content-Length', String(body.byteLength));
    header.delete('Content-Encoding');
    return {
      status: uRes.status,
      header,
      body: (async function* () {
        yield body;
      })(),
    };
  }
  const bytes = await readAll(uRes.body as AsyncIterable<Uint8Array> | undefined);
  const error = parseConnectErrorJson(bytes);
  if (error && isDecodeFailure(error.code)) {
    onCode('invalid_argument');
    const body = Buffer.from(JSON.stringify({ code: 'invalid_argument', message: MALFORMED_MESSAGE }));
    const header = new Headers(uRes.header);
    header.set('Content-Length', String(body.byteLength));
    header.delete('Content-Encoding');
    return {
      status: 400,
      header,
      body: (async function* () {
        yield body;
      })(),
    };
  }
  onCode((error?.code as ErrorCodeName | undefined) ?? 'unknown');
  return {
    ...uRes,
    body: (async function* () {
      yield bytes;
    })(),
  };
}

/** The `grpc-status` and `grpc-message` of gRPC-Web trailers (`name: value` lines). */
function parseGrpcWebTrailer(text: string): { status?: number; message?: string } {
  const out: { status?: number; message?: string } = {};
  for (const line of text.split('\r\n')) {
    const colon = line.indexOf(':');
    const name = line.slice(0, colon).trim().toLowerCase();
    if (name === 'grpc-status') out.status = Number(line.slice(colon + 1).trim());
    if (name === 'grpc-message') out.message = line.slice(colon + 1).trim();
  }
  return out;
}

/**
 * A gRPC-Web answer given before any handler ran (a unary request that does not decode: Connect
 * answers grpc-status 13 with the parser's message in the trailer envelope): counted, and an
 * undecodable request answered grpc-status 3 with the generic message, as on the other protocols.
 */
async function settleRefusedGrpcWeb(
  uRes: UniversalServerResponse,
  onCode: (code: ErrorCodeName) => void,
): Promise<UniversalServerResponse> {
  const bytes = Buffer.from(await readAll(uRes.body as AsyncIterable<Uint8Array> | undefined));
  // The trailers: in the headers of a trailers-only answer, else the body's last envelope (flag 0x80).
  let trailerAt = -1;
  for (let at = 0; at + 5 <= bytes.length; at += 5 + bytes.readUInt32BE(at + 1)) {
    if ((bytes[at]! & 0x80) !== 0) trailerAt = at;
  }
  const headerStatus = uRes.header?.get('grpc-status');
  const trailer =
    headerStatus !== null && headerStatus !== undefined
      ? { status: Number(headerStatus) }
      : trailerAt >= 0
        ? parseGrpcWebTrailer(bytes.subarray(trailerAt + 5).toString('utf8'))
        : {};
  const code = trailer.status === undefined ? 'unknown' : connectCodeName(trailer.status);
  if (!isDecodeFailure(code)) {
    onCode(code);
    return {
      ...uRes,
      body: (async function* () {
        yield bytes;
      })(),
    };
  }
  onCode('invalid_argument');
  const text = Buffer.from(
    `grpc-status: ${Code.InvalidArgument}\r\ngrpc-message: ${encodeURIComponent(MALFORMED_MESSAGE)}\r\n`,
  );
  const envelope = Buffer.alloc(5);
  envelope[0] = 0x80;
  envelope.writeUInt32BE(text.byteLength, 1);
  const body = Buffer.concat([envelope, text]);
  const header = new Headers(uRes.header);
  header.delete('grpc-status');
  header.delete('grpc-message');
  header.delete('Content-Encoding');
  header.set('Content-Length', String(body.byteLength));
  return {
    status: 200,
    header,
    body: (async function* () {
      yield body;
    })(),
  };
}

function nodeHeaders(headers: Headers | undefined): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  headers?.forEach((value, key) => {
    const prev = out[key];
    out[key] = prev === undefined ? value : [...(Array.isArray(prev) ? prev : [prev]), value];
  });
  return out;
}

/** Writes a universal response (a stream's headers may be on the wire already: streamStartKey). */
async function writeResponse(uRes: UniversalServerResponse, res: ServerResponse): Promise<void> {
  const iterator = (uRes.body as AsyncIterable<Uint8Array> | undefined)?.[Symbol.asyncIterator]();
  try {
    if (iterator) {
      for (let chunk = await iterator.next(); chunk.done !== true; chunk = await iterator.next()) {
        if (!res.headersSent) res.writeHead(uRes.status, nodeHeaders(uRes.header));
        if (res.destroyed) break;
        if (!res.write(chunk.value)) await drainedOrClosed(res);
      }
    }
    if (!res.headersSent) res.writeHead(uRes.status, nodeHeaders(uRes.header));
    if (uRes.trailer && !res.destroyed) res.addTrailers(nodeHeaders(uRes.trailer) as Record<string, string>);
    if (!res.destroyed) res.end();
  } finally {
    // Ends the handler's pipeline when the client left early (it sees its aborted signal).
    await iterator?.return?.().catch(() => undefined);
  }
}

/**
 * Answers a call refused on its headers, in the format its protocol's clients read (gRPC and
 * gRPC-Web: a trailers-only answer; Connect streams: an end-stream message; Connect unary: the JSON
 * error with its HTTP status). The body is not read into memory: once the answer is out, Node's
 * server reads what the client still sends and drops it (bounded by `http_request_timeout_ms`), so
 * the client reads the answer (closing at once would reset the connection under it, RFC 9112 9.6)
 * and the connection can be reused.
 */
function refuseUnread(req: IncomingMessage, res: ServerResponse, err: ConnectError): void {
  const contentType = req.headers['content-type'] ?? '';
  const code = connectCodeName(err.code);
  if (/^application\/grpc(-web)?([+;]|$)/.test(contentType)) {
    res.writeHead(200, {
      'Content-Type': contentType,
      'grpc-status': String(err.code),
      'grpc-message': encodeURIComponent(err.rawMessage),
    });
    res.end();
    return;
  }
  if (isStreamingContentType(contentType)) {
    const json = Buffer.from(JSON.stringify({ error: { code, message: err.rawMessage } }));
    const envelope = Buffer.alloc(5);
    envelope[0] = 0x02; // end of stream
    envelope.writeUInt32BE(json.byteLength, 1);
    res.writeHead(200, { 'Content-Type': contentType });
    res.end(Buffer.concat([envelope, json]));
    return;
  }
  res.writeHead(httpStatusForCode(err.code), { 'Content-Type': 'application/json' });
  res.end(JSON.stringify({ code, message: err.rawMessage }));
}

/**
 * A request body whose chunks are taken from `share` as Connect reads them: a chunk that does not
 * fit throws RESOURCE_EXHAUSTED. Written without a generator so that the throw does not end the
 * request stream under it (which would destroy the socket before the answer is written).
 */
function meteredBody(body: AsyncIterable<Uint8Array>, share: RequestShare): AsyncIterable<Uint8Array> {
  return {
    [Symbol.asyncIterator]() {
      const inner = body[Symbol.asyncIterator]();
      return {
        async next() {
          const result = await inner.next();
          if (result.done !== true && !share.take(result.value.byteLength)) throw SERVER_BUSY;
          return result;
        },
        async return() {
          return (await inner.return?.()) ?? { done: true, value: undefined };
        },
      };
    },
  };
}

/**
 * Takes a gateway request's body bytes from `share` as Node's parser hands them to the request
 * (`push`, before any reader sees them), and gives them back when the response closes. A chunk that
 * does not fit is dropped: the request is answered 429 `resource_exhausted` with `Retry-After: 1`
 * (unless the route answered already), the connection closes, and the route's read of the body fails.
 */
function meterArrivals(req: IncomingMessage, res: ServerResponse, share: RequestShare): void {
  // Once the answer is out, what the client still sends is dropped as it arrives (a route that
  // refused the request resumed it): nothing to hold, and no reset under the answer it reads.
  let answered = false;
  res.once('close', () => {
    answered = true;
    share.release();
  });
  const push = req.push;
  req.push = function (chunk: unknown, encoding?: BufferEncoding): boolean {
    if (answered || !Buffer.isBuffer(chunk) || share.take(chunk.length)) {
      return push.call(this, chunk, encoding);
    }
    req.push = push;
    share.release();
    // The route's read of the body fails with this error (it settles; it does not wait forever).
    if (res.headersSent) req.destroy(SERVER_BUSY);
    else {
      res.shouldKeepAlive = false;
      sendJsonError(res, 'resource_exhausted', SERVER_BUSY.rawMessage, {
        headers: { 'Retry-After': '1', Connection: 'close' },
      });
      res.once('finish', () => req.destroy(SERVER_BUSY));
    }
    return false;
  };
}

/** The declared body length of a request, when it has a valid one. */
function contentLength(req: IncomingMessage): number | undefined {
  const raw = req.headers['content-length'];
  return raw !== undefined && /^\d+$/.test(raw) ? Number(raw) : undefined;
}

/** What the HTTP port checks before it reads a request body. */
export interface HttpIntake {
  access: RpcAccess;
  budget: RequestBudget;
  /** The largest request body of the method at `path`, bytes. */
  limitOf(path: string): number;
  /** Told of every call refused before its body was read, with the caller's name when known. */
  onRefused?(path: string, err: ConnectError, caller: string | undefined): void;
}

/** The HTTP port's request handler: Connect RPCs, then the route table. */
export function createHttpPortHandler(
  router: ConnectRouter,
  routes: HttpRouteTable,
  metrics: RpcMetrics,
  logger: Logger,
  intake: HttpIntake,
): (req: IncomingMessage, res: ServerResponse) => void {
  const handlers = new Map(router.handlers.map((h) => [h.requestPath, h as unknown as Handler]));
  return (req, res) => {
    const { path } = parseTarget(req.url);
    const handler = handlers.get(path);
    if (!handler) {
      if (RPC_PATH.test(path) && req.method === 'POST') {
        // An unknown RPC: the route table answers 404 (a Connect client reads `unimplemented`).
        metrics.record(metrics.labels(UNKNOWN.service, UNKNOWN.method, 'http'), 'unimplemented');
      }
      // A gateway route's body is held in the same budget while the route runs, by the bytes that
      // arrived (each route bounds its own body). Not by its declared length: routes that take no
      // token (webhooks, unsubscribe) read before they can authenticate, and 130 connections that
      // declared 1 MiB and sent 11 bytes held the whole budget for a request timeout, every RPC
      // refused.
      const share = intake.budget.share();
      meterArrivals(req, res, share);
      void callShare.run(share, () => routes.dispatch(req, res, logger));
      return;
    }
    const streaming = isStreamingContentType(req.headers['content-type'] ?? null);
    const grpcWeb = /^application\/grpc-web/.test(req.headers['content-type'] ?? '');
    const values = createContextValues().set(transportKey, 'http');
    if (streaming) {
      values.set(streamStartKey, (headers: Headers) => {
        if (res.headersSent || res.destroyed) return;
        res.writeHead(200, nodeHeaders(headers));
        res.flushHeaders();
      });
    }
    const labels = metrics.labels(handler.service.typeName, handler.method.name, 'http');
    const onCode = (code: ErrorCodeName): void => metrics.record(labels, code);
    const handlerRan = (): boolean => values.get(countedKey);
    const refuse = (err: ConnectError, caller: string | undefined): void => {
      onCode(connectCodeName(err.code));
      intake.onRefused?.(path, err, caller);
      refuseUnread(req, res, err);
    };
    const verdict = intake.access.check(path, req.headers.authorization);
    if ('refused' in verdict) return refuse(verdict.refused, verdict.caller?.name);
    // The verdict goes to the handler's context: the auth interceptor reads it, never the token again.
    if (verdict.caller) values.set(admittedKey, verdict.caller.name);
    const share = intake.budget.share();
    res.once('close', () => share.release());
    const declared = contentLength(req);
    // A declared length is taken whole before reading (Connect allocates it at once); one over the
    // method's limit is left to Connect, which refuses it without reading.
    if (declared !== undefined && declared <= intake.limitOf(path) && !share.take(declared)) {
      return refuse(SERVER_BUSY, verdict.caller?.name);
    }
    let uReq: ReturnType<typeof universalRequestFromNodeRequest>;
    try {
      uReq = universalRequestFromNodeRequest(req, res, undefined, values);
    } catch (err) {
      // No authority (an HTTP/1.0 request without Host): Connect cannot build its URL. A throw
      // here would escape the server's request event and end the process.
      logger.debug({ err }, 'rpc request refused before decoding');
      onCode('invalid_argument');
      req.resume();
      res.writeHead(400, { 'Content-Type': 'application/json', Connection: 'close' });
      res.end(JSON.stringify({ code: 'invalid_argument', message: 'the request has no Host header' }));
      return;
    }
    if (
      declared === undefined &&
      uReq.body !== null &&
      typeof uReq.body === 'object' &&
      Symbol.asyncIterator in uReq.body
    ) {
      uReq = { ...uReq, body: meteredBody(uReq.body as AsyncIterable<Uint8Array>, share) };
    }
    callShare
      .run(share, () => handler(uReq))
      .then(async (uRes) => {
        // A stream that got this far reached the interceptors (Connect reads its request inside
        // them), which count it and refuse a malformed request; a unary call decodes before them.
        const settled = handlerRan()
          ? uRes
          : grpcWeb && uRes.status === 200
            ? await settleRefusedGrpcWeb(uRes, onCode)
            : await settleRefusedUnary(uRes, onCode, handler.allowedMethods.join(', '));
        return writeResponse(settled, res);
      })
      .catch((reason: unknown) => {
        const gone = res.destroyed || req.destroyed;
        const code = ConnectError.from(reason).code;
        if (!handlerRan()) onCode(gone ? 'canceled' : connectCodeName(code));
        if (!res.headersSent) {
          res.writeHead(500, { 'Content-Type': 'application/json' });
          res.end(JSON.stringify({ code: 'internal', message: 'internal error' }));
        } else if (!res.writableEnded) res.destroy();
        logger[gone || code === Code.Aborted ? 'debug' : 'warn'](
          { err: reason, rpcService: handler.service.typeName, rpcMethod: handler.method.name },
          'rpc response not completed',
        );
      });
  };
}
