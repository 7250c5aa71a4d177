/**
 * `traced(spanName?, options?)`: runs a sync or async function in a span named by default with its
 * qualified name, records the call's positional-argument count as a span event (values are not
 * recorded: they may hold personal data or secrets), and records what it throws.
 */
import { getGlobalTracer } from '../tracing/global';
import type { TracerProtocol } from '../tracing/tracer';
import { type WrapperOrDecorator, wrapperOrDecorator } from './decorate';

/** Options of {@link traced}. */
export interface TracedOptions {
  /** The tracer; by default the process's tracer at call time. */
  tracer?: TracerProtocol;
  /** Recorded as the span's `service` attribute. */
  service?: string;
}

/** The `traced` wrapper and decorator. */
export function traced(spanName?: string, options: TracedOptions = {}): WrapperOrDecorator {
  return wrapperOrDecorator((fn, qualname) => {
    const name = spanName ?? qualname;
    const attributes = {
      'code.function': qualname,
      ...(options.service ? { service: options.service } : {}),
    };
    const wrapped = function (this: unknown, ...args: unknown[]) {
      const tracer = options.tracer ?? getGlobalTracer();
      return tracer.startActiveSpan(name, { attributes }, (span) => {
        span.addEvent('call', { 'args.count': args.length });
        return fn.apply(this, args);
      });
    };
    return wrapped as typeof fn;
  });
}
