/**
 * MetricsMiddleware (PrometheusMiddleware-style) for plain Node `http`: serves `/metrics` from a
 * prom-client Registry and records, for the requests it wraps, a request counter, a duration
 * histogram and an active-request gauge. Without the client library it records through a
 * MetricsCollectorProtocol and `/metrics` answers 503.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Registry } from 'prom-client';
import { type Logger, silentLogger } from '../../logging/logger';
import { type Clock, systemClock } from '../../runtime/clock';
import { MetricsCollector, NoopMetricsCollector, type MetricsCollectorProtocol } from '../collector';
import { renderMetrics, streamMetrics, type RenderedMetrics } from '../exposition';
import type { Counter, Gauge, Histogram } from '../instruments';
import { loadPromClient, type PromClientLoader } from '../prom-loader';
import { chainHandler, isAuthorized, pathOf, sendMethodNotAllowed, sendUnauthorized } from './auth';
import { sendJsonError } from '../../http/errors';
import { drainedOrClosed } from '../../http/drain';

/** A plain Node request handler. */
export type RequestHandler = (req: IncomingMessage, res: ServerResponse) => void;

/** Options of MetricsMiddleware. */
export interface MetricsMiddlewareOptions {
  /** Scrape path; default `/metrics`. */
  path?: string;
  /** Registry to serve and record into (shared with the rest of the process). */
  registry?: Registry;
  /** Collector to record through; a MetricsCollector also decides the registry served. */
  collector?: MetricsCollectorProtocol;
  /** When set, `/metrics` needs `Authorization: Bearer <token>`. */
  auth_token?: string | null;
  /** Names the route label of a request; the path by default. */
  routeOf?: (req: IncomingMessage) => string;
  /** Distinct route label values kept before new ones are reported as `other` (default 200). */
  maxRoutes?: number;
  /** Duration histogram buckets in seconds. */
  buckets?: readonly number[];
  loader?: PromClientLoader;
  clock?: Clock;
  logger?: Logger;
}

/**
 * Answers a scrape with `registry` streamed ({@link streamMetrics}): each piece is written as it is
 * rendered, waiting while the scraper's connection is full, so a large scrape is never one string in
 * memory and other requests are answered between pieces; a scraper that hangs up stops the render.
 * A failure before the first byte is a 500 JSON error; after it, the connection is cut (a truncated
 * scrape must not look complete). HEAD gets the headers only.
 */
export async function sendMetrics(
  req: IncomingMessage,
  res: ServerResponse,
  registry: Registry,
  logger: Logger,
): Promise<void> {
  const { contentType, body } = streamMetrics(registry, req.headers.accept);
  const headers = { 'Content-Type': contentType, 'Cache-Control': 'no-store' };
  if (req.method === 'HEAD') {
    res.writeHead(200, headers).end();
    return;
  }
  let started = false;
  try {
    for await (const piece of body) {
      if (res.destroyed) return;
      if (!started) {
        res.writeHead(200, headers);
        started = true;
      }
      if (!res.write(piece)) await drainedOrClosed(res);
    }
    if (!started) res.writeHead(200, headers);
    res.end();
  } catch (err) {
    logger.error({ err }, 'rendering /metrics failed');
    if (started) res.destroy();
    else sendJsonError(res, 'internal', 'internal error');
  }
}

/** Names of the request metrics (the counter is exported as `http_requests_total`). */
export const HTTP_METRIC_NAMES = {
  requests: 'http_requests',
  duration: 'http_request_duration_seconds',
  active: 'http_requests_active',
} as const;

/** Serves `/metrics` and records per-request metrics. */
export class MetricsMiddleware {
  /** The scrape path. */
  readonly path: string;
  /** The registry served, when the client library is available. */
  readonly registry: Registry | undefined;
  private readonly authToken: string | null | undefined;
  private readonly collector: MetricsCollectorProtocol;
  private readonly instruments: { requests: Counter; duration: Histogram; active: Gauge } | undefined;
  private readonly routeOf: (req: IncomingMessage) => string;
  private readonly maxRoutes: number;
  private readonly routes = new Set<string>();
  private readonly clock: Clock;
  private readonly logger: Logger;
  private active = 0;

  constructor(options: MetricsMiddlewareOptions = {}) {
    this.path = options.path ?? '/metrics';
    this.authToken = options.auth_token;
    this.routeOf = options.routeOf ?? pathOf;
    this.maxRoutes = options.maxRoutes ?? 200;
    this.clock = options.clock ?? systemClock;
    this.logger = options.logger ?? silentLogger();
    const prom = (options.loader ?? loadPromClient)();
    if (!prom) {
      this.collector = options.collector ?? new NoopMetricsCollector();
      this.registry = undefined;
      this.instruments = undefined;
      return;
    }
    const collector =
      options.collector instanceof MetricsCollector
        ? options.collector
        : new MetricsCollector({ registry: options.registry ?? new prom.Registry() });
    this.collector = collector;
    this.registry = collector.registry;
    this.instruments = {
      requests: collector.createCounter(HTTP_METRIC_NAMES.requests, 'HTTP requests handled', undefined, {
        labelNames: ['method', 'route', 'status'],
      }),
      duration: collector.createHistogram(
        HTTP_METRIC_NAMES.duration,
        'HTTP request duration in seconds',
        undefined,
        options.buckets,
        { labelNames: ['method', 'route', 'status'] },
      ),
      active: collector.createGauge(HTTP_METRIC_NAMES.active, 'HTTP requests in progress', undefined, {
        labelNames: ['method'],
      }),
    };
  }

  /** Renders the registry for an `Accept` header (what `/metrics` answers). */
  async render(accept: string | undefined): Promise<RenderedMetrics> {
    if (!this.registry) {
      return { contentType: 'text/plain; charset=utf-8', body: 'metrics exposition unavailable\n' };
    }
    return renderMetrics(this.registry, accept);
  }

  /** Answers the request when it is for the scrape path; resolves true when it did. */
  async handle(req: IncomingMessage, res: ServerResponse): Promise<boolean> {
    if (pathOf(req) !== this.path) return false;
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      sendMethodNotAllowed(res);
      return true;
    }
    if (!isAuthorized(req, this.authToken)) {
      sendUnauthorized(res);
      return true;
    }
    if (!this.registry) {
      res.writeHead(503, { 'Content-Type': 'text/plain; charset=utf-8' });
      res.end('metrics exposition unavailable: the Prometheus client library is not installed\n');
      return true;
    }
    await sendMetrics(req, res, this.registry, this.logger);
    return true;
  }

  /** Wraps a handler so its requests are counted, timed and tracked while active. */
  wrap(handler: RequestHandler): RequestHandler {
    return (req, res) => {
      this.record(req, res);
      handler(req, res);
    };
  }

  /**
   * Records one request: active now, then counted and timed with its status when the response
   * finishes (or the connection closes first). For servers whose dispatch is not one handler to wrap.
   */
  record(req: IncomingMessage, res: ServerResponse): void {
    this.track(req, res);
  }

  /**
   * A request handler: `/metrics` is answered here, every other request goes to `next` (recorded)
   * or, without `next`, gets a 404 JSON answer.
   */
  middleware(next?: RequestHandler): RequestHandler {
    return chainHandler(
      (req, res) => this.handle(req, res),
      next ? this.wrap(next) : undefined,
      (err) => this.logger.error({ err }, 'metrics middleware failed'),
    );
  }

  private routeLabel(req: IncomingMessage): string {
    const route = this.routeOf(req);
    if (this.routes.has(route)) return route;
    if (this.routes.size >= this.maxRoutes) return 'other';
    this.routes.add(route);
    return route;
  }

  private track(req: IncomingMessage, res: ServerResponse): void {
    const start = this.clock.monotonic();
    const method = req.method ?? 'GET';
    const route = this.routeLabel(req);
    this.active++;
    if (this.instruments) this.instruments.active.increment(1, { method });
    else this.collector.gauge(HTTP_METRIC_NAMES.active, this.active);
    let done = false;
    const finish = (): void => {
      if (done) return;
      done = true;
      this.active--;
      const seconds = Math.max(0, (this.clock.monotonic() - start) / 1000);
      const labels = { method, route, status: String(res.statusCode) };
      if (this.instruments) {
        this.instruments.active.decrement(1, { method });
        this.instruments.requests.increment(1, labels);
        this.instruments.duration.observe(seconds, labels);
      } else {
        this.collector.gauge(HTTP_METRIC_NAMES.active, this.active);
        this.collector.increment(HTTP_METRIC_NAMES.requests, 1, labels);
        this.collector.histogram(HTTP_METRIC_NAMES.duration, seconds, labels);
      }
    };
    res.once('finish', finish);
    res.once('close', finish);
  }
}
