/**
 * The RPC server kit: one process, two ports.
 *
 * - gRPC port (`@grpc/grpc-js`): every registered service through the generic adapter, plus
 *   `grpc.health.v1.Health` and server reflection.
 * - HTTP/1.1 port (`@connectrpc/connect-node`): the same implementations for the Connect protocol
 *   (JSON and binary) and gRPC-Web; everything else falls through to the gateway routes.
 *
 * Both ports share the interceptors (metrics, logging, auth, errors) and the request size limit.
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
import type { DescService } from '@bufbuild/protobuf';
import {
  Code,
  ConnectError,
  createConnectRouter,
  createContextValues,
  type ConnectRouter,
  type HandlerContext,
  type Interceptor,
  type ServiceImpl,
} from '@connectrpc/connect';
import {
  compressionBrotli,
  compressionGzip,
  universalRequestFromNodeRequest,
  universalResponseToNodeResponse,
} from '@connectrpc/connect-node';
import type { Registry } from 'prom-client';
import { createGrpcHandlers, createGrpcServiceDefinition } from './grpc-adapter';
import {
  authInterceptor,
  errorInterceptor,
  loggingInterceptor,
  metricsInterceptor,
  RpcMetrics,
} from './interceptors';
import { addReflection } from './reflection';
import { createFallback, type HttpRoute } from './http-routes';
import { transportKey } from './context';
import { ServingStatusReporter } from './grpc-health';
import type { Logger } from '../logging/logger';
import type { ServerConfig } from '../config';

/** A service and its implementation; methods left out answer UNIMPLEMENTED. */
export interface ServiceRegistration<S extends DescService = DescService> {
  service: S;
  impl: Partial<ServiceImpl<S>>;
}

/** Helper that keeps the service/impl pairing type-checked. */
export function registration<S extends DescService>(
  service: S,
  impl: Partial<ServiceImpl<S>>,
): ServiceRegistration {
  return { service, impl } as unknown as ServiceRegistration;
}

export interface RpcServerOptions {
  /** Process name for logs. */
  name: string;
  logger: Logger;
  /** The process's Prometheus registry; RPC metrics are registered on it. */
  registry: Registry;
  host: string;
  /** 0 picks a free port (tests). */
  grpcPort: number;
  httpPort: number;
  /** Bearer tokens accepted for RPCs; empty means open (logged once as a warning). */
  apiTokens: readonly string[];
  /** Largest request message/body accepted, in bytes. */
  maxRequestBytes: number;
  /** Time between NOT_SERVING and closing the listeners, so load balancers notice. */
  shutdownDrainMs: number;
  /** After this, remaining calls and connections are cut. */
  shutdownTimeoutMs: number;
  services: readonly ServiceRegistration[];
  /** Gateway routes on the HTTP port, tried in order. */
  httpRoutes?: readonly HttpRoute[];
}

/** How long finished calls get to reach the wire before remaining gRPC sessions are forced closed. */
const FLUSH_GRACE_MS = 250;

const SHUTTING_DOWN = new ConnectError('server is shutting down', Code.Unavailable);

/**
 * Streams must end when shutdown begins (they would hold the listeners open forever), while unary
 * calls get to finish. So server-streaming handlers see a context whose signal also aborts on
 * shutdown, with an UNAVAILABLE reason: a client reconnects to another replica and resumes.
 */
function withStreamShutdown<S extends DescService>(
  service: S,
  impl: Partial<ServiceImpl<S>>,
  shutdown: AbortSignal,
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
    wrapped[method.localName] = (req: unknown, ctx: HandlerContext) => {
      const signal = AbortSignal.any([ctx.signal, shutdown]);
      return (fn as (r: unknown, c: HandlerContext) => unknown).call(
        impl,
        req,
        Object.assign(Object.create(ctx), { signal }),
      );
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
    shutdownDrainMs: server.shutdown_drain_ms,
    shutdownTimeoutMs: server.shutdown_timeout_ms,
  } satisfies Partial<RpcServerOptions>;
}

/**
 * Dispatches HTTP/1.1 requests to Connect's handlers (Connect protocol, gRPC-Web), and everything else
 * to the gateway routes. It is connect-node's `connectNodeAdapter`, except that a handler failing
 * after its response began (typically a client that went away mid-stream) is logged through our
 * logger instead of `console.error`.
 */
function connectHttpHandler(
  router: ConnectRouter,
  fallback: ReturnType<typeof createFallback>,
  logger: Logger,
) {
  const paths = new Map(router.handlers.map((h) => [h.requestPath, h]));
  return (req: IncomingMessage, res: ServerResponse): void => {
    const handler = paths.get((req.url ?? '').split('?', 1)[0]!);
    if (!handler) {
      fallback(req, res);
      return;
    }
    const uReq = universalRequestFromNodeRequest(
      req,
      res,
      undefined,
      createContextValues().set(transportKey, 'http'),
    );
    handler(uReq)
      .then((uRes) => universalResponseToNodeResponse(uRes, res))
      .catch((reason: unknown) => {
        const code = ConnectError.from(reason).code;
        if (code === Code.Aborted) return;
        const level = res.destroyed || req.destroyed ? 'debug' : 'warn';
        logger[level](
          { err: reason, rpcService: handler.service.typeName, rpcMethod: handler.method.name },
          'rpc response not completed',
        );
      });
  };
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
  private readonly routes: HttpRoute[];
  private stopping: Promise<void> | undefined;
  private ports: { grpc: number; http: number } | undefined;

  constructor(private readonly opts: RpcServerOptions) {
    const { logger } = opts;
    const interceptors: Interceptor[] = [
      metricsInterceptor(new RpcMetrics(opts.registry)),
      loggingInterceptor(logger),
    ];
    if (opts.apiTokens.length > 0) interceptors.push(authInterceptor(opts.apiTokens));
    else logger.warn('no API tokens configured (server.api_tokens): RPCs are open to any caller');
    interceptors.push(errorInterceptor(logger));

    this.grpc = new GrpcServer({
      'grpc.max_receive_message_length': opts.maxRequestBytes,
      'grpc.keepalive_time_ms': 60_000,
      'grpc.keepalive_permit_without_calls': 1,
    });
    for (const { service, impl } of opts.services) {
      this.grpc.addService(
        createGrpcServiceDefinition(service),
        createGrpcHandlers(service, withStreamShutdown(service, impl, this.shutdownController.signal), {
          interceptors,
          logger,
          tracker: this.tracker,
        }),
      );
    }
    this.health = new ServingStatusReporter(opts.services.map((s) => s.service.typeName));
    this.health.addToServer(this.grpc);
    addReflection(
      this.grpc,
      opts.services.map((s) => s.service),
    );

    this.routes = [...(opts.httpRoutes ?? [])];
    const router = createConnectRouter({
      interceptors,
      readMaxBytes: opts.maxRequestBytes,
      acceptCompression: [compressionGzip, compressionBrotli],
      // No `shutdownSignal` here: Connect would abort in-flight unary calls with it too. Streams get
      // the shutdown through withStreamShutdown; unary calls finish or are cut at the deadline.
    });
    for (const { service, impl } of opts.services) {
      router.service(service, withStreamShutdown(service, impl, this.shutdownController.signal));
    }
    const handler = connectHttpHandler(router, createFallback(this.routes, logger), logger);
    this.http = createServer(handler);
  }

  /** Adds gateway routes after construction (they are tried in the order added). */
  addHttpRoutes(...routes: HttpRoute[]): void {
    this.routes.push(...routes);
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
