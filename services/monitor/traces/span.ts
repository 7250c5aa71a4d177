/**
 * The monitor's span model, independent of any wire format: MonitorService's `Span` and OTLP's
 * `Span` both convert to and from it (rpc/ and otlp/), and the span store keeps it.
 */

/** An attribute value: what protobuf's Struct and OTLP's AnyValue can both carry. */
export type AttributeValue = string | number | boolean | null | AttributeValue[] | Attributes;

/** Attributes by key. */
export interface Attributes {
  [key: string]: AttributeValue;
}

/** Span kinds; OpenTelemetry's UNSPECIFIED is stored as `internal` (its documented default). */
export type SpanKind = 'internal' | 'server' | 'client' | 'producer' | 'consumer';

/** OpenTelemetry status codes. */
export type SpanStatusCode = 'unset' | 'ok' | 'error';

/** A timestamped annotation on a span. */
export interface SpanEventRecord {
  name: string;
  /** Nanoseconds since the Unix epoch. */
  timeNs: bigint;
  attributes: Attributes;
}

/** A pointer to another span. */
export interface SpanLinkRecord {
  traceId: string;
  spanId: string;
  attributes: Attributes;
}

/**
 * A span as a caller sends it, before validation: times are optional so the validator can say
 * which one is missing.
 */
export interface SpanInput {
  /** 32 lowercase hex characters, not all zero. */
  traceId: string;
  /** 16 lowercase hex characters, not all zero. */
  spanId: string;
  /** Empty for a root span. */
  parentSpanId: string;
  name: string;
  kind: SpanKind;
  /** Nanoseconds since the Unix epoch; undefined when the caller sent none. */
  startNs: bigint | undefined;
  endNs: bigint | undefined;
  attributes: Attributes;
  events: SpanEventRecord[];
  links: SpanLinkRecord[];
  statusCode: SpanStatusCode;
  statusMessage: string;
  serviceName: string;
}

/** What the tracing limits dropped from one span (OpenTelemetry's dropped counts). */
export interface DroppedCounts {
  attributes: number;
  events: number;
  links: number;
}

/** A validated span, limits applied, as the store keeps it. */
export interface SpanRecord extends Omit<SpanInput, 'startNs' | 'endNs'> {
  startNs: bigint;
  endNs: bigint;
  dropped: DroppedCounts;
}

/** Span kinds by OpenTelemetry's numbering (both protos use it); 0, UNSPECIFIED, is `internal`. */
export const SPAN_KIND_BY_NUMBER: readonly SpanKind[] = [
  'internal',
  'internal',
  'server',
  'client',
  'producer',
  'consumer',
];

/** Status codes by OpenTelemetry's numbering (UNSET 0, OK 1, ERROR 2). */
export const STATUS_CODE_BY_NUMBER: readonly SpanStatusCode[] = ['unset', 'ok', 'error'];

/** The kind of an OpenTelemetry kind number; an unknown number counts as `internal`, the default. */
export function spanKindOf(n: number): SpanKind {
  return SPAN_KIND_BY_NUMBER[n] ?? 'internal';
}

/** The status of an OpenTelemetry status number; an unknown number counts as `unset`. */
export function statusCodeOf(n: number): SpanStatusCode {
  return STATUS_CODE_BY_NUMBER[n] ?? 'unset';
}
