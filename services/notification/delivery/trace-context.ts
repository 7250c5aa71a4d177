/**
 * Trace continuity across the delivery queue: the caller's trace context is stored with the
 * delivery as a W3C `traceparent` when it is accepted, and the worker runs the attempt span as its
 * child, so one trace shows SendEmail -> delivery attempt -> provider call even when the attempt
 * runs later or in another replica. W3C is used whatever `tracing.propagation_formats` says: the
 * value is ours, stored in our table, read by our worker.
 *
 * Without an OpenTelemetry SDK the API's no-op tracer creates non-recording spans with invalid
 * contexts, so nothing is stored and the spans cost next to nothing.
 */
import {
  type Context,
  type Span,
  SpanKind,
  SpanStatusCode,
  ROOT_CONTEXT,
  context as otelContext,
  defaultTextMapGetter,
  defaultTextMapSetter,
  trace,
} from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';

const propagator = new W3CTraceContextPropagator();
/** The instrumentation scope of the delivery spans. */
export const DELIVERY_TRACER_NAME = 'notification.delivery';
/** Longest traceparent kept (version 00 is 55 characters; later versions may append fields). */
export const MAX_TRACE_PARENT_LENGTH = 128;

/** The active span's context as a W3C traceparent, or null when no sampled span is active. */
export function currentTraceParent(ctx: Context = otelContext.active()): string | null {
  const carrier: Record<string, string> = {};
  propagator.inject(ctx, carrier, defaultTextMapSetter);
  const value = carrier.traceparent;
  return value && value.length <= MAX_TRACE_PARENT_LENGTH ? value : null;
}

/** The context a stored traceparent continues (the root context when there is none or it is invalid). */
export function contextFromTraceParent(traceParent: string | null | undefined): Context {
  if (!traceParent) return ROOT_CONTEXT;
  return propagator.extract(ROOT_CONTEXT, { traceparent: traceParent }, defaultTextMapGetter);
}

/** Starts a span as a child of `parent` (a context); the caller ends it. */
export function startDeliverySpan(
  name: string,
  parent: Context,
  kind: SpanKind,
  attributes: Record<string, string | number>,
): { span: Span; context: Context } {
  const span = trace.getTracer(DELIVERY_TRACER_NAME).startSpan(name, { kind, attributes }, parent);
  return { span, context: trace.setSpan(parent, span) };
}

/** Ends `span` with the outcome class as its status: anything but `sent` is an error. */
export function endDeliverySpan(span: Span, outcomeClass: string, reason?: string): void {
  span.setAttribute('delivery.outcome', outcomeClass);
  if (outcomeClass !== 'sent') span.setStatus({ code: SpanStatusCode.ERROR, message: reason });
  span.end();
}

export { SpanKind };
