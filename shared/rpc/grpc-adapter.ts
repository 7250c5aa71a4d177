/**
 * Serves a Connect `ServiceImpl` on a `@grpc/grpc-js` server.
 *
 * The service is implemented once, against protoc-gen-es descriptors; this adapter builds the grpc-js
 * `ServiceDefinition` from the descriptor (binary protobuf both ways) and runs each call through
 * Connect's own invocation path (`invokeUnaryImplementation` / `transformInvokeImplementation`), so the
 * same interceptors see the same requests on both ports. Request metadata becomes the handler's
 * request headers, the grpc deadline its timeout, client cancellation aborts its signal; response
 * headers and trailers go back as metadata; a ConnectError keeps its code and message.
 *
 * Unary and server-streaming methods are supported (the contracts use nothing else).
 */
import {
  Metadata,
  type sendUnaryData,
  type ServerUnaryCall,
  type ServerWritableStream,
  type ServiceDefinition,
  type UntypedServiceImplementation,
  type MethodDefinition,
} from '@grpc/grpc-js';
import {
  create,
  fromBinary,
  isMessage,
  toBinary,
  type DescMessage,
  type DescMethod,
  type DescService,
} from '@bufbuild/protobuf';
import {
  Code,
  ConnectError,
  createContextValues,
  createHandlerContext,
  createServiceImplSpec,
  type ContextValues,
  type HandlerContext,
  type Interceptor,
  type MethodImplSpec,
  type ServiceImpl,
  type UnaryRequest,
  type UnaryResponse,
} from '@connectrpc/connect';
import { createAsyncIterable, transformInvokeImplementation } from '@connectrpc/connect/protocol';
import { CLIENT_CANCELLED, MALFORMED_MESSAGE, toConnectError, toGrpcStatus } from './errors';
import { admittedKey, transportKey } from './context';
import { admittedCaller } from './grpc-intake';
import { tooLarge } from './request-budget';
import type { Logger } from '../logging/logger';

// Pre-allocated abort reasons: `abort()` without a reason allocates a DOMException per call, which
// measured at 25-30% of unary throughput (DESIGN.md).
const CALL_DONE = new ConnectError('call completed', Code.Canceled);
const DEADLINE_EXCEEDED = new ConnectError('the operation timed out', Code.DeadlineExceeded);

export interface GrpcAdapterOptions {
  interceptors: Interceptor[];
  logger: Logger;
  /**
   * Told of every call answered before the interceptors ran (a request that does not decode), so
   * the RPC metrics count it too.
   */
  onRejected?: (service: DescService, method: DescMethod, code: Code) => void;
  /** Called when a call starts and ends, so shutdown can wait for in-flight calls. */
  tracker?: { begin(): void; end(): void };
}

/** Binary encoding; plain init objects (as grpc-js clients pass them) are completed with `create`. */
function serialize(schema: DescMessage, m: unknown): Buffer {
  const message = isMessage(m, schema) ? m : create(schema, m as never);
  const bytes = toBinary(schema, message);
  // A view, not a copy: toBinary's array is ours alone.
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/** Builds the grpc-js service definition of a protobuf-es service descriptor. */
export function createGrpcServiceDefinition(service: DescService): ServiceDefinition {
  const definition: Record<string, MethodDefinition<unknown, unknown>> = {};
  for (const method of service.methods) {
    definition[method.localName] = {
      path: `/${service.typeName}/${method.name}`,
      requestStream: method.methodKind === 'client_streaming' || method.methodKind === 'bidi_streaming',
      responseStream: method.methodKind === 'server_streaming' || method.methodKind === 'bidi_streaming',
      requestSerialize: (m: unknown) => serialize(method.input, m),
      requestDeserialize: (b: Buffer) => fromBinary(method.input, b),
      responseSerialize: (m: unknown) => serialize(method.output, m),
      responseDeserialize: (b: Buffer) => fromBinary(method.output, b),
      originalName: method.name,
    };
  }
  return definition as ServiceDefinition;
}

/**
 * What the server-side deserializer returns for bytes that are not a valid request message, or for
 * a message over its method's size limit once decompressed (`refusal`).
 */
class MalformedRequest {
  constructor(
    readonly cause: unknown,
    readonly refusal?: ConnectError,
  ) {}
}

/**
 * The definition the server registers: the same as `createGrpcServiceDefinition`, except that a
 * request that does not decode (random bytes, truncated, invalid UTF-8 in a string, nested past the
 * recursion limit) becomes a MalformedRequest instead of a throw. grpc-js answers a throwing
 * deserializer with INTERNAL; the handler answers INVALID_ARGUMENT instead (it is the caller's fault).
 * With `limitOf`, a message larger than its method's limit (after decompression: the wire size was
 * checked before reading, see grpc-intake.ts) is answered RESOURCE_EXHAUSTED without being decoded.
 */
export function createGrpcServerDefinition(
  service: DescService,
  limitOf?: (method: DescMethod) => number,
): ServiceDefinition {
  const definition = createGrpcServiceDefinition(service) as Record<
    string,
    MethodDefinition<unknown, unknown>
  >;
  for (const method of service.methods) {
    const d = definition[method.localName]!;
    const limit = limitOf?.(method) ?? Infinity;
    d.requestDeserialize = (b: Buffer) => {
      if (b.length > limit) return new MalformedRequest(undefined, tooLarge(b.length, limit));
      try {
        return fromBinary(method.input, b);
      } catch (err) {
        return new MalformedRequest(err);
      }
    };
  }
  return definition as ServiceDefinition;
}

/** INVALID_ARGUMENT for an undecodable request, logged at debug with the parser's message. */
function malformed(
  request: MalformedRequest,
  service: DescService,
  method: DescMethod,
  opts: GrpcAdapterOptions,
): ConnectError {
  if (request.refusal) {
    opts.onRejected?.(service, method, request.refusal.code);
    return request.refusal;
  }
  opts.logger.debug(
    {
      rpcService: service.typeName,
      rpcMethod: method.name,
      transport: 'grpc',
      reason: String(request.cause),
    },
    'malformed request refused',
  );
  opts.onRejected?.(service, method, Code.InvalidArgument);
  return new ConnectError(MALFORMED_MESSAGE, Code.InvalidArgument);
}

/**
 * Resolves once the call can take more data or was cancelled, and leaves no listener behind (a
 * `Promise.race` of two `once()`s leaves the loser attached for the life of the call).
 */
function drainedOrCancelled(call: ServerWritableStream<unknown, unknown>): Promise<void> {
  if (call.cancelled) return Promise.resolve();
  return new Promise((resolve) => {
    const done = (): void => {
      call.removeListener('drain', done);
      call.removeListener('cancelled', done);
      resolve();
    };
    call.on('drain', done);
    call.on('cancelled', done);
  });
}

/** grpc-js metadata as Fetch-API headers (binary values base64, as the gRPC HTTP/2 spec carries them). */
function metadataToHeaders(md: Metadata): Headers {
  const headers = new Headers();
  for (const [key, value] of Object.entries(md.getMap())) {
    headers.append(key, typeof value === 'string' ? value : value.toString('base64'));
  }
  return headers;
}

function headersToMetadata(headers: Headers | undefined): Metadata | undefined {
  let md: Metadata | undefined;
  headers?.forEach((value, key) => {
    md ??= new Metadata();
    if (key.endsWith('-bin')) md.add(key, Buffer.from(value, 'base64'));
    else md.add(key, value);
  });
  return md;
}

function timeoutOf(deadline: Date | number): number | undefined {
  const at = deadline instanceof Date ? deadline.getTime() : deadline;
  return Number.isFinite(at) ? Math.max(0, at - Date.now()) : undefined;
}

/** Builds the grpc-js handlers for `impl`; methods missing from `impl` answer UNIMPLEMENTED. */
export function createGrpcHandlers<S extends DescService>(
  service: S,
  impl: Partial<ServiceImpl<S>>,
  opts: GrpcAdapterOptions,
): UntypedServiceImplementation {
  const spec = createServiceImplSpec(service, impl);
  const handlers: UntypedServiceImplementation = {};
  for (const method of service.methods) {
    const methodSpec = spec.methods[method.localName];
    if (!methodSpec) continue;
    switch (methodSpec.kind) {
      case 'unary':
        handlers[method.localName] = unaryHandler(service, method, methodSpec, opts);
        break;
      case 'server_streaming':
        handlers[method.localName] = serverStreamHandler(service, method, methodSpec, opts);
        break;
      default:
        throw new Error(
          `${service.typeName}.${method.name}: ${methodSpec.kind} is not supported by the adapter`,
        );
    }
  }
  return handlers;
}

function contextFor(service: DescService, method: DescMethod, metadata: Metadata, deadline: Date | number) {
  return createHandlerContext({
    service,
    method,
    protocolName: 'grpc',
    requestMethod: 'POST',
    url: `/${service.typeName}/${method.name}`,
    timeoutMs: timeoutOf(deadline),
    requestHeader: metadataToHeaders(metadata),
    contextValues: grpcContextValues(metadata),
  });
}

/** A gRPC call's context values: its transport and the intake's verdict on its token. */
function grpcContextValues(metadata: Metadata): ContextValues {
  const values = createContextValues().set(transportKey, 'grpc');
  const caller = admittedCaller(metadata);
  if (caller !== undefined) values.set(admittedKey, caller);
  return values;
}

/** Wraps `next` in the interceptors, the first outermost (Connect's order), once per method. */
function composeInterceptors<T>(next: T, interceptors: readonly Interceptor[]): T {
  return interceptors.reduceRight((fn, interceptor) => interceptor(fn as never) as T, next);
}

/**
 * Per-call state of a unary gRPC call. Request headers, response metadata and the abort signal are
 * created only when an interceptor or the handler reads them: most calls never do, and these
 * allocations (three `Headers`, two `AbortController`s and their listeners in Connect's generic
 * context) measured as the largest share of the adapter's overhead.
 */
class LazyUnaryCall {
  readonly values: ContextValues;
  responseHeader: Headers | undefined;
  responseTrailer: Headers | undefined;
  /** The response object the implementation step returned, to tell it from an interceptor's own. */
  response: UnaryResponse | undefined;
  private header: Headers | undefined;
  private controller: AbortController | undefined;
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly call: ServerUnaryCall<unknown, unknown>) {
    this.values = grpcContextValues(call.metadata);
  }

  get requestHeader(): Headers {
    return (this.header ??= metadataToHeaders(this.call.metadata));
  }

  get signal(): AbortSignal {
    if (!this.controller) {
      const controller = (this.controller = new AbortController());
      if (this.call.cancelled) controller.abort(CLIENT_CANCELLED);
      else this.call.once('cancelled', () => controller.abort(CLIENT_CANCELLED));
      const timeout = timeoutOf(this.call.getDeadline());
      if (timeout !== undefined) this.timer = setTimeout(() => controller.abort(DEADLINE_EXCEEDED), timeout);
    }
    return this.controller.signal;
  }

  timeoutMs = (): number | undefined => timeoutOf(this.call.getDeadline());

  finish(): void {
    if (this.timer) clearTimeout(this.timer);
    this.controller?.abort(CALL_DONE);
  }
}

function unaryHandler(
  service: DescService,
  method: DescMethod,
  spec: MethodImplSpec,
  opts: GrpcAdapterOptions,
) {
  if (spec.kind !== 'unary') throw new Error('not a unary method');
  const url = `/${service.typeName}/${method.name}`;
  const output = method.output;
  const impl = spec.impl as (req: unknown, ctx: HandlerContext) => unknown;
  type Lazy = { lazy: LazyUnaryCall };
  // The innermost step: call the implementation with a HandlerContext built from the (possibly
  // interceptor-modified) request, and return a response whose metadata is lazy too.
  const invoke = async (req: UnaryRequest & Lazy): Promise<UnaryResponse> => {
    const lazy = req.lazy;
    const ctx: HandlerContext = {
      method,
      service,
      requestMethod: 'POST',
      protocolName: 'grpc',
      url,
      values: req.contextValues,
      timeoutMs: lazy.timeoutMs,
      get signal() {
        return req.signal;
      },
      get requestHeader() {
        return req.header;
      },
      get responseHeader() {
        return (lazy.responseHeader ??= new Headers());
      },
      get responseTrailer() {
        return (lazy.responseTrailer ??= new Headers());
      },
    };
    const result = await impl(req.message, ctx);
    const message = isMessage(result, output) ? result : create(output, result as never);
    return (lazy.response = {
      stream: false,
      service,
      method: method as never,
      message,
      get header() {
        return (lazy.responseHeader ??= new Headers());
      },
      get trailer() {
        return (lazy.responseTrailer ??= new Headers());
      },
    });
  };
  const chain = composeInterceptors(
    invoke as (req: UnaryRequest) => Promise<UnaryResponse>,
    opts.interceptors as Interceptor[],
  );

  return (call: ServerUnaryCall<unknown, unknown>, callback: sendUnaryData<unknown>) => {
    if (call.request instanceof MalformedRequest) {
      callback(toGrpcStatus(malformed(call.request, service, method, opts)));
      return;
    }
    opts.tracker?.begin();
    const lazy = new LazyUnaryCall(call);
    const req = {
      stream: false as const,
      service,
      method: method as never,
      requestMethod: 'POST',
      url,
      message: call.request as never,
      contextValues: lazy.values,
      lazy,
      get signal() {
        return lazy.signal;
      },
      get header() {
        return lazy.requestHeader;
      },
    };
    // One continuation per outcome, each ending the call's state itself (no `finally` promise).
    const ended = (): void => {
      lazy.finish();
      opts.tracker?.end();
    };
    chain(req).then(
      (res) => {
        try {
          // An interceptor may have returned its own response object with its own metadata.
          const ours = res === lazy.response;
          const header = headersToMetadata(ours ? lazy.responseHeader : res.header);
          const trailer = headersToMetadata(ours ? lazy.responseTrailer : res.trailer);
          if (header) call.sendMetadata(header);
          callback(null, res.message, trailer);
        } finally {
          ended();
        }
      },
      (err: unknown) => {
        try {
          callback(toGrpcStatus(toConnectError(err, opts.logger, { method: method.name })));
        } finally {
          ended();
        }
      },
    );
  };
}

function serverStreamHandler(
  service: DescService,
  method: DescMethod,
  spec: MethodImplSpec,
  opts: GrpcAdapterOptions,
) {
  return (call: ServerWritableStream<unknown, unknown>) => {
    if (call.request instanceof MalformedRequest) {
      call.emit('error', toGrpcStatus(malformed(call.request, service, method, opts)));
      return;
    }
    opts.tracker?.begin();
    const ctx = contextFor(service, method, call.metadata, call.getDeadline());
    let cancelled = false;
    const onCancel = () => {
      cancelled = true;
      ctx.abort(CLIENT_CANCELLED);
    };
    call.once('cancelled', onCancel);
    const run = async () => {
      const output = transformInvokeImplementation(
        spec as never,
        ctx,
        opts.interceptors,
      )(createAsyncIterable([call.request as never]));
      // Response headers go out at once, not with the first message: a quiet stream (a watch with
      // nothing to tell yet) must not look dead to clients and proxies waiting for headers. So a
      // streaming handler has no response headers of its own; what it has to say at the end goes
      // in the trailers.
      call.sendMetadata(headersToMetadata(ctx.responseHeader) ?? new Metadata());
      for await (const message of output) {
        if (cancelled) break;
        // Respect HTTP/2 flow control: a slow reader pauses the handler instead of growing a buffer.
        if (!call.write(message)) await drainedOrCancelled(call);
      }
      if (!cancelled) call.end(headersToMetadata(ctx.responseTrailer));
    };
    run()
      .catch((err: unknown) => {
        if (cancelled) return;
        call.emit('error', toGrpcStatus(toConnectError(err, opts.logger, { method: method.name })));
      })
      .finally(() => {
        call.removeListener('cancelled', onCancel);
        ctx.abort(CALL_DONE);
        opts.tracker?.end();
      });
  };
}
