/**
 * Health checks: the protocol, BaseHealthCheck, FunctionHealthCheck, the `healthChecker` decorator
 * and the runner that executes a check with a timeout and turns whatever it returns or throws into a
 * HealthCheckResult.
 */
import type { Logger } from '../../logging/logger';
import type { Clock, Timers } from '../../runtime/clock';
import { type HealthCheckCategory, HealthCheckResult, HealthStatus, parseStatus } from './result';

/** What a callable check may return. */
export type CheckOutcome = boolean | Record<string, unknown> | HealthCheckResult | null | undefined | void;

/** A callable check. */
export type CheckFunction = () => CheckOutcome | Promise<CheckOutcome>;

/** A check object: `check()` resolves to a result. */
export interface HealthCheckProtocol {
  check(): Promise<HealthCheckResult> | HealthCheckResult;
}

/** Anything HealthChecker.add accepts. */
export type HealthCheckLike = HealthCheckProtocol | CheckFunction;

/** Default seconds allowed to one check (`health_check` timeout). */
export const DEFAULT_CHECK_TIMEOUT = 5.0;

/** Name of an error for a result message: its type only, never its text. */
export function errorTypeOf(err: unknown): string {
  if (err instanceof Error) {
    const ctor = err.constructor?.name;
    return err.name && err.name !== 'Error' ? err.name : ctor || 'Error';
  }
  return typeof err;
}

/** Turns what a check returned into a result. */
export function toResult(
  name: string,
  outcome: CheckOutcome,
  category: HealthCheckCategory | null,
): HealthCheckResult {
  if (outcome instanceof HealthCheckResult) return outcome.category ? outcome : outcome.with({ category });
  if (outcome === undefined || outcome === null || outcome === true) {
    return new HealthCheckResult({ component: name, status: HealthStatus.HEALTHY, category });
  }
  if (outcome === false) {
    return new HealthCheckResult({
      component: name,
      status: HealthStatus.UNHEALTHY,
      message: `${name} check failed`,
      category,
    });
  }
  const { status, healthy, message, details: nested, ...rest } = outcome;
  const details =
    nested && typeof nested === 'object' && !Array.isArray(nested)
      ? { ...(nested as Record<string, unknown>), ...rest }
      : rest;
  let parsed = parseStatus(status);
  if (!parsed) parsed = healthy === false ? HealthStatus.UNHEALTHY : HealthStatus.HEALTHY;
  return new HealthCheckResult({
    component: name,
    status: parsed,
    message: typeof message === 'string' ? message : null,
    details,
    category,
  });
}

/** Base of check classes. `critical` matters to the legacy registry's aggregate. */
export abstract class BaseHealthCheck implements HealthCheckProtocol {
  constructor(
    readonly name: string,
    readonly critical = true,
  ) {}

  /** Performs the check. */
  abstract check(): Promise<HealthCheckResult>;

  /** Runs `check()` bounded by `timeout` seconds; failures and timeouts become UNHEALTHY results. */
  healthCheck(timeout = DEFAULT_CHECK_TIMEOUT): Promise<HealthCheckResult> {
    return runCheck(this.name, this, { timeoutSeconds: timeout, category: null });
  }
}

/** A check made from a function returning a boolean, a mapping or a HealthCheckResult. */
export class FunctionHealthCheck extends BaseHealthCheck {
  constructor(
    name: string,
    private readonly func: CheckFunction,
    critical = true,
  ) {
    super(name, critical);
  }

  async check(): Promise<HealthCheckResult> {
    return toResult(this.name, await this.func(), null);
  }
}

/** What `healthChecker` stamps on a function. */
export interface HealthCheckStamp {
  name: string;
  timeout?: number;
  category?: HealthCheckCategory;
}

/** Property under which the stamp is stored. */
export const HEALTH_CHECK_STAMP: unique symbol = Symbol.for('svc.monitoring.healthChecker') as never;

type Stamped = { [HEALTH_CHECK_STAMP]?: HealthCheckStamp };
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyFunction = (...args: any[]) => unknown;

/** The stamp left by `healthChecker`, if any. */
export function stampOf(value: unknown): HealthCheckStamp | undefined {
  if (typeof value !== 'function') return undefined;
  return (value as Stamped)[HEALTH_CHECK_STAMP];
}

function stamp<F extends AnyFunction>(fn: F, s: HealthCheckStamp): F {
  Object.defineProperty(fn, HEALTH_CHECK_STAMP, { value: s, enumerable: false, configurable: true });
  return fn;
}

/** The function returned by `healthChecker(name)`: a wrapper and a method decorator in one. */
export interface HealthCheckerDecorator {
  /** Wrapper form: stamps `fn` and returns it. */
  <F extends AnyFunction>(fn: F): F;
  /** TypeScript 5 (standard) method decorator: stamps the method, bound to its instance. */
  <F extends AnyFunction>(fn: F, context: ClassMethodDecoratorContext): F;
  /** Legacy (experimentalDecorators) method decorator, for compilers that still emit it. */
  (target: object, key: string | symbol, descriptor: PropertyDescriptor): PropertyDescriptor;
}

/**
 * Marks a function (or a class method) as the health check `name`, so `HealthChecker.register` can
 * read its name, timeout and category. Decorated methods are bound to their instance, so
 * `checker.register(service.checkDatabase)` works.
 */
export function healthChecker(
  name: string,
  options: { timeout?: number; category?: HealthCheckCategory } = {},
): HealthCheckerDecorator {
  const s: HealthCheckStamp = { name, ...options };
  function decorate(...args: unknown[]): unknown {
    const [first, second, third] = args;
    if (args.length === 3 && typeof second !== 'object') {
      // Legacy decorator: (prototype, key, descriptor). Bind lazily per instance.
      const descriptor = third as PropertyDescriptor;
      const method = descriptor.value as AnyFunction;
      stamp(method, s);
      const key = second as string | symbol;
      return {
        configurable: true,
        enumerable: descriptor.enumerable,
        get(this: object): AnyFunction {
          const bound = stamp(method.bind(this), s);
          Object.defineProperty(this, key, { value: bound, configurable: true, writable: true });
          return bound;
        },
      } satisfies PropertyDescriptor;
    }
    const fn = first as AnyFunction;
    const context = second as ClassMethodDecoratorContext | undefined;
    if (context && typeof context === 'object' && context.kind === 'method') {
      context.addInitializer(function (this: unknown) {
        const self = this as Record<string | symbol, unknown>;
        self[context.name] = stamp(fn.bind(self), s);
      });
    }
    return stamp(fn, s);
  }
  return decorate as HealthCheckerDecorator;
}

/** How to run one check. */
export interface RunCheckOptions {
  timeoutSeconds?: number | null;
  category: HealthCheckCategory | null;
  clock?: Clock;
  timers?: Timers;
  logger?: Logger;
}

/**
 * Runs one check bounded by its timeout. Never rejects: a throw becomes UNHEALTHY with the error
 * type as message ("ConnectionError: connection check failed"), the detail goes to the logger; a
 * timeout becomes UNHEALTHY ("TimeoutError: ..."). The duration comes from the injected clock.
 */
export function runCheck(
  name: string,
  check: HealthCheckLike,
  options: RunCheckOptions,
): Promise<HealthCheckResult> {
  const clock = options.clock;
  const started = clock ? clock.monotonic() : performance.now();
  const stop = (): number => (clock ? clock.monotonic() : performance.now()) - started;
  const now = (): number => (clock ? clock.now() : Date.now());
  const { category } = options;
  const work = Promise.resolve().then(() =>
    typeof check === 'function' ? check() : (check as HealthCheckProtocol).check(),
  );
  const settled = work.then(
    (outcome) =>
      toResult(name, outcome as CheckOutcome, category).with({ durationMs: stop(), checkedAt: now() }),
    (err: unknown) => {
      const type = errorTypeOf(err);
      options.logger?.warn({ err, check: name }, 'health check failed');
      return new HealthCheckResult({
        component: name,
        status: HealthStatus.UNHEALTHY,
        message: `${type}: ${name} check failed`,
        error: type,
        durationMs: stop(),
        checkedAt: now(),
        category,
      });
    },
  );
  const seconds = options.timeoutSeconds;
  if (seconds === null || seconds === undefined || !(seconds > 0)) return settled;
  const timers = options.timers;
  return new Promise<HealthCheckResult>((resolve) => {
    const onTimeout = (): void => {
      options.logger?.warn({ check: name, timeoutSeconds: seconds }, 'health check timed out');
      resolve(
        new HealthCheckResult({
          component: name,
          status: HealthStatus.UNHEALTHY,
          message: `TimeoutError: ${name} check timed out after ${seconds}s`,
          error: 'TimeoutError',
          durationMs: stop(),
          checkedAt: now(),
          category,
        }),
      );
    };
    const ms = seconds * 1000;
    let handle: unknown;
    if (timers) handle = timers.setTimeout(onTimeout, ms);
    else {
      const t = setTimeout(onTimeout, ms);
      t.unref();
      handle = t;
    }
    void settled.then((result) => {
      if (timers) timers.clearTimeout(handle);
      else clearTimeout(handle as NodeJS.Timeout);
      resolve(result);
    });
  });
}
