/**
 * The propagators of `tracing.propagation_formats`: `tracecontext` (W3C `traceparent` and
 * `tracestate`), `baggage` (W3C `baggage`) and `b3` (Zipkin's single `b3` header).
 */
import { type TextMapPropagator } from '@opentelemetry/api';
import { CompositePropagator, W3CBaggagePropagator, W3CTraceContextPropagator } from '@opentelemetry/core';
import { B3Propagator } from '@opentelemetry/propagator-b3';

/** The propagator that reads and writes every format in `formats`, in order. */
export function createPropagator(formats: readonly string[]): TextMapPropagator {
  const propagators = formats.map((format): TextMapPropagator => {
    switch (format) {
      case 'tracecontext':
        return new W3CTraceContextPropagator();
      case 'baggage':
        return new W3CBaggagePropagator();
      case 'b3':
        return new B3Propagator();
      default:
        throw new RangeError(`unknown propagation format "${format}"`);
    }
  });
  return new CompositePropagator({ propagators });
}
