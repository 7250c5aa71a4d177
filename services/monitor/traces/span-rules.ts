/**
 * What a span must be to be stored (ids, name, times) and the limits applied on the way in
 * (`tracing.max_attributes`, `max_events`, `max_links`, `max_string_length`). Shared by ExportSpans
 * and the OTLP endpoints, so both refuse and trim the same way.
 */
import { InvalidArgumentError } from '../../../shared/errors';
import type { AttributeValue, Attributes, DroppedCounts, SpanInput, SpanRecord } from './span';
import { cutText } from '../../../shared/text/cut';
import { TIME_RANGE_MS } from '../../../shared/runtime/clock';

/** Most spans accepted in one ExportSpans or OTLP export request. */
export const MAX_SPANS_PER_REQUEST = 10_000;

const TRACE_ID = /^[0-9a-f]{32}$/;
const SPAN_ID = /^[0-9a-f]{16}$/;
const ALL_ZERO = /^0+$/;
/** The last nanosecond a time of a span may hold (TIME_RANGE_MS: a Timestamp's range). */
const MAX_TIME_NS = BigInt(TIME_RANGE_MS.max) * 1_000_000n + 999_999n;

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
  // Past year 9999 a span was kept that GetTrace could not answer again (Connect JSON refuses such
  // a Timestamp: INTERNAL for the whole trace; found by a black-box probe).
  if (span.endNs > MAX_TIME_NS) return 'end_time is past 9999-12-31';
  for (const [i, event] of span.events.entries()) {
    if (event.timeNs > MAX_TIME_NS) return `events[${i}].time is past 9999-12-31`;
  }
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
  /** Longest string kept (names, messages, attribute keys and values), in UTF-16 code units. */
  maxStringLength: number;
  /** Most elements kept of a list attribute value (lists inside lists too); the first ones stay. */
  maxListLength: number;
  /** Most estimated bytes one stored span may hold (see {@link estimateBytes}). */
  maxSpanBytes: number;
}

/** What applying the limits to one span gives. */
export interface LimitedSpan {
  span: SpanRecord;
  /** Attributes (of the span, its events and links), events and links dropped. */
  dropped: DroppedCounts;
  /** Strings shortened. */
  truncated: number;
  /** List elements cut off by `maxListLength`. */
  listValuesDropped: number;
  /** The stored span's estimated size in bytes (at most `maxSpanBytes`, unless its fixed fields alone exceed it). */
  bytes: number;
}

// The estimate of what a span costs in memory: 2 bytes per UTF-16 code unit of a string, 8 for a
// number, boolean or null, 8 more per list element or map entry (the slot holding it), and a fixed
// part per span, event and link (ids, times, the objects themselves). Not exact; proportional.
const SLOT_BYTES = 8;
const SCALAR_BYTES = 8;
const SPAN_BYTES = 256;
const EVENT_BYTES = 64;
const LINK_BYTES = 128;

/** Estimated bytes of an attribute value, nested lists and maps included. */
export function estimateBytes(v: AttributeValue): number {
  if (typeof v === 'string') return 2 * v.length;
  if (Array.isArray(v)) {
    let n = 0;
    for (const e of v) n += SLOT_BYTES + estimateBytes(e);
    return n;
  }
  if (v !== null && typeof v === 'object') {
    let n = 0;
    for (const k in v) n += SLOT_BYTES + 2 * k.length + estimateBytes(v[k]!);
    return n;
  }
  return SCALAR_BYTES;
}

/**
 * Applies `limits` the OpenTelemetry way (as the SDK does): attributes and links beyond the limit are
 * dropped (the first ones kept), events beyond it drop the oldest, and counted in the span's dropped
 * counts; strings are cut to the maximum length and lists to the maximum list length (what is cut is
 * counted in the result). Then the span's bytes are bounded: its attributes (first ones first), its
 * events (newest first) and its links (first ones first) are kept while they fit in `maxSpanBytes`;
 * what does not fit is dropped and counted like the count limits' drops. Never a failure. The span
 * must have passed {@link spanProblem}.
 */
export function applyLimits(input: SpanInput, limits: SpanLimits): LimitedSpan {
  const dropped: DroppedCounts = { attributes: 0, events: 0, links: 0 };
  let truncated = 0;
  let listValuesDropped = 0;
  const cut = (s: string): string => {
    if (s.length <= limits.maxStringLength) return s;
    truncated++;
    return cutText(s, limits.maxStringLength);
  };
  const value = (v: AttributeValue): AttributeValue => {
    if (typeof v === 'string') return cut(v);
    if (Array.isArray(v)) {
      if (v.length > limits.maxListLength) listValuesDropped += v.length - limits.maxListLength;
      const n = Math.min(v.length, limits.maxListLength);
      const out: AttributeValue[] = new Array<AttributeValue>(n);
      for (let i = 0; i < n; i++) out[i] = value(v[i]!);
      return out;
    }
    if (v !== null && typeof v === 'object') return nested(v);
    return v;
  };
  // A map inside a value: the count limit applies, uncounted (it is not one of the span's attributes).
  const nested = (a: Attributes): Attributes => {
    const out: Attributes = {};
    let kept = 0;
    for (const key in a) {
      if (kept >= limits.maxAttributes) break;
      out[cut(key)] = value(a[key]!);
      kept++;
    }
    return out;
  };
  const name = cut(input.name);
  const statusMessage = cut(input.statusMessage);
  const serviceName = cut(input.serviceName);
  let bytes =
    SPAN_BYTES +
    2 * (input.traceId.length + input.spanId.length + input.parentSpanId.length) +
    2 * (name.length + statusMessage.length + serviceName.length);
  const fits = (cost: number): boolean => {
    if (bytes + cost > limits.maxSpanBytes) return false;
    bytes += cost;
    return true;
  };
  // The attributes of the span, an event or a link: the count limit, then the byte budget.
  const attrs = (a: Attributes): Attributes => {
    const out: Attributes = {};
    let kept = 0;
    for (const key in a) {
      if (kept >= limits.maxAttributes) {
        dropped.attributes++;
        continue;
      }
      const k = cut(key);
      const v = value(a[key]!);
      if (!fits(SLOT_BYTES + 2 * k.length + estimateBytes(v))) {
        dropped.attributes++;
        continue;
      }
      out[k] = v;
      kept++;
    }
    return out;
  };
  const attributes = attrs(input.attributes);
  // Like the SDK, the oldest events go first: the latest ones are the most telling. The byte budget
  // is spent newest first for the same reason.
  const recent = input.events.slice(Math.max(0, input.events.length - limits.maxEvents));
  const events: SpanRecord['events'] = [];
  for (let i = recent.length - 1; i >= 0; i--) {
    const e = recent[i]!;
    const eventName = cut(e.name);
    if (!fits(EVENT_BYTES + 2 * eventName.length)) continue;
    events.push({ name: eventName, timeNs: e.timeNs, attributes: attrs(e.attributes) });
  }
  events.reverse();
  dropped.events = input.events.length - events.length;
  const links: SpanRecord['links'] = [];
  for (const l of input.links.slice(0, limits.maxLinks)) {
    if (!fits(LINK_BYTES)) continue;
    links.push({ traceId: l.traceId, spanId: l.spanId, attributes: attrs(l.attributes) });
  }
  dropped.links = input.links.length - links.length;
  const span: SpanRecord = {
    traceId: input.traceId,
    spanId: input.spanId,
    parentSpanId: input.parentSpanId,
    name,
    kind: input.kind,
    startNs: input.startNs!,
    endNs: input.endNs!,
    attributes,
    events,
    links,
    statusCode: input.statusCode,
    statusMessage,
    serviceName,
    dropped,
  };
  return { span, dropped: { ...dropped }, truncated, listValuesDropped, bytes };
}
