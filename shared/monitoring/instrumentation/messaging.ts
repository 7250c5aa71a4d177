/**
 * Trace context across messages: `injectTraceContext` writes the current context into a carrier
 * (message headers); `tracePublish` and `traceConsume` run the send and the handling of a message in
 * PRODUCER and CONSUMER spans, the consumer's a child of the producer's through the carrier.
 */
import type { Attributes } from '@opentelemetry/api';
import { getGlobalTracer } from '../tracing/global';
import type { Carrier } from '../tracing/span-context';
import type { SpanLike } from '../tracing/span';
import type { TracerProtocol } from '../tracing/tracer';

/** Writes the current trace context into `carrier` and returns it. */
export function injectTraceContext(
  carrier: Carrier = {},
  tracer: TracerProtocol = getGlobalTracer(),
): Carrier {
  return tracer.injectContext(carrier);
}

/** Options of {@link tracePublish}. */
export interface TracePublishOptions {
  /** Default `email`, as in the spec. */
  messageType?: string;
  recipient?: string;
  attributes?: Attributes;
  tracer?: TracerProtocol;
}

/**
 * Runs `publish` in a PRODUCER span `publish <channel>`, handing it the carrier (with this span's
 * context) to send with the message.
 */
export function tracePublish<T>(
  channel: string,
  publish: (carrier: Carrier, span: SpanLike) => T,
  options: TracePublishOptions = {},
): T {
  const tracer = options.tracer ?? getGlobalTracer();
  const attributes: Attributes = {
    'messaging.destination.name': channel,
    'messaging.operation.type': 'publish',
    'message.type': options.messageType ?? 'email',
    // The recipient is personal data: only whether one was given is recorded.
    ...(options.recipient !== undefined ? { 'message.has_recipient': true } : {}),
    ...options.attributes,
  };
  return tracer.startActiveSpan(`publish ${channel}`, { kind: 'PRODUCER', attributes }, (span) =>
    publish(tracer.injectContext({}), span),
  );
}

/** Options of {@link traceConsume}. */
export interface TraceConsumeOptions {
  /** Default `unknown`, as in the spec. */
  messageType?: string;
  /** The headers the message came with; their trace context becomes the span's parent. */
  carrier?: Readonly<Record<string, string | string[] | undefined>>;
  attributes?: Attributes;
  tracer?: TracerProtocol;
}

/** Runs `handle` in a CONSUMER span `process <channel>`, under the context the carrier holds. */
export function traceConsume<T>(
  channel: string,
  handle: (span: SpanLike) => T,
  options: TraceConsumeOptions = {},
): T {
  const tracer = options.tracer ?? getGlobalTracer();
  const parent = options.carrier ? tracer.extractContext(options.carrier) : null;
  const attributes: Attributes = {
    'messaging.destination.name': channel,
    'messaging.operation.type': 'process',
    'message.type': options.messageType ?? 'unknown',
    ...options.attributes,
  };
  return tracer.startActiveSpan(
    `process ${channel}`,
    { kind: 'CONSUMER', attributes, ...(parent ? { context: parent } : {}) },
    handle,
  );
}
