/**
 * `SpanContext`: the identity of a span as it crosses a process boundary, and its W3C
 * `traceparent` form (https://www.w3.org/TR/trace-context/#traceparent-header).
 */
import { type SpanContext as OtelSpanContext, TraceFlags } from '@opentelemetry/api';

/** A carrier of trace context: header name to value, as in HTTP headers or gRPC metadata. */
export type Carrier = Record<string, string>;

// version "00", 32 lower-case hex trace id, 16 lower-case hex span id, 2 hex flags. Upper case is
// invalid by the W3C spec ("lowercase hex"), so it is rejected rather than normalised.
const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;
const ZERO_TRACE = '0'.repeat(32);
const ZERO_SPAN = '0'.repeat(16);

/** The trace id, span id and flags of one span. */
export class SpanContext {
  constructor(
    readonly traceId: string,
    readonly spanId: string,
    /** W3C trace flags; bit 0 is "sampled". */
    readonly traceFlags: number = TraceFlags.SAMPLED,
    /** True when the context came from another process. */
    readonly isRemote = false,
  ) {}

  /** Whether the span is recorded and exported. */
  get sampled(): boolean {
    return (this.traceFlags & TraceFlags.SAMPLED) === TraceFlags.SAMPLED;
  }

  /** The `traceparent` header value: `00-<trace id>-<span id>-<flags>`. */
  toTraceparent(): string {
    return `00-${this.traceId}-${this.spanId}-${(this.traceFlags & 0xff).toString(16).padStart(2, '0')}`;
  }

  /**
   * Parses a `traceparent` header; null when it is invalid: wrong length or characters, upper-case
   * hex, version `ff`, all-zero ids, or extra fields on version 00.
   */
  static fromTraceparent(traceparent: string | null | undefined): SpanContext | null {
    if (typeof traceparent !== 'string' || traceparent.length > 512) return null;
    const m = TRACEPARENT.exec(traceparent.trim());
    if (!m) return null;
    const [, version, traceId, spanId, flags, rest] = m as unknown as [
      string,
      string,
      string,
      string,
      string,
      string?,
    ];
    if (version === 'ff') return null;
    // Version 00 has exactly four fields; later versions may append more (forward compatibility).
    if (version === '00' && rest !== undefined) return null;
    if (traceId === ZERO_TRACE || spanId === ZERO_SPAN) return null;
    return new SpanContext(traceId, spanId, parseInt(flags, 16), true);
  }

  /** From an OpenTelemetry span context. */
  static fromOtel(ctx: OtelSpanContext): SpanContext {
    return new SpanContext(ctx.traceId, ctx.spanId, ctx.traceFlags, ctx.isRemote === true);
  }

  /** To an OpenTelemetry span context. */
  toOtel(): OtelSpanContext {
    return {
      traceId: this.traceId,
      spanId: this.spanId,
      traceFlags: this.traceFlags,
      isRemote: this.isRemote,
    };
  }
}
