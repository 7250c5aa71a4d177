/**
 * MonitorService's `Span` to and from the traces area's span model (ExportSpans, GetTrace).
 */
import { create, type JsonObject, type JsonValue, type MessageInitShape } from '@bufbuild/protobuf';
import type { Timestamp, TimestampSchema } from '@bufbuild/protobuf/wkt';
import {
  SpanKind as WireKind,
  SpanSchema,
  SpanStatusCode as WireStatus,
  type Span,
} from '../../../shared/gen/svc/monitor/v1/monitor_pb';
import { type Attributes, type SpanInput, type SpanRecord, spanKindOf, statusCodeOf } from '../traces/span';

const NS_PER_S = 1_000_000_000n;

function nsOf(ts: Timestamp | undefined): bigint | undefined {
  if (!ts) return undefined;
  return ts.seconds * NS_PER_S + BigInt(ts.nanos);
}

function timestampOf(ns: bigint): MessageInitShape<typeof TimestampSchema> {
  return { seconds: ns / NS_PER_S, nanos: Number(ns % NS_PER_S) };
}

const WIRE_KIND: Record<SpanRecord['kind'], WireKind> = {
  internal: WireKind.INTERNAL,
  server: WireKind.SERVER,
  client: WireKind.CLIENT,
  producer: WireKind.PRODUCER,
  consumer: WireKind.CONSUMER,
};

const WIRE_STATUS: Record<SpanRecord['statusCode'], WireStatus> = {
  unset: WireStatus.UNSPECIFIED,
  ok: WireStatus.OK,
  error: WireStatus.ERROR,
};

/** A wire span as the traces area takes it (validation is the area's). */
export function spanInputOf(span: Span): SpanInput {
  return {
    traceId: span.traceId,
    spanId: span.spanId,
    parentSpanId: span.parentSpanId,
    name: span.name,
    kind: spanKindOf(span.kind),
    startNs: nsOf(span.startTime),
    endNs: nsOf(span.endTime),
    attributes: (span.attributes ?? {}) as Attributes,
    events: span.events.map((e) => ({
      name: e.name,
      timeNs: nsOf(e.time) ?? 0n,
      attributes: (e.attributes ?? {}) as Attributes,
    })),
    links: span.links.map((l) => ({
      traceId: l.traceId,
      spanId: l.spanId,
      attributes: (l.attributes ?? {}) as Attributes,
    })),
    statusCode: statusCodeOf(span.statusCode),
    statusMessage: span.statusMessage,
    serviceName: span.serviceName,
  };
}

/** A stored span on the wire. */
export function wireSpanOf(span: SpanRecord): Span {
  return create(SpanSchema, {
    traceId: span.traceId,
    spanId: span.spanId,
    parentSpanId: span.parentSpanId,
    name: span.name,
    kind: WIRE_KIND[span.kind],
    startTime: timestampOf(span.startNs),
    endTime: timestampOf(span.endNs),
    attributes: span.attributes as JsonObject,
    events: span.events.map((e) => ({
      name: e.name,
      time: timestampOf(e.timeNs),
      attributes: e.attributes as JsonObject,
    })),
    links: span.links.map((l) => ({
      traceId: l.traceId,
      spanId: l.spanId,
      attributes: l.attributes as { [k: string]: JsonValue },
    })),
    statusCode: WIRE_STATUS[span.statusCode],
    statusMessage: span.statusMessage,
    serviceName: span.serviceName,
  });
}
