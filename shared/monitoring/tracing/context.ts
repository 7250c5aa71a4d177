/**
 * The active span of the current asynchronous flow, kept in one AsyncLocalStorage for the whole
 * process. It is registered as OpenTelemetry's global context manager, so our Tracer, the SDK's
 * gRPC and pg instrumentations and the logger (trace ids in log lines) all see the same active span.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { type Context, type ContextManager, ROOT_CONTEXT, context as otelContext } from '@opentelemetry/api';

/** OpenTelemetry's ContextManager on AsyncLocalStorage, with `enterWith` for `setCurrentSpan`. */
export class SpanContextManager implements ContextManager {
  private readonly storage = new AsyncLocalStorage<Context>();

  active(): Context {
    return this.storage.getStore() ?? ROOT_CONTEXT;
  }

  with<A extends unknown[], F extends (...args: A) => ReturnType<F>>(
    context: Context,
    fn: F,
    thisArg?: ThisParameterType<F>,
    ...args: A
  ): ReturnType<F> {
    return this.storage.run(context, () => fn.apply(thisArg, args));
  }

  /** Makes `context` active for the rest of the current synchronous and asynchronous flow. */
  enterWith(context: Context): void {
    this.storage.enterWith(context);
  }

  bind<T>(context: Context, target: T): T {
    if (typeof target !== 'function') return target;
    const run = (...args: unknown[]) =>
      this.with(context, () => (target as (...a: unknown[]) => unknown)(...args));
    return run as T;
  }

  enable(): this {
    return this;
  }

  disable(): this {
    this.storage.disable();
    return this;
  }
}

let manager: SpanContextManager | undefined;

/**
 * The process's context manager, registered globally on first use, unless `register` is false
 * because the caller hands it to the OpenTelemetry SDK, which registers it (registering twice makes
 * the API log an error). If something else registered a manager first, ours still tracks our spans.
 */
export function spanContextManager(register = true): SpanContextManager {
  if (!manager) {
    manager = new SpanContextManager();
    if (register) otelContext.setGlobalContextManager(manager);
  }
  return manager;
}
