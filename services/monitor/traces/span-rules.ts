/**
 * What a span must be to be stored (ids, name, times) and the limits applied on the way in
 * (`tracing.max_attributes`, `max_events`, `max_links`, `max_string_length`). Shared by ExportSpans
 * and the OTLP endpoints, so both refuse and trim the same way.
 */
import { InvalidArgumentError } from '../../../shared/errors';
import type { AttributeValue, Attributes, DroppedCounts, SpanInput, SpanRecord } from './span';
import { cutText } from '../../../shared/text/cut';

/** Most spans accepted in one ExportSpans or OTLP export request. */
export const MAX_SPANS_PER_REQUEST = 10_000;

const TRACE_ID = /^[0-9a-f]{32}$/;
const SPAN_ID = /^[0-9a-f]{16}$/;
const ALL_ZERO = /^0+$/;

/** True for a trace id: 32 lowercase hex characters, not all zero. */
export function isTraceId(id: string): boolean {
  return TRACE_ID.test(id) && !ALL_ZERO.test(id);
}

/** True for a span id: 16 lowercase hex characters, not all zero. */
export function isSpanId(id: string): boolean {
  return SPAN_ID.test(id) && !ALL_ZERO.test(id);
}

/**
 * Why `span` cannot be stored, or undefined when it can. The reason names the field as the
 * MonitorService proto does (`trace_id`, `end_time`).
 */
export function spanProblem(span: SpanInput): string | undefined {
  if (!isTraceId(span.traceId)) return 'trace_id must be 32 lowercase hex characters, not all zero';
  if (!isSpanId(span.spanId)) return 'span_id must be 16 lowercase hex characters, not all zero';
  if (span.parentSpanId !== '' && !isSpanId(span.parentSpanId)) {
    return 'parent_span_id must be empty or 16 lowercase hex characters, not all zero';
  }
  if (span.parentSpanId === span.spanId) return 'parent_span_id must differ from span_id';
  if (span.name.trim() === '') return 'name is required';
  if (span.startNs === undefined || span.startNs <= 0n) return 'start_time is required';
  if (span.endNs === undefined || span.endNs <= 0n) return 'end_time is required';
  if (span.endNs < span.startNs) return 'end_time is before start_time';
  for (const [i, link] of span.links.entries()) {
    if (!isTraceId(link.traceId) || !isSpanId(link.spanId)) {
      return `links[${i}] must have a valid trace_id and span_id`;
    }
  }
  return undefined;
}

/**
 * Validates a whole request before anything is stored (nothing half-applied): throws
 * InvalidArgumentError naming the first bad span as `describe(index)` returns it.
 */
export function validateSpans(
  spans: readonly SpanInput[],
  describe: (index: number) => string = (i) => `spans[${i}]`,
): void {
  if (spans.length > MAX_SPANS_PER_REQUEST) {
    throw new InvalidArgumentError(
      `at most ${MAX_SPANS_PER_REQUEST} spans per request (got ${spans.length})`,
      'spans',
    );
  }
  spans.forEach((span, i) => {
    const problem = spanProblem(span);
    if (problem) throw new InvalidArgumentError(`${describe(i)}: ${problem}`, describe(i));
  });
}

/** The limits applied to each span on the way in. */
export interface SpanLimits {
  maxAttributes: number;
  maxEvents: number;
  maxLinks: number;
  /** Longest string kept (names, messages, attribute keys and values), in characters. */
  maxStringLength: number;
}

/** What applying the limits to one span gives. */
export interface LimitedSpan {
  span: SpanRecord;
  /** Attributes (of the span, its events and links), events and links dropped. */
  dropped: DroppedCounts;
  /** Strings shortened. */
  truncated: number;
}

/**
 * Applies `limits` the OpenTelemetry way (as the SDK does): attributes and links beyond the limit are
 * dropped (the first ones kept), events beyond it drop the oldest and counted in the span's dropped counts; strings are cut to the maximum
 * length. Never a failure. The span must have passed {@link spanProblem}.
 */
export function applyLimits(input: SpanInput, limits: SpanLimits): LimitedSpan {
  const dropped: DroppedCounts = { attributes: 0, events: 0, links: 0 };
  let truncated = 0;
  const cut = (s: string): string => {
    if (s.length <= limits.maxStringLength) return s;
    truncated++;
    return cutText(s, limits.maxStringLength);
  };
  const value = (v: AttributeValue): AttributeValue => {
    if (typeof v === 'string') return cut(v);
    if (Array.isArray(v)) return v.map(value);
    if (v !== null && typeof v === 'object') return attrs(v, false);
    return v;
  };
  const attrs = (a: Attributes, count: boolean): Attributes => {
    const out: Attributes = {};
    let kept = 0;
    for (const [key, v] of Object.entries(a)) {
      if (kept >= limits.maxAttributes) {
        if (count) dropped.attributes++;
        continue;
      }
      out[cut(key)] = value(v);
      kept++;
    }
    return out;
  };
  // Like the SDK, the oldest events go first: the latest ones are the most telling.
  const events = input.events.slice(Math.max(0, input.events.length - limits.maxEvents)).map((e) => ({
    name: cut(e.name),
    timeNs: e.timeNs,
    attributes: attrs(e.attributes, true),
  }));
  dropped.events = input.events.length - events.length;
  const links = input.links.slice(0, limits.maxLinks).map((l) => ({
    traceId: l.traceId,
    spanId: l.spanId,
    attributes: attrs(l.attributes, true),
  }));
  dropped.links = input.links.length - links.length;
  const span: SpanRecord = {
    traceId: input.traceId,
    spanId: input.spanId,
    parentSpanId: input.parentSpanId,
    name: cut(input.name),
    kind: input.kind,
    startNs: input.startNs!,
    endNs: input.endNs!,
    attributes: attrs(input.attributes, true),
    events,
    links,
    statusCode: input.statusCode,
    statusMessage: cut(input.statusMessage),
    serviceName: cut(input.serviceName),
    dropped,
  };
  return { span, dropped: { ...dropped }, truncated };
}
