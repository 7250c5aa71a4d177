/**
 * What crosses every call, on both ports: error mapping, service-to-service auth, logging, metrics.
 * Order (outermost first): metrics, logging, auth, errors. Errors is innermost so that every other
 * interceptor sees the final, caller-safe code.
 */
import { Code, ConnectError, type Interceptor, type StreamResponse } from '@connectrpc/connect';
import type { Registry } from 'prom-client';
import { Counter, Gauge, Histogram } from 'prom-client';
import { codeName, toConnectError } from './errors';
import { callerIdentity, callerKey, transportKey } from './context';
import type { Logger } from '../logging/logger';
import { createTokenMatcher, parseBearer } from '../auth/bearer';

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

/** Maps domain errors to codes and hides unexpected ones (logged with their cause). */
export function errorInterceptor(logger: Logger): Interceptor {
  return (next) => async (req) => {
    const map = (err: unknown) =>
      toConnectError(err, logger, { service: req.service.typeName, method: req.method.name });
    try {
      const res = await next(req);
      return res.stream ? observeStream(res, () => undefined, map) : res;
    } catch (err) {
      throw map(err);
    }
  };
}

/**
 * Service-to-service auth: with tokens configured, every RPC needs `authorization: Bearer <token>`
 * (compared in constant time). With no tokens the interceptor is not installed (the server warns).
 */
export function authInterceptor(tokens: readonly string[]): Interceptor {
  const match = createTokenMatcher(tokens);
  const identities = tokens.map(callerIdentity);
  return (next) => async (req) => {
    const token = parseBearer(req.header.get('authorization'));
    if (token === undefined) throw new ConnectError('missing bearer token', Code.Unauthenticated);
    const index = match(token);
    if (index < 0) throw new ConnectError('invalid bearer token', Code.Unauthenticated);
    req.contextValues.set(callerKey, identities[index]!);
    return next(req);
  };
}

/** Structured call logs: failures always, successes at debug level (hot path stays quiet at info). */
export function loggingInterceptor(logger: Logger): Interceptor {
  return (next) => async (req) => {
    const started = performance.now();
    const log = (err: unknown) => {
      const fields = {
        rpcService: req.service.typeName,
        rpcMethod: req.method.name,
        transport: req.contextValues.get(transportKey),
        durationMs: Math.round((performance.now() - started) * 100) / 100,
      };
      if (err === undefined) {
        if (logger.isLevelEnabled('debug')) logger.debug({ ...fields, code: 'ok' }, 'rpc completed');
        return;
      }
      const code = err instanceof ConnectError ? err.code : Code.Unknown;
      const level = code === Code.Internal || code === Code.Unknown ? 'error' : 'info';
      logger[level](
        {
          ...fields,
          code: codeName(code),
          message: err instanceof ConnectError ? err.rawMessage : undefined,
        },
        'rpc failed',
      );
    };
    try {
      const res = await next(req);
      if (res.stream) return observeStream(res, log);
      log(undefined);
      return res;
    } catch (err) {
      log(err);
      throw err;
    }
  };
}

/** Prometheus instruments for RPCs, registered once per registry. */
export class RpcMetrics {
  readonly handled: Counter<'rpc_service' | 'rpc_method' | 'rpc_code' | 'transport'>;
  readonly duration: Histogram<'rpc_service' | 'rpc_method' | 'transport'>;
  readonly inFlight: Gauge<'rpc_service' | 'rpc_method'>;

  constructor(registry: Registry) {
    this.handled = new Counter({
      name: 'rpc_server_handled_total',
      help: 'RPCs completed on the server, by service, method, status code and transport.',
      labelNames: ['rpc_service', 'rpc_method', 'rpc_code', 'transport'],
      registers: [registry],
    });
    this.duration = new Histogram({
      name: 'rpc_server_handling_seconds',
      help: 'Time from the start of an RPC to its last response message, in seconds.',
      labelNames: ['rpc_service', 'rpc_method', 'transport'],
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [registry],
    });
    this.inFlight = new Gauge({
      name: 'rpc_server_in_flight',
      help: 'RPCs currently being handled (streams count while open).',
      labelNames: ['rpc_service', 'rpc_method'],
      registers: [registry],
    });
  }
}

/** Counts calls by code, times them, and tracks calls in flight. */
export function metricsInterceptor(metrics: RpcMetrics): Interceptor {
  // Label children resolved once per method and transport: `labels()` hashes its arguments on every
  // call, a measurable cost on the unary hot path.
  type Children = {
    inFlight: ReturnType<RpcMetrics['inFlight']['labels']>;
    duration: ReturnType<RpcMetrics['duration']['labels']>;
    handled: Map<string, ReturnType<RpcMetrics['handled']['labels']>>;
  };
  const cache = new Map<string, Children>();
  const childrenFor = (service: string, method: string, transport: string): Children => {
    const key = `${service}/${method}/${transport}`;
    let c = cache.get(key);
    if (!c) {
      c = {
        inFlight: metrics.inFlight.labels(service, method),
        duration: metrics.duration.labels(service, method, transport),
        handled: new Map(),
      };
      cache.set(key, c);
    }
    return c;
  };
  return (next) => async (req) => {
    const service = req.service.typeName;
    const method = req.method.name;
    const transport = req.contextValues.get(transportKey);
    const c = childrenFor(service, method, transport);
    const started = performance.now();
    c.inFlight.inc();
    const done = (err: unknown) => {
      c.inFlight.dec();
      const code = err === undefined ? 'ok' : codeName(err instanceof ConnectError ? err.code : Code.Unknown);
      let handled = c.handled.get(code);
      if (!handled) c.handled.set(code, (handled = metrics.handled.labels(service, method, code, transport)));
      handled.inc();
      c.duration.observe((performance.now() - started) / 1000);
    };
    try {
      const res = await next(req);
      if (res.stream) return observeStream(res, done);
      done(undefined);
      return res;
    } catch (err) {
      done(err);
      throw err;
    }
  };
}
