/**
 * What crosses every call, on both ports: error mapping, service-to-service auth, logging, metrics.
 * Order (outermost first): metrics, logging, auth, errors. Errors is innermost so that every other
 * interceptor sees the final, caller-safe code.
 */
import {
  Code,
  ConnectError,
  type Interceptor,
  type StreamRequest,
  type StreamResponse,
  type UnaryRequest,
} from '@connectrpc/connect';
import type { Counter, Gauge, Histogram, MetricsCollector } from '../monitoring';
import { cancellationOf, codeName, MALFORMED_MESSAGE, toConnectError } from './errors';
import { admittedKey, callerKey, countedKey, transportKey } from './context';
import type { Logger } from '../logging/logger';
import { isDomainError } from '../errors';

/** Wraps a stream response so `onEnd` runs exactly once, with the error (if any) that ended it. */
function observeStream(
  res: StreamResponse,
  onEnd: (err: unknown) => void,
  mapError?: (err: unknown) => unknown,
): StreamResponse {
  async function* wrapped() {
    let failure: unknown = undefined;
    try {
      yield* res.message;
    } catch (err) {
      failure = mapError ? mapError(err) : err;
      throw failure;
    } finally {
      onEnd(failure);
    }
  }
  return { ...res, message: wrapped() };
}

/**
 * A stream request's messages, where a message that does not decode (Connect reports `internal`
 * "parse binary: ..." or `invalid_argument` with the JSON parser's words) becomes INVALID_ARGUMENT
 * with the generic message, as on the gRPC port; the parser's words go to the debug log. Limits
 * (`resource_exhausted`) and a client that went away keep their own codes.
 */
async function* refuseMalformedInput<T>(input: AsyncIterable<T>, logger: Logger): AsyncIterable<T> {
  try {
    yield* input;
  } catch (err) {
    const code = err instanceof ConnectError ? err.code : Code.Internal;
    if (code !== Code.Internal && code !== Code.InvalidArgument && code !== Code.Unknown) throw err;
    logger.debug({ reason: String(err) }, 'malformed request refused');
    throw new ConnectError(MALFORMED_MESSAGE, Code.InvalidArgument);
  }
}

/** Options of {@link errorInterceptor}. */
export interface ErrorInterceptorOptions {
  /**
   * Called with each unexpected error (neither a domain error, a ConnectError nor a cancellation)
   * that the caller sees as a generic INTERNAL: the composition root hands it to the error tracker.
   * It must not throw (a throw is logged and ignored: the caller still gets INTERNAL).
   */
  onUnexpected?(err: unknown): void;
}

/** Maps domain errors to codes and hides unexpected ones (logged with their cause). */
export function errorInterceptor(logger: Logger, options: ErrorInterceptorOptions = {}): Interceptor {
  const { onUnexpected } = options;
  // A call whose client went away ends with whatever the handler threw on its aborted signal:
  // that is CANCELED (not an error of ours), on both ports.
  const mapFor = (req: UnaryRequest | StreamRequest) => (err: unknown) => {
    const cancelled = cancellationOf(req.signal, err);
    if (cancelled) return cancelled;
    const mapped = toConnectError(err, logger, { service: req.service.typeName, method: req.method.name });
    if (onUnexpected && mapped !== err && !isDomainError(err)) {
      try {
        onUnexpected(err);
      } catch (hookErr) {
        logger.warn({ err: hookErr }, 'unexpected-error hook failed');
      }
    }
    return mapped;
  };
  return (next) => async (req) => {
    try {
      const res = await next(
        req.stream ? { ...req, message: refuseMalformedInput(req.message, logger) } : req,
      );
      return res.stream ? observeStream(res, () => undefined, mapFor(req)) : res;
    } catch (err) {
      throw mapFor(req)(err);
    }
  };
}

/** The answer to a call that reached the interceptors without a port's verdict on its token. */
const NOT_ADMITTED = new ConnectError('the call was not admitted by an access check', Code.Unauthenticated);

/**
 * Service-to-service auth, installed when API tokens are configured: both ports already decided on
 * the call's headers, before reading its body, whether its token may call the method (`RpcAccess`)
 * and refused it if not; this takes that verdict (`admittedKey`) into the handler's context as the
 * caller's name (`callerKey`) instead of checking the token again. A call without a verdict (one no
 * port's intake saw) is refused UNAUTHENTICATED: fail closed, never let through. With no tokens the
 * interceptor is not installed (the server warns).
 */
export function authInterceptor(): Interceptor {
  return (next) => async (req) => {
    const caller = req.contextValues.get(admittedKey);
    if (caller === undefined) throw NOT_ADMITTED;
    req.contextValues.set(callerKey, caller);
    return next(req);
  };
}

/** Logs one call's end (`err` undefined: success, at debug level); builds nothing for a level that is off. */
function logCall(logger: Logger, req: UnaryRequest | StreamRequest, started: number, err: unknown): void {
  let level: 'debug' | 'info' | 'error' = 'debug';
  let code: Code | undefined;
  if (err !== undefined) {
    code = err instanceof ConnectError ? err.code : Code.Unknown;
    level =
      code === Code.Internal || code === Code.Unknown ? 'error' : code === Code.Canceled ? 'debug' : 'info';
  }
  if (!logger.isLevelEnabled(level)) return;
  const fields = {
    rpcService: req.service.typeName,
    rpcMethod: req.method.name,
    transport: req.contextValues.get(transportKey),
    caller: req.contextValues.get(callerKey),
    durationMs: Math.round((performance.now() - started) * 100) / 100,
  };
  if (code === undefined) logger.debug({ ...fields, code: 'ok' }, 'rpc completed');
  else
    logger[level](
      {
        ...fields,
        code: codeName(code),
        message: err instanceof ConnectError ? err.rawMessage : undefined,
      },
      'rpc failed',
    );
}

/**
 * Structured call logs: failures always, successes at debug level (hot path stays quiet at info: a
 * successful unary call allocates nothing here).
 */
export function loggingInterceptor(logger: Logger): Interceptor {
  return (next) => async (req) => {
    const started = performance.now();
    try {
      const res = await next(req);
      if (res.stream) return observeStream(res, (err) => logCall(logger, req, started, err));
      logCall(logger, req, started, undefined);
      return res;
    } catch (err) {
      logCall(logger, req, started, err);
      throw err;
    }
  };
}

/** The label values a call is counted under. */
type CallLabels = { rpc_service: string; rpc_method: string; transport: string };

/**
 * The RPC instruments, created through the monitoring library's collector (so they share its
 * registry, prefix, default labels and its one histogram-buckets definition). Every answer counts:
 * calls that reach a handler through `metricsInterceptor`, the rest (undecodable requests, unknown
 * methods, wrong HTTP method or content type) through `record`.
 */
export class RpcMetrics {
  readonly handled: Counter;
  readonly duration: Histogram;
  readonly inFlight: Gauge;
  // Label objects are kept, not rebuilt per call: the library resolves a repeated object fastest.
  private readonly callLabels = new Map<string, CallLabels>();
  private readonly codeLabels = new Map<string, Record<string, string>>();
  private readonly inFlightSeries = new Map<
    string,
    { labels: Record<string, string>; count: { value: number } }
  >();

  constructor(collector: MetricsCollector) {
    this.handled = collector.createCounter(
      'rpc_server_handled',
      'RPCs answered by the server, by service, method, status code and transport.',
      undefined,
      { labelNames: ['rpc_service', 'rpc_method', 'rpc_code', 'transport'] },
    );
    this.duration = collector.createHistogram(
      'rpc_server_handling_seconds',
      'Time from the start of an RPC to its last response message, in seconds.',
      undefined,
      undefined,
      { labelNames: ['rpc_service', 'rpc_method', 'transport'] },
    );
    this.inFlight = collector.createGauge(
      'rpc_server_in_flight',
      'RPCs currently being handled (streams count while open).',
      undefined,
      { labelNames: ['rpc_service', 'rpc_method'] },
    );
  }

  /** The (kept) label object of a service, method and transport. */
  labels(service: string, method: string, transport: string): CallLabels {
    const key = `${service}/${method}/${transport}`;
    let labels = this.callLabels.get(key);
    if (!labels) this.callLabels.set(key, (labels = { rpc_service: service, rpc_method: method, transport }));
    return labels;
  }

  /**
   * The in-flight label object of a method and its count of calls in flight (kept here, so that
   * every interceptor over these metrics sets the gauge from the same count).
   */
  inFlightOf(service: string, method: string): { labels: Record<string, string>; count: { value: number } } {
    const key = `${service}/${method}`;
    let entry = this.inFlightSeries.get(key);
    if (!entry) {
      entry = { labels: { rpc_service: service, rpc_method: method }, count: { value: 0 } };
      this.inFlightSeries.set(key, entry);
    }
    return entry;
  }

  /** Counts one answer with `code` (a Connect code name such as `ok`, `invalid_argument`). */
  record(labels: CallLabels, code: string): void {
    const key = `${labels.rpc_service}/${labels.rpc_method}/${labels.transport}/${code}`;
    let withCode = this.codeLabels.get(key);
    if (!withCode) {
      const { rpc_service, rpc_method, transport } = labels;
      this.codeLabels.set(key, (withCode = { rpc_service, rpc_method, rpc_code: code, transport }));
    }
    this.handled.record(1, withCode);
  }
}

/** The label objects of one method on one transport, and its calls in flight there. */
interface MethodSeries {
  labels: CallLabels;
  inFlight: Record<string, string>;
  /** Calls of the method in flight (all transports): what the gauge shows. */
  count: { value: number };
}

/** Counts calls by code, times them, and tracks calls in flight. */
export function metricsInterceptor(metrics: RpcMetrics): Interceptor {
  const seriesOf = (req: UnaryRequest | StreamRequest): MethodSeries => {
    const labels = metrics.labels(req.service.typeName, req.method.name, req.contextValues.get(transportKey));
    const { labels: inFlight, count } = metrics.inFlightOf(labels.rpc_service, labels.rpc_method);
    return { labels, inFlight, count };
  };
  const end = (series: MethodSeries, started: number, err: unknown): void => {
    // The gauge is set from our own count: one update, not a read and a write.
    metrics.inFlight.set(--series.count.value, series.inFlight);
    metrics.record(
      series.labels,
      err === undefined ? 'ok' : codeName(err instanceof ConnectError ? err.code : Code.Unknown),
    );
    metrics.duration.record((performance.now() - started) / 1000, series.labels);
  };
  return (next) => {
    // Interceptors are composed once per method (and port): its label objects are found on the
    // first call and kept, unless a call comes with another method or transport.
    let cached: MethodSeries | undefined;
    return async (req) => {
      let series = cached;
      if (
        series === undefined ||
        series.labels.rpc_method !== req.method.name ||
        series.labels.rpc_service !== req.service.typeName ||
        series.labels.transport !== req.contextValues.get(transportKey)
      )
        series = cached = seriesOf(req);
      // Tells the HTTP port that this request reached the interceptors (its own answer is counted here).
      req.contextValues.set(countedKey, true);
      const started = performance.now();
      metrics.inFlight.set(++series.count.value, series.inFlight);
      try {
        const res = await next(req);
        if (res.stream) {
          const s = series;
          return observeStream(res, (err) => end(s, started, err));
        }
        end(series, started, undefined);
        return res;
      } catch (err) {
        end(series, started, err);
        throw err;
      }
    };
  };
}
