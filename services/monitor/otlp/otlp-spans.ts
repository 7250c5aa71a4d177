/**
 * OTLP spans (`ExportTraceServiceRequest`) to the traces area's span model: ids from bytes to
 * lowercase hex, `AnyValue` attributes to plain values, the resource's `service.name` to each
 * span's service name. Both the gRPC and the HTTP endpoints use it, so spans from either land in
 * the span store exactly as ExportSpans stores them.
 */
import type { ExportTraceServiceRequest } from '../../../shared/gen/opentelemetry/proto/collector/trace/v1/trace_service_pb';
import type { AnyValue, KeyValue } from '../../../shared/gen/opentelemetry/proto/common/v1/common_pb';
import type { Span } from '../../../shared/gen/opentelemetry/proto/trace/v1/trace_pb';
import {
  type AttributeValue,
  type Attributes,
  type SpanInput,
  spanKindOf,
  statusCodeOf,
} from '../traces/span';

/** The service name of spans whose resource has no `service.name` (the SDKs' own default). */
export const UNKNOWN_SERVICE = 'unknown_service';

function hex(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('hex');
}

function plainValue(v: AnyValue | undefined): AttributeValue {
  const value = v?.value;
  switch (value?.case) {
    case 'stringValue':
    case 'boolValue':
      return value.value;
    case 'intValue': {
      // int64: a number when exact, else its decimal text (never a silently rounded number).
      const n = Number(value.value);
      return Number.isSafeInteger(n) ? n : value.value.toString();
    }
    case 'doubleValue':
      // NaN and infinities have no JSON (Struct) form: keep their text.
      return Number.isFinite(value.value) ? value.value : String(value.value);
    case 'arrayValue':
      return value.value.values.map(plainValue);
    case 'kvlistValue':
      return attributesOf(value.value.values);
    case 'bytesValue':
      return Buffer.from(value.value).toString('base64');
    default:
      return null;
  }
}

/** OTLP key-values as plain attributes (a repeated key: the last one wins). */
export function attributesOf(kvs: readonly KeyValue[]): Attributes {
  const out: Attributes = {};
  for (const kv of kvs) out[kv.key] = plainValue(kv.value);
  return out;
}

function serviceNameOf(attributes: readonly KeyValue[] | undefined): string {
  const v = attributes?.find((kv) => kv.key === 'service.name')?.value?.value;
  return v?.case === 'stringValue' && v.value !== '' ? v.value : UNKNOWN_SERVICE;
}

function spanInputOf(span: Span, serviceName: string): SpanInput {
  return {
    traceId: hex(span.traceId),
    spanId: hex(span.spanId),
    parentSpanId: hex(span.parentSpanId),
    name: span.name,
    kind: spanKindOf(span.kind),
    // 0 is OTLP's "not set": the validator reports it as missing.
    startNs: span.startTimeUnixNano === 0n ? undefined : span.startTimeUnixNano,
    endNs: span.endTimeUnixNano === 0n ? undefined : span.endTimeUnixNano,
    attributes: attributesOf(span.attributes),
    events: span.events.map((e) => ({
      name: e.name,
      timeNs: e.timeUnixNano,
      attributes: attributesOf(e.attributes),
    })),
    links: span.links.map((l) => ({
      traceId: hex(l.traceId),
      spanId: hex(l.spanId),
      attributes: attributesOf(l.attributes),
    })),
    statusCode: statusCodeOf(span.status?.code ?? 0),
    statusMessage: span.status?.message ?? '',
    serviceName,
  };
}

/** The spans of an OTLP request, and the OTLP path of each (for error messages). */
export interface OtlpSpans {
  spans: SpanInput[];
  /** `resource_spans[0].scope_spans[1].spans[2]` for the span at `index`. */
  describe(index: number): string;
}

/**
 * Every span of the request, in order. Spans under the deprecated `instrumentation_library_spans`
 * (SDKs before OTLP 0.15) count too.
 */
export function spansOfRequest(req: ExportTraceServiceRequest): OtlpSpans {
  const spans: SpanInput[] = [];
  const paths: string[] = [];
  req.resourceSpans.forEach((rs, r) => {
    const service = serviceNameOf(rs.resource?.attributes);
    const groups: Array<[string, { spans: Span[] }[]]> = [
      ['scope_spans', rs.scopeSpans],
      ['instrumentation_library_spans', rs.instrumentationLibrarySpans],
    ];
    for (const [field, list] of groups) {
      list.forEach((group, g) => {
        group.spans.forEach((span, s) => {
          spans.push(spanInputOf(span, service));
          paths.push(`resource_spans[${r}].${field}[${g}].spans[${s}]`);
        });
      });
    }
  });
  return { spans, describe: (i) => paths[i] ?? `spans[${i}]` };
}
