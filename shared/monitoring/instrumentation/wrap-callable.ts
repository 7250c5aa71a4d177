/**
 * The common machinery of the instrumentation helpers (`metered`, `monitor`): wrap a sync or async
 * callable with an observer of each call, usable as a plain wrapper, as a TypeScript 5 (standard)
 * method decorator, and as a legacy (experimentalDecorators) method decorator, which the jest swc
 * config emits. Also the defaults (collector, logger) the helpers use when given none.
 */
import { type Logger, silentLogger } from '../../logging/logger';
import { type MetricsCollectorProtocol, NoopMetricsCollector } from '../collector';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyFunction = (...args: any[]) => unknown;

/** Sees one call: `start` before it, then `success` or `failure` when it returns, throws or settles. */
export interface CallObserver<T = unknown> {
  /** `qualname` is `Class.method` for decorated methods, the function's name for wrapped functions. */
  start(qualname: string, args: readonly unknown[]): T;
  success(token: T): void;
  failure(token: T, error: unknown): void;
}

/** A wrapper and a method decorator in one (the shape of `metered(...)` and `monitor(...)`). */
export interface InstrumentDecorator {
  /** Wrapper form: returns an instrumented `fn`. */
  <F extends AnyFunction>(fn: F): F;
  /** TypeScript 5 (standard) method decorator. */
  <F extends AnyFunction>(fn: F, context: ClassMethodDecoratorContext): F;
  /** Legacy (experimentalDecorators) method decorator. */
  (target: object, key: string | symbol, descriptor: PropertyDescriptor): PropertyDescriptor;
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (
    value !== null &&
    (typeof value === 'object' || typeof value === 'function') &&
    typeof (value as { then?: unknown }).then === 'function'
  );
}

/**
 * Returns `fn` wrapped so that `observer` sees every call. An async result is observed when it
 * settles; the caller gets the same value or error. The wrapper keeps `this` and the name of `fn`.
 */
export function wrapCallable<F extends AnyFunction, T>(
  fn: F,
  qualname: (self: unknown) => string,
  observer: CallObserver<T>,
): F {
  const wrapped = function (this: unknown, ...args: unknown[]): unknown {
    const token = observer.start(qualname(this), args);
    let out: unknown;
    try {
      out = fn.apply(this, args);
    } catch (err) {
      observer.failure(token, err);
      throw err;
    }
    if (isThenable(out)) {
      return Promise.resolve(out).then(
        (value) => {
          observer.success(token);
          return value;
        },
        (err: unknown) => {
          observer.failure(token, err);
          throw err;
        },
      );
    }
    observer.success(token);
    return out;
  };
  Object.defineProperty(wrapped, 'name', { value: fn.name, configurable: true });
  return wrapped as F;
}

function ownerName(self: unknown, isStatic: boolean): string {
  if (isStatic && typeof self === 'function') return self.name || 'anonymous';
  const ctor = (self as { constructor?: { name?: string } } | null | undefined)?.constructor;
  return ctor?.name || 'anonymous';
}

/** Builds the wrapper-and-decorator for an observer. */
export function instrumentDecorator<T>(observer: CallObserver<T>): InstrumentDecorator {
  function decorate(...args: unknown[]): unknown {
    const [first, second, third] = args;
    if (args.length === 3 && typeof second !== 'object') {
      // Legacy decorator: (prototype or constructor, key, descriptor).
      const descriptor = third as PropertyDescriptor;
      const owner = typeof first === 'function' ? first.name : ownerName(first, false);
      const qualname = `${owner}.${String(second)}`;
      return {
        ...descriptor,
        value: wrapCallable(descriptor.value as AnyFunction, () => qualname, observer),
      };
    }
    const fn = first as AnyFunction;
    const context = second as ClassMethodDecoratorContext | undefined;
    if (context && typeof context === 'object' && context.kind === 'method') {
      const method = String(context.name);
      return wrapCallable(fn, (self) => `${ownerName(self, context.static)}.${method}`, observer);
    }
    const name = fn.name || 'anonymous';
    return wrapCallable(fn, () => name, observer);
  }
  return decorate as InstrumentDecorator;
}

/** What the helpers use when not given a collector or logger. */
export interface InstrumentationDefaults {
  collector: MetricsCollectorProtocol;
  logger: Logger;
}

const defaults: InstrumentationDefaults = {
  collector: new NoopMetricsCollector(),
  logger: silentLogger(),
};

/**
 * Sets the collector and logger that `metered` and `monitor` use when not given one (the service's
 * composition root calls this once). Until then metrics are dropped and logs are silent. The
 * helpers read the defaults at each call, so functions decorated at import time pick them up.
 */
export function configureInstrumentation(changes: Partial<InstrumentationDefaults>): void {
  if (changes.collector) defaults.collector = changes.collector;
  if (changes.logger) defaults.logger = changes.logger;
}

/** The current defaults. */
export function instrumentationDefaults(): Readonly<InstrumentationDefaults> {
  return defaults;
}
