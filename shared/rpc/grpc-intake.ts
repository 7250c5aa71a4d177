/**
 * What the gRPC port decides before it reads a request message: a grpc-js server interceptor, which
 * sees a call's metadata before grpc-js starts reading its body.
 *
 * - Access (`RpcAccess`): a call without a valid token, or outside its token's scopes, is answered at
 *   once (trailers-only) and its stream reset with NO_ERROR (RFC 9113 8.1: the server has answered,
 *   the client stops sending). Nothing of its body is read beyond the HTTP/2 flow-control window.
 * - Size: the request's length prefix (the first five bytes) is checked against its method's limit
 *   before the message is collected; grpc-js's own `grpc.max_receive_message_length` is the largest
 *   method limit, so only the methods that need it accept large messages. A compressed message
 *   (`grpc-encoding: gzip`) is small on the wire whatever it inflates to, so the call's own bound on
 *   decompression (grpc-js's `maxReceiveMessageSize` of the base call) is lowered to its method's
 *   limit: a 100 KB gzip bomb sent to a 4 MiB method stops at 4 MiB, not at the largest method's
 *   limit (36 MB with the default mailer), which 20 such calls turned into 700 MB of memory.
 * - Bytes in flight: every chunk read is taken from the server's `RequestBudget` and given back when
 *   the call ends; a chunk that does not fit refuses its call with RESOURCE_EXHAUSTED.
 *
 * An admitted call's verdict (its token's name) is handed on to the handler's context (`admittedKey`),
 * so the token is checked once per call.
 *
 * The interceptor reaches the call's HTTP/2 stream and its decompression bound through grpc-js's
 * base call (internal fields `stream` and `maxReceiveMessageSize`). If a grpc-js release moves
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
import { SERVER_BUSY, tooLarge, type RequestBudget } from './request-budget';
import { toGrpcStatus } from './errors';

export interface GrpcIntakeOptions {
  access: RpcAccess;
  budget: RequestBudget;
  /** The largest request message of the method at `path`, bytes. */
  limitOf(path: string): number;
  logger: Logger;
  /** Told of every call refused here (for the RPC metrics), with the caller's name when known. */
  onRefused?(path: string, code: Code, caller: string | undefined): void;
}

/** The gRPC length prefix: one flag byte and a four-byte big-endian length. */
const PREFIX_BYTES = 5;

const GRPC_JS_CHANGED = new ConnectError('internal error', Code.Internal);

/** What the intake uses of grpc-js's `BaseServerInterceptingCall` (internal fields). */
interface BaseCall {
  stream: ServerHttp2Stream;
  /** The bound grpc-js puts on a message's decompressed size (`decompressMessage`). */
  maxReceiveMessageSize: number;
}

/** grpc-js's base call under a call, when it still has the fields the intake uses. */
function baseCallOf(call: ServerInterceptingCallInterface): BaseCall | undefined {
  let at: unknown = call;
  for (let depth = 0; depth < 16 && at !== null && typeof at === 'object'; depth++) {
    const { stream, nextCall, maxReceiveMessageSize } = at as {
      stream?: unknown;
      nextCall?: unknown;
      maxReceiveMessageSize?: unknown;
    };
    if (
      stream !== null &&
      typeof stream === 'object' &&
      typeof (stream as ServerHttp2Stream).close === 'function'
    )
      return typeof maxReceiveMessageSize === 'number' ? (at as BaseCall) : undefined;
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
      // Decompression stops at this method's limit (RESOURCE_EXHAUSTED), as the length prefix does.
      base.maxReceiveMessageSize = limit;
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
      stream.once('close', () => {
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
                  'grpc-js changed: a call has no HTTP/2 stream or message size bound; refusing calls',
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
