/**
 * `monitor`: structured log events around each call, for sync and async callables, as a function
 * wrapper and as a method decorator: `operation_start` (debug), `operation_end` (info) with
 * `elapsed_ms`, and `operation_error` (error) with `elapsed_ms` and the error. With `log_args`, the
 * number of positional arguments is logged (`args_count`), never their values, which may hold
 * personal data or secrets.
 *
 * Default name, our TypeScript equivalent of the spec's `{module}.{qualname}`: `{service}.{qualname}`
 * with `qualname` as for `metered` (`Class.method`, or the function's name) and `service` left out
 * when not given.
 */
import type { Logger } from '../../logging/logger';
import { type Clock, systemClock } from '../../runtime/clock';
import { instrumentationDefaults, instrumentDecorator, type InstrumentDecorator } from './wrap-callable';

/** Options of monitor. */
export interface MonitorOptions {
  /** Log the positional-argument count (`args_count`). */
  log_args?: boolean;
  /** Module part of the default name. */
  service?: string;
  /** Where the events go; the instrumentation default when omitted. */
  logger?: Logger;
  clock?: Clock;
}

/** Log event names written by `monitor`. */
export const MonitorLogEvent = {
  START: 'operation_start',
  END: 'operation_end',
  ERROR: 'operation_error',
} as const;

interface Token {
  operation: string;
  at: number;
  fields: Record<string, unknown>;
}

/**
 * Logs `operation_start`, `operation_end` / `operation_error` with elapsed milliseconds around
 * every call. `monitor(name, true)` is short for `monitor(name, { log_args: true })`.
 */
export function monitor(name?: string | null, options: MonitorOptions | boolean = {}): InstrumentDecorator {
  const o: MonitorOptions = typeof options === 'boolean' ? { log_args: options } : options;
  const clock = o.clock ?? systemClock;
  const logger = (): Logger => o.logger ?? instrumentationDefaults().logger;
  const elapsed = (t: Token): number => Math.round((clock.monotonic() - t.at) * 1000) / 1000;
  return instrumentDecorator<Token>({
    start(qualname, args) {
      const operation = name ?? (o.service ? `${o.service}.${qualname}` : qualname);
      const fields: Record<string, unknown> = { operation };
      if (o.log_args) fields.args_count = args.length;
      logger().debug({ event: MonitorLogEvent.START, ...fields }, MonitorLogEvent.START);
      return { operation, at: clock.monotonic(), fields };
    },
    success(t) {
      logger().info({ event: MonitorLogEvent.END, ...t.fields, elapsed_ms: elapsed(t) }, MonitorLogEvent.END);
    },
    failure(t, err) {
      logger().error(
        { event: MonitorLogEvent.ERROR, ...t.fields, elapsed_ms: elapsed(t), err },
        MonitorLogEvent.ERROR,
      );
    },
  });
}
