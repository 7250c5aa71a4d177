/**
 * The RPC server kit: one process, two ports.
 *
 * - gRPC port (`@grpc/grpc-js`): every registered service through the generic adapter, plus
 *   `grpc.health.v1.Health` and server reflection.
 * - HTTP/1.1 port (`@connectrpc/connect-node`): the same implementations for the Connect protocol
 *   (JSON and binary) and gRPC-Web; everything else falls through to the gateway routes.
 *
 * Both ports share the interceptors (metrics, logging, auth, errors), the access rules (API tokens
 * and each service's scope table, checked on the headers before any body is read), the per-method
 * request size limits and one budget of request bytes in flight.
 * Shutdown is graceful: NOT_SERVING first, a drain delay, stop accepting, in-flight unary calls finish,
 * open streams end with UNAVAILABLE, then connections close (forced at the deadline).
 */
import {
  createServer,
  type IncomingMessage,
  type Server as HttpServer,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { Server as GrpcServer, ServerCredentials } from '@grpc/grpc-js';
import type { Socket } from 'node:net';
import type { DescMethod, DescService } from '@bufbuild/protobuf';
import {
  Code,
  ConnectError,
  createConnectRouter,
  createServiceImplSpec,
  type HandlerContext,
  type Interceptor,
  type ServiceImpl,
} from '@connectrpc/connect';
import type { Registry } from 'prom-client';
import { createGrpcHandlers, createGrpcServerDefinition } from './grpc-adapter';
import { grpcIntake } from './grpc-intake';
import { RpcAccess, rpcPath, type MethodScopes } from './access';
import { RequestBudget } from './request-budget';
import { ApiTokens, type ApiTokenConfig } from '../auth/api-tokens';
import {
  authInterceptor,
  errorInterceptor,
  loggingInterceptor,
  metricsInterceptor,
  RpcMetrics,
} from './interceptors';
import { addReflection } from './reflection';
import { codeName } from './errors';
import { streamStartKey } from './context';
import { budgetedCompressions, createHttpPortHandler } from './http-port';
import { ServingStatusReporter } from './grpc-health';
import { HttpRouteTable, type Route } from '../http/routes';
import { answerClientError, sendJsonError } from '../http/errors';
import { MetricsCollector } from '../monitoring';
import type { Logger } from '../logging/logger';
import type { ServerConfig } from '../config';

/** A service and its implementation; methods left out answer UNIMPLEMENTED. */
export interface ServiceRegistration<S extends DescService = DescService> {
  service: S;
  impl: Partial<ServiceImpl<S>>;
  /**
   * The scope of each method (`RpcAccess`). Without a table every method needs a token with every
   * scope (test and bench servers).
   */
  scopes?: MethodScopes<S>;
  /** Methods that accept requests larger than the server's `maxRequestBytes`, bytes by method. */
  maxRequestBytes?: { readonly [K in keyof S['method']]?: number };
}

/** What a registration may set besides the service and its implementation. */
export type RegistrationOptions<S extends DescService> = Pick<
  ServiceRegistration<S>,
  'scopes' | 'maxRequestBytes'
>;

/** Helper that keeps the service/impl/scopes pairing type-checked. */
export function registration<S extends DescService>(
  service: S,
  impl: Partial<ServiceImpl<S>>,
  options: RegistrationOptions<S> = {},
): ServiceRegistration {
  return { service, impl, ...options } as unknown as ServiceRegistration;
}

export interface RpcServerOptions {
  /** Process name for logs. */
  name: string;
  logger: Logger;
  /** The process's Prometheus registry; RPC metrics are registered on it. */
  registry: Registry;
  /** The monitoring library's collector the RPC metrics are created through (one on `registry` by default). */
  metrics?: MetricsCollector;
  host: string;
  /** 0 picks a free port (tests). */
  grpcPort: number;
  httpPort: number;
  /**
   * Bearer tokens accepted for RPCs (plain: every scope; or named with scopes); empty means open
   * (logged once as a warning).
   */
  apiTokens: readonly ApiTokenConfig[];
  /** Largest request message/body accepted, in bytes (a registration may raise it per method). */
  maxRequestBytes: number;
  /**
   * Request bytes held at once by all calls of both ports; beyond it RESOURCE_EXHAUSTED. Never less
   * than the largest method limit, so one request of every size accepted fits.
   */
  maxInFlightRequestBytes?: number;
  /** Time between NOT_SERVING and closing the listeners, so load balancers notice. */
  shutdownDrainMs: number;
  /** After this, remaining calls and connections are cut. */
  shutdownTimeoutMs: number;
  services: readonly ServiceRegistration[];
  /** Open server streams (both ports together) before new ones get RESOURCE_EXHAUSTED. */
  maxConcurrentStreams?: number;
  /** Open HTTP connections before new ones are answered 429 and closed. */
  httpMaxConnections?: number;
  /** Time a client has to send the request headers on the HTTP port, ms. */
  httpHeadersTimeoutMs?: number;
  /**
   * Time a client has to send a whole request (headers and body) on the HTTP port, ms; on the gRPC
   * port, the time a call has to send its request message and half-close (DEADLINE_EXCEEDED after).
   */
  httpRequestTimeoutMs?: number;
  /** Gateway routes on the HTTP port (more can be added to `routes` before start). */
  httpRoutes?: readonly Route[];
  /** Each unexpected error answered as INTERNAL (the error tracker's capture); see errorInterceptor. */
  onUnexpectedError?(err: unknown): void;
}

/** Defaults of the optional limits (the config's defaults; tests pass their own). */
export const DEFAULT_LIMITS = {
  maxConcurrentStreams: 10_000,
  maxInFlightRequestBytes: 128 * 1024 * 1024,
  httpMaxConnections: 10_000,
  httpHeadersTimeoutMs: 10_000,
  httpRequestTimeoutMs: 30_000,
} as const;

/** How long finished calls get to reach the wire before remaining gRPC sessions are forced closed. */
const FLUSH_GRACE_MS = 250;

const SHUTTING_DOWN = new ConnectError('server is shutting down', Code.Unavailable);

/** Open server streams, across both ports, against `server.max_concurrent_streams`. */
class StreamGate {
  open = 0;
  constructor(readonly max: number) {}
}

const TOO_MANY_STREAMS = new ConnectError(
  'too many open streams on this server; retry later',
  Code.ResourceExhausted,
);

/**
 * Streams must end when shutdown begins (they would hold the listeners open forever), while unary
 * calls get to finish. So server-streaming handlers see a context whose signal also aborts on
 * shutdown, with an UNAVAILABLE reason: a client reconnects to another replica and resumes.
 *
 * One AbortController per stream, linked by two plain listeners that are removed when the stream
 * ends. Not `AbortSignal.any([ctx.signal, shutdown])`: on Node 20 every such signal stays a dependant
 * of the long-lived shutdown signal after the stream ended (400k streams, 400k dependants after GC).
 * The abort reasons are the source signals' own (pre-allocated), never a fresh DOMException.
 *
 * The same wrapper enforces the open-stream cap: beyond it a new stream is refused with
 * RESOURCE_EXHAUSTED before the implementation runs.
 */
function withStreamShutdown<S extends DescService>(
  service: S,
  impl: Partial<ServiceImpl<S>>,
  shutdown: AbortSignal,
  gate: StreamGate,
): Partial<ServiceImpl<S>> {
  // Implementations are often class instances: copy methods one by one (a spread would drop the
  // prototype's methods), bound to the instance.
  const wrapped: Record<string, unknown> = {};
  for (const method of service.methods) {
    const fn = (impl as Record<string, unknown>)[method.localName];
    if (typeof fn !== 'function') continue;
    if (method.methodKind !== 'server_streaming') {
      wrapped[method.localName] = fn.bind(impl);
      continue;
    }
    const stream = fn as (r: unknown, c: HandlerContext) => AsyncIterable<unknown>;
    wrapped[method.localName] = async function* (req: unknown, ctx: HandlerContext) {
      if (shutdown.aborted) throw shutdown.reason;
      if (gate.open >= gate.max) throw TOO_MANY_STREAMS;
      gate.open++;
      ctx.values.get(streamStartKey)?.(ctx.responseHeader);
      const controller = new AbortController();
      const onShutdown = (): void => controller.abort(shutdown.reason);
      const onCallEnd = (): void => controller.abort(ctx.signal.reason);
      shutdown.addEventListener('abort', onShutdown);
      ctx.signal.addEventListener('abort', onCallEnd);
      try {
        if (ctx.signal.aborted) onCallEnd();
        yield* stream.call(
          impl,
          req,
          Object.assign(Object.create(ctx) as HandlerContext, { signal: controller.signal }),
        );
      } finally {
        shutdown.removeEventListener('abort', onShutdown);
        ctx.signal.removeEventListener('abort', onCallEnd);
        gate.open--;
      }
    };
  }
  return wrapped as Partial<ServiceImpl<S>>;
}

/** The RpcServer options a service's `server` config section sets. */
export function serverOptionsFromConfig(server: ServerConfig) {
  return {
    host: server.host,
    grpcPort: server.grpc_port,
    httpPort: server.http_port,
    apiTokens: server.api_tokens,
    maxRequestBytes: server.max_request_bytes,
    maxInFlightRequestBytes: server.max_in_flight_request_bytes,
    shutdownDrainMs: server.shutdown_drain_ms,
    shutdownTimeoutMs: server.shutdown_timeout_ms,
    maxConcurrentStreams: server.max_concurrent_streams,
    httpMaxConnections: server.http_max_connections,
    httpHeadersTimeoutMs: server.http_headers_timeout_ms,
    httpRequestTimeoutMs: server.http_request_timeout_ms,
  } satisfies Partial<RpcServerOptions>;
}

/** Counts in-flight gRPC calls so shutdown can wait for them. */
class CallTracker {
  private count = 0;
  private waiters: Array<() => void> = [];
  begin(): void {
    this.count++;
  }
  end(): void {
    this.count--;
    if (this.count === 0) for (const w of this.waiters.splice(0)) w();
  }
  idle(): Promise<void> {
    return this.count === 0 ? Promise.resolve() : new Promise((resolve) => this.waiters.push(resolve));
  }
}

export class RpcServer {
  readonly health: ServingStatusReporter;
  private readonly grpc: GrpcServer;
  private readonly http: HttpServer;
  private readonly shutdownController = new AbortController();
  private readonly tracker = new CallTracker();
  /** The HTTP surface's route table: the composition root fills it before `start()`. */
  readonly routes = new HttpRouteTable();
  private readonly metrics: RpcMetrics;
  private openHttpConnections = 0;
  private stopping: Promise<void> | undefined;
  private ports: { grpc: number; http: number } | undefined;

  constructor(private readonly opts: RpcServerOptions) {
    const { logger } = opts;
    this.metrics = new RpcMetrics(opts.metrics ?? new MetricsCollector({ registry: opts.registry }));
    const tokens = new ApiTokens(opts.apiTokens);
    const access = new RpcAccess(tokens);
    const limits = new Map<string, number>();
    for (const { service, scopes, maxRequestBytes } of opts.services) {
      access.addService(service, scopes);
      for (const method of service.methods) {
        const raised = (maxRequestBytes as Record<string, number | undefined> | undefined)?.[
          method.localName
        ];
        limits.set(rpcPath(service.typeName, method.name), Math.max(opts.maxRequestBytes, raised ?? 0));
      }
    }
    const limitOf = (path: string): number => limits.get(path) ?? opts.maxRequestBytes;
    const largest = Math.max(opts.maxRequestBytes, ...limits.values());
    const budget = new RequestBudget(
      Math.max(largest, opts.maxInFlightRequestBytes ?? DEFAULT_LIMITS.maxInFlightRequestBytes),
    );
    const interceptors: Interceptor[] = [metricsInterceptor(this.metrics), loggingInterceptor(logger)];
    if (tokens.enabled) interceptors.push(authInterceptor());
    else logger.warn('no API tokens configured (server.api_tokens): RPCs are open to any caller');
    interceptors.push(errorInterceptor(logger, { onUnexpected: opts.onUnexpectedError?.bind(opts) }));
    // Calls refused on their headers or their size never reach the interceptors: counted and logged here.
    // (The HTTP port counts its own refusals with its other protocol-level answers.)
    const refused = (path: string, code: Code, transport: 'grpc' | 'http', caller: string | undefined) => {
      const [, service = 'unknown', method = 'unknown'] = path.split('/');
      if (transport === 'grpc')
        this.metrics.record(this.metrics.labels(service, method, transport), codeName(code));
      logger.info(
        { rpcService: service, rpcMethod: method, transport, caller, code: codeName(code) },
        'rpc refused before reading its request',
      );
    };

    const headersTimeout = opts.httpHeadersTimeoutMs ?? DEFAULT_LIMITS.httpHeadersTimeoutMs;
    // The time a whole request may take, on both ports (the gRPC port's intake uses it too).
    const requestTimeout = Math.max(
      headersTimeout,
      opts.httpRequestTimeoutMs ?? DEFAULT_LIMITS.httpRequestTimeoutMs,
    );
    const gate = new StreamGate(opts.maxConcurrentStreams ?? DEFAULT_LIMITS.maxConcurrentStreams);
    this.grpc = new GrpcServer({
      // The largest method limit; each method's own is checked on the length prefix (grpcIntake).
      'grpc.max_receive_message_length': largest,
      'grpc.keepalive_time_ms': 60_000,
      'grpc.keepalive_permit_without_calls': 1,
      // Channelz (grpc-js's call and socket statistics service) is not served here, and its
      // per-call tracking (counters, timestamps, closures per call) measured about 2% of a call.
      'grpc.enable_channelz': 0,
      interceptors: [
        grpcIntake({
          access,
          budget,
          limitOf,
          logger,
          requestTimeoutMs: requestTimeout,
          onRefused: (path, code, caller) => refused(path, code, 'grpc', caller),
        }),
      ],
    });
    const onRejected = (service: DescService, method: DescMethod, code: Code): void =>
      this.metrics.record(this.metrics.labels(service.typeName, method.name, 'grpc'), codeName(code));
    for (const { service, impl } of opts.services) {
      this.grpc.addService(
        createGrpcServerDefinition(service, (method) => limitOf(rpcPath(service.typeName, method.name))),
        createGrpcHandlers(service, withStreamShutdown(service, impl, this.shutdownController.signal, gate), {
          interceptors,
          logger,
          tracker: this.tracker,
          onRejected,
        }),
      );
    }
    this.countUnknownGrpcMethods();
    this.health = new ServingStatusReporter(opts.services.map((s) => s.service.typeName));
    this.health.addToServer(this.grpc);
    addReflection(
      this.grpc,
      opts.services.map((s) => s.service),
    );

    this.routes.useApiTokens(tokens);
    this.routes.add(...(opts.httpRoutes ?? []));
    const router = createConnectRouter({
      interceptors,
      readMaxBytes: opts.maxRequestBytes,
      // Invalid UTF-8 in a JSON body is refused (INVALID_ARGUMENT), as protobuf refuses it in a binary
      // string field, instead of being stored as replacement characters. Connect passes this option
      // on to its JSON serialization (`textDecoder`), which its option type does not declare.
      jsonOptions: { textDecoder: new TextDecoder('utf-8', { fatal: true }) } as object,
      // Decompressed within each call's share of the request budget (http-port.ts).
      acceptCompression: budgetedCompressions(),
      // No `shutdownSignal` here: Connect would abort in-flight unary calls with it too. Streams get
      // the shutdown through withStreamShutdown; unary calls finish or are cut at the deadline.
    });
    for (const { service, impl } of opts.services) {
      // Method by method, so that each gets its own size limit.
      const spec = createServiceImplSpec(
        service,
        withStreamShutdown(service, impl, this.shutdownController.signal, gate),
      );
      for (const method of service.methods) {
        const readMaxBytes = limitOf(rpcPath(service.typeName, method.name));
        const methodSpec = spec.methods[method.localName]!;
        router.rpc(
          method,
          methodSpec.impl as never,
          readMaxBytes === opts.maxRequestBytes ? undefined : { readMaxBytes },
        );
      }
    }
    const handler = createHttpPortHandler(router, this.routes, this.metrics, logger, {
      access,
      budget,
      limitOf,
      onRefused: (path, err, caller) => refused(path, err.code, 'http', caller),
    });
    const maxConnections = opts.httpMaxConnections ?? DEFAULT_LIMITS.httpMaxConnections;
    const overCap = new WeakSet<Socket>();
    this.http = createServer(
      {
        // Slowloris: a client trickling its headers or body holds a connection for at most these.
        headersTimeout,
        requestTimeout,
        // Node checks those timeouts on this interval (30 s by default, which would add up to 30 s).
        connectionsCheckingInterval: Math.min(1000, headersTimeout),
      },
      (req, res) => {
        if (overCap.has(req.socket)) {
          // Beyond the cap, the extra connection still gets an answer (not a silent drop), then closes.
          req.resume();
          res.shouldKeepAlive = false;
          sendJsonError(res, 'resource_exhausted', 'too many connections; retry later', {
            headers: { 'Retry-After': '1', Connection: 'close' },
          });
          return;
        }
        handler(req, res);
      },
    );
    // Requests Node's parser refuses get the JSON error body too, not a bare status line.
    this.http.on('clientError', answerClientError);
    this.http.on('connection', (socket: Socket) => {
      this.openHttpConnections++;
      socket.once('close', () => this.openHttpConnections--);
      if (this.openHttpConnections > maxConnections) overCap.add(socket);
    });
  }

  /**
   * grpc-js answers a call to an unknown method UNIMPLEMENTED before any handler or interceptor, so
   * it would go uncounted. Its handler lookup is wrapped to count those too (under `unknown`: the
   * path is the caller's choice and must not become a label value). The lookup is a grpc-js internal:
   * if it ever disappears this throws at start-up instead of silently not counting.
   */
  private countUnknownGrpcMethods(): void {
    const server = this.grpc as unknown as { _retrieveHandler?: (path: string) => unknown };
    const lookup = server._retrieveHandler;
    if (typeof lookup !== 'function') throw new Error('grpc-js changed: Server._retrieveHandler is missing');
    const unknown = this.metrics.labels('unknown', 'unknown', 'grpc');
    server._retrieveHandler = (path: string) => {
      const found = lookup.call(this.grpc, path);
      if (found === null || found === undefined) this.metrics.record(unknown, 'unimplemented');
      return found;
    };
  }

  /** Open connections on the HTTP port (the cap counts these). */
  get httpConnections(): number {
    return this.openHttpConnections;
  }

  /** Adds gateway routes to the route table (the composition root's job, before `start()`). */
  addHttpRoutes(...routes: Route[]): void {
    this.routes.add(...routes);
  }

  /**
   * Calls `observer` first for every request of the HTTP port (Connect RPCs, gateway routes and
   * 404s alike), before it is dispatched: request metrics see every answer.
   */
  observeHttpRequests(observer: (req: IncomingMessage, res: ServerResponse) => void): void {
    this.http.prependListener('request', observer);
  }

  /** Aborted when shutdown begins: long-lived gateway responses (SSE) end on it. */
  get shutdownSignal(): AbortSignal {
    return this.shutdownController.signal;
  }

  /** Binds both ports; resolves with the ports actually bound. Health stays NOT_SERVING until told. */
  async start(): Promise<{ grpc: number; http: number }> {
    const { host } = this.opts;
    const grpcPort = await new Promise<number>((resolve, reject) =>
      this.grpc.bindAsync(`${host}:${this.opts.grpcPort}`, ServerCredentials.createInsecure(), (err, port) =>
        err ? reject(err) : resolve(port),
      ),
    );
    await new Promise<void>((resolve, reject) => {
      this.http.once('error', reject);
      this.http.listen(this.opts.httpPort, host, () => {
        this.http.removeListener('error', reject);
        resolve();
      });
    });
    const httpPort = (this.http.address() as AddressInfo).port;
    this.ports = { grpc: grpcPort, http: httpPort };
    this.opts.logger.info({ grpcPort, httpPort, host }, `${this.opts.name} listening`);
    return this.ports;
  }

  get boundPorts(): { grpc: number; http: number } {
    if (!this.ports) throw new Error('server not started');
    return this.ports;
  }

  /** True from the moment shutdown begins. */
  get isShuttingDown(): boolean {
    return this.stopping !== undefined;
  }

  /** Graceful shutdown; safe to call more than once (later calls wait for the first). */
  shutdown(): Promise<void> {
    this.stopping ??= this.doShutdown();
    return this.stopping;
  }

  private async doShutdown(): Promise<void> {
    const { logger, shutdownDrainMs, shutdownTimeoutMs } = this.opts;
    logger.info({ drainMs: shutdownDrainMs }, 'shutdown: reporting NOT_SERVING');
    this.health.setServing(false);
    await sleep(shutdownDrainMs);
    const deadline = sleep(shutdownTimeoutMs, 'timeout' as const, { ref: false });

    // Stop accepting; streams end with UNAVAILABLE so clients reconnect elsewhere and resume.
    this.shutdownController.abort(SHUTTING_DOWN);
    const grpcClosed = new Promise<void>((resolve) => this.grpc.tryShutdown(() => resolve()));
    const httpClosed = new Promise<void>((resolve) => this.http.close(() => resolve()));
    this.http.closeIdleConnections();

    // grpc-js tryShutdown never completes while health Watch streams are open, so wait for our own
    // in-flight calls instead. A handler's end is not yet its response on the wire, so then give
    // tryShutdown a short grace to flush before forcing the rest (health watchers, idle sessions).
    const drained = await Promise.race([
      Promise.all([this.tracker.idle(), httpClosed]).then(() => 'drained' as const),
      deadline,
    ]);
    if (drained === 'timeout') logger.warn('shutdown: deadline reached, cutting remaining calls');
    else await Promise.race([grpcClosed, sleep(FLUSH_GRACE_MS, undefined, { ref: false })]);
    this.grpc.forceShutdown();
    this.http.closeAllConnections();
    await httpClosed;
    logger.info('shutdown: listeners closed');
  }
}
