/**
 * The process's tracer for code that is not handed one (the instrumentation helpers, `traced`):
 * the no-op tracer until the monitoring provider sets a real one.
 */
import { NoopTracer, type TracerProtocol } from './tracer';

const noop = new NoopTracer();
let current: TracerProtocol = noop;

/** The tracer helpers use when none is passed; the no-op tracer by default. */
export function getGlobalTracer(): TracerProtocol {
  return current;
}

/** Sets the process's tracer; `null` goes back to the no-op tracer. */
export function setGlobalTracer(tracer: TracerProtocol | null): void {
  current = tracer ?? noop;
}
