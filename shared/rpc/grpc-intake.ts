/**
 * What the gRPC port decides before it reads a request message: a grpc-js server interceptor, which
 * sees a call's metadata before grpc-js starts reading its body.
 *
 * - Access (`RpcAccess`): a call without a valid token, or outside its token's scopes, is answered at
 *   once (trailers-only) and its stream reset with NO_ERROR (RFC 9113 8.1: the server has answered,
 *   the client stops sending). Nothing of its body is read beyond the HTTP/2 flow-control window.
 * - Size: the request's length prefix (the first five bytes) is checked against its method's limit
 *   before the message is collected; grpc-js's own `grpc.max_receive_message_length` is the largest
 *   method limit, so only the methods that need it accept large messages.
 * - Bytes in flight: every chunk read is taken from the server's `RequestBudget` and given back when
 *   the call ends; a chunk that does not fit refuses its call with RESOURCE_EXHAUSTED.
 * - Compression: a compressed message (`grpc-encoding: gzip` or `deflate`) is small on the wire
 *   whatever it inflates to, so the call's decompression (grpc-js's `decompressMessage` of the base
 *   call) is replaced by `inflateWithin`: it stops at the method's limit (a 100 KB gzip bomb sent to
 *   a 4 MiB method stops at 4 MiB, not at the largest method's limit, 36 MB with the default mailer)
 *   and the message holds what it expands to in the budget, not its wire bytes (else 20 such calls
 *   held 700 MB that the budget saw as 2 MB). A corrupt compressed message is INVALID_ARGUMENT.
 *
 * - Time: a call has `requestTimeoutMs` (the HTTP port's request timeout) to send its whole request;
 *   after it, DEADLINE_EXCEEDED and the stream is closed. Before, 20,000 calls on one connection that
 *   each sent a length prefix and one byte held about 200 MB for as long as the connection lived.
 *
 * An admitted call's verdict (its token's name) is handed on to the handler's context (`admittedKey`),
 * so the token is checked once per call.
 *
 * The interceptor reaches the call's HTTP/2 stream and its decompression through grpc-js's base call
 * (internal members `stream` and `decompressMessage`). If a grpc-js release moves
 * either, every call is refused with INTERNAL and the cause logged, never served unguarded; the
 * tests see it at once.
 */
import { constants as http2 } from 'node:http2';
import type { ServerHttp2Stream } from 'node:http2';
import {
  ServerInterceptingCall,
  type Metadata,
  type ServerInterceptingCallInterface,
  type ServerInterceptor,
} from '@grpc/grpc-js';
import { Code, ConnectError } from '@connectrpc/connect';
import type { Logger } from '../logging/logger';
import type { RpcAccess } from './access';
import { SERVER_BUSY, inflateWithin, tooLarge, type RequestBudget } from './request-budget';
import { toGrpcStatus } from './errors';

export interface GrpcIntakeOptions {
  access: RpcAccess;
  budget: RequestBudget;
  /** The largest request message of the method at `path`, bytes. */
  limitOf(path: string): number;
  logger: Logger;
  /** Told of every call refused here (for the RPC metrics), with the caller's name when known. */
  onRefused?(path: string, code: Code, caller: string | undefined): void;
  /**
   * Time a call has to send its whole request (every message and the half-close), ms: after it the
   * call is DEADLINE_EXCEEDED, as the HTTP port answers 408 (`server.http_request_timeout_ms`).
   */
  requestTimeoutMs: number;
}

/** The answer to a call whose request did not arrive whole in time (the HTTP port's 408 text). */
const REQUEST_NOT_RECEIVED = new ConnectError('the request was not received in time', Code.DeadlineExceeded);

/** The gRPC length prefix: one flag byte and a four-byte big-endian length. */
const PREFIX_BYTES = 5;

/** The compressions grpc-js decompresses (others it answers UNIMPLEMENTED, as before). */
const GRPC_COMPRESSIONS: ReadonlySet<string> = new Set(['gzip', 'deflate']);

const GRPC_JS_CHANGED = new ConnectError('internal error', Code.Internal);

/** What the intake uses of grpc-js's `BaseServerInterceptingCall` (internal members). */
interface BaseCall {
  stream: ServerHttp2Stream;
  /** A received message (length prefix included) to its decompressed bytes; rejects with a status. */
  decompressMessage(message: Buffer, encoding: string): Buffer | Promise<Uint8Array>;
}

/** grpc-js's base call under a call, when it still has the fields the intake uses. */
function baseCallOf(call: ServerInterceptingCallInterface): BaseCall | undefined {
  let at: unknown = call;
  for (let depth = 0; depth < 16 && at !== null && typeof at === 'object'; depth++) {
    const { stream, nextCall, decompressMessage } = at as {
      stream?: unknown;
      nextCall?: unknown;
      decompressMessage?: unknown;
    };
    if (
      stream !== null &&
      typeof stream === 'object' &&
      typeof (stream as ServerHttp2Stream).close === 'function'
    )
      return typeof decompressMessage === 'function' ? (at as BaseCall) : undefined;
    at = nextCall;
  }
  return undefined;
}

function authorizationOf(metadata: Metadata): string | undefined {
  const value = metadata.get('authorization')[0];
  return typeof value === 'string' ? value : undefined;
}

/**
 * The verdicts of admitted calls, by the metadata object grpc-js hands on to the call's handler: the
 * name of the token admitted. A caller cannot forge an entry (it is no header), and it goes with the
 * call's metadata.
 */
const admitted = new WeakMap<Metadata, string>();

/** The name of the API token the intake admitted a call's `metadata` with, if it admitted one. */
export function admittedCaller(metadata: Metadata): string | undefined {
  return admitted.get(metadata);
}

/** The server interceptor; install it first, so it runs before any other. */
export function grpcIntake(opts: GrpcIntakeOptions): ServerInterceptor {
  const { access, budget, logger } = opts;
  let warned = false;
  return (method, call) => {
    const path = method.path;
    const base = baseCallOf(call);
    const stream = base?.stream;
    const share = budget.share();
    let done = false;
    let caller: string | undefined;
    // Answers the call from here: `call` is the next call down (grpc-js's base call), so the status
    // goes out now, not after a metadata step this interceptor never completes.
    const refuse = (err: ConnectError): void => {
      if (done) return;
      done = true;
      share.release();
      opts.onRefused?.(path, err.code, caller);
      call.sendStatus(toGrpcStatus(err) as Parameters<typeof call.sendStatus>[0]);
      if (stream && !stream.closed) stream.close(http2.NGHTTP2_NO_ERROR);
    };

    if (base && stream) {
      const limit = opts.limitOf(path);
      // A compressed message is inflated within this call's share: it holds what it expands to, up
      // to this method's limit. grpc-js calls the method on the base call (`this.decompressMessage`).
      const decompress = base.decompressMessage.bind(base);
      base.decompressMessage = (message, encoding) => {
        if (!GRPC_COMPRESSIONS.has(encoding)) return decompress(message, encoding);
        return inflateWithin(share, limit, encoding, message.subarray(PREFIX_BYTES)).catch((e: unknown) => {
          const err = ConnectError.from(e);
          refuse(err);
          // grpc-js answers the rejection; the call is answered already, so that is a no-op.
          throw toGrpcStatus(err);
        });
      };
      let prefix: Buffer | undefined;
      let prefixRead = 0;
      // First among the stream's listeners: a chunk refused here never reaches grpc-js's decoder
      // (the refusal cancels the call, and grpc-js drops data of a cancelled call), so a call whose
      // last chunk does not fit can never run its handler after its caller was told it failed.
      stream.prependListener('data', (chunk: Buffer) => {
        if (done) return;
        if (prefixRead < PREFIX_BYTES) {
          let declared: number | undefined;
          if (prefixRead === 0 && chunk.length >= PREFIX_BYTES) {
            prefixRead = PREFIX_BYTES;
            declared = chunk.readUInt32BE(1);
          } else {
            prefix ??= Buffer.alloc(PREFIX_BYTES);
            const n = Math.min(PREFIX_BYTES - prefixRead, chunk.length);
            chunk.copy(prefix, prefixRead, 0, n);
            prefixRead += n;
            if (prefixRead === PREFIX_BYTES) declared = prefix.readUInt32BE(1);
          }
          if (declared !== undefined && declared > limit) return refuse(tooLarge(declared, limit));
        }
        if (!share.take(chunk.length)) refuse(SERVER_BUSY);
      });
      // A call whose request never completes (a length prefix that lies, a body trickled or never
      // ended) would hold its stream and its bytes for as long as the connection lives.
      const receiving = setTimeout(() => refuse(REQUEST_NOT_RECEIVED), opts.requestTimeoutMs);
      receiving.unref();
      stream.once('end', () => clearTimeout(receiving));
      stream.once('close', () => {
        clearTimeout(receiving);
        done = true;
        share.release();
      });
    }

    return new ServerInterceptingCall(call, {
      start: (next) =>
        next({
          onReceiveMetadata: (metadata, nextMetadata) => {
            if (!stream) {
              if (!warned)
                logger.error(
                  'grpc-js changed: a call has no HTTP/2 stream or decompressMessage; refusing calls',
                );
              warned = true;
              return refuse(GRPC_JS_CHANGED);
            }
            const verdict = access.check(path, authorizationOf(metadata));
            caller = verdict.caller?.name;
            if ('refused' in verdict) return refuse(verdict.refused);
            // The verdict goes with the metadata to the handler's context (grpc-adapter.ts).
            if (caller !== undefined) admitted.set(metadata, caller);
            nextMetadata(metadata);
          },
        }),
    });
  };
}
