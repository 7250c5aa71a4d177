/**
 * `metered`: records each call's execution time, in seconds, on a histogram. Works as a function
 * wrapper and as a method decorator, for sync and async callables (an async call is timed until its
 * promise settles); failed calls are timed too.
 *
 * Default metric name, our TypeScript equivalent of the spec's `{module}.{qualname}.duration`:
 * `{service}.{qualname}.duration`, where `qualname` is `Class.method` for a decorated method and the
 * function's name for a wrapped function (`anonymous` without one), and `service` (the module part;
 * JavaScript has no module name at run time) is left out when not given. The collector exports
 * dots as underscores (`mail.Sender.send.duration` becomes `mail_Sender_send_duration`).
 */
import type { Logger } from '../../logging/logger';
import { type Clock, systemClock } from '../../runtime/clock';
import type { MetricsCollectorProtocol } from '../collector';
import { instrumentationDefaults, instrumentDecorator, type InstrumentDecorator } from './wrap-callable';

/** Options of metered. */
export interface MeteredOptions {
  /** Module part of the default name. */
  service?: string;
  /** Where the histogram is recorded; the instrumentation default when omitted. */
  collector?: MetricsCollectorProtocol;
  /** Where a failing record is reported; the instrumentation default when omitted. */
  logger?: Logger;
  clock?: Clock;
}

/** The default metric name of `metered` for `qualname`. */
export function defaultMeteredName(qualname: string, service?: string): string {
  return service ? `${service}.${qualname}.duration` : `${qualname}.duration`;
}

/**
 * Times every call on the histogram `metricName` (default {@link defaultMeteredName}). A failure to
 * record (a name already used by another metric type, for example) is logged and never breaks the
 * call.
 */
export function metered(metricName?: string | null, options: MeteredOptions = {}): InstrumentDecorator {
  const clock = options.clock ?? systemClock;
  let warned = false;
  const record = (token: { name: string; at: number }): void => {
    const seconds = (clock.monotonic() - token.at) / 1000;
    try {
      (options.collector ?? instrumentationDefaults().collector).histogram(token.name, seconds);
    } catch (err) {
      if (warned) return;
      warned = true;
      (options.logger ?? instrumentationDefaults().logger).warn(
        { err, metric: token.name },
        'metered: recording the duration failed',
      );
    }
  };
  return instrumentDecorator({
    start: (qualname) => ({
      name: metricName ?? defaultMeteredName(qualname, options.service),
      at: clock.monotonic(),
    }),
    success: record,
    failure: (token) => record(token),
  });
}
