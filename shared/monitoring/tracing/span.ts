/**
 * `Span`: one timed operation of a trace, over an OpenTelemetry span, with the spec's operations
 * (setAttribute, addEvent, setStatus, recordException, end and its alias finish, getDuration), and
 * the no-op span that keeps its attributes for inspection.
 */
import {
  type Attributes,
  type AttributeValue,
  type Span as OtelSpan,
  SpanKind as OtelSpanKind,
  SpanStatusCode,
} from '@opentelemetry/api';
import { SpanContext } from './span-context';

/** Span kinds of the OpenTelemetry specification; INTERNAL is the default. */
export const SpanKind = {
  INTERNAL: 'INTERNAL',
  SERVER: 'SERVER',
  CLIENT: 'CLIENT',
  PRODUCER: 'PRODUCER',
  CONSUMER: 'CONSUMER',
} as const;
/** One of {@link SpanKind}. */
export type SpanKind = (typeof SpanKind)[keyof typeof SpanKind];

/** Span status codes of the OpenTelemetry specification. */
export const SpanStatus = { UNSET: 'UNSET', OK: 'OK', ERROR: 'ERROR' } as const;
/** A status code, or a code with a description (only ERROR keeps a description, as in OTel). */
export type SpanStatus =
  | (typeof SpanStatus)[keyof typeof SpanStatus]
  | { code: (typeof SpanStatus)[keyof typeof SpanStatus]; description?: string };

/** Our kind to OpenTelemetry's. */
export function toOtelKind(kind: SpanKind): OtelSpanKind {
  return OtelSpanKind[kind];
}

const STATUS_CODES = { UNSET: SpanStatusCode.UNSET, OK: SpanStatusCode.OK, ERROR: SpanStatusCode.ERROR };

/** The spec's span operations. */
export interface SpanLike {
  readonly name: string;
  setAttribute(key: string, value: AttributeValue): this;
  addEvent(name: string, attributes?: Attributes): this;
  setStatus(status: SpanStatus): this;
  recordException(exception: unknown): this;
  end(): void;
  /** Alias of {@link end}. */
  finish(): void;
  /** Seconds from start to end; null while the span runs. */
  getDuration(): number | null;
  /** The span's identity, for propagation. */
  spanContext(): SpanContext;
  /** Whether the span is recorded (sampled in). */
  isRecording(): boolean;
}

function toError(exception: unknown): Error {
  return exception instanceof Error ? exception : new Error(String(exception));
}

/** A span of our Tracer: the spec's operations over an OpenTelemetry span. */
export class Span implements SpanLike {
  private readonly startedAt = performance.now();
  private endedAt: number | undefined;

  constructor(
    readonly name: string,
    /** The underlying OpenTelemetry span (given to OTel APIs such as `trace.setSpan`). */
    readonly otel: OtelSpan,
    readonly kind: SpanKind = SpanKind.INTERNAL,
  ) {}

  setAttribute(key: string, value: AttributeValue): this {
    this.otel.setAttribute(key, value);
    return this;
  }

  addEvent(name: string, attributes?: Attributes): this {
    this.otel.addEvent(name, attributes);
    return this;
  }

  setStatus(status: SpanStatus): this {
    const s = typeof status === 'string' ? { code: status } : status;
    this.otel.setStatus({
      code: STATUS_CODES[s.code],
      ...(s.code === 'ERROR' && s.description ? { message: s.description } : {}),
    });
    return this;
  }

  /** Adds an `exception` event (type, message, stack) and sets the status to ERROR. */
  recordException(exception: unknown): this {
    const err = toError(exception);
    this.otel.recordException(err);
    this.otel.setStatus({ code: SpanStatusCode.ERROR, message: err.message });
    return this;
  }

  /** Ends the span; later calls do nothing (the first end time stays). */
  end(): void {
    if (this.endedAt !== undefined) return;
    this.endedAt = performance.now();
    this.otel.end();
  }

  finish(): void {
    this.end();
  }

  getDuration(): number | null {
    return this.endedAt === undefined ? null : (this.endedAt - this.startedAt) / 1000;
  }

  spanContext(): SpanContext {
    return SpanContext.fromOtel(this.otel.spanContext());
  }

  isRecording(): boolean {
    return this.otel.isRecording();
  }
}

/**
 * The no-op span: records nothing and exports nothing, but keeps its attributes (and status) so a
 * test can check what code under test set.
 */
export class NoopSpan implements SpanLike {
  /** Attributes set on the span, for inspection. */
  readonly attributes: Record<string, AttributeValue> = {};
  private ended = false;
  private static readonly invalid = new SpanContext('0'.repeat(32), '0'.repeat(16), 0);

  constructor(
    readonly name = '',
    attributes?: Attributes,
    private readonly context: SpanContext = NoopSpan.invalid,
  ) {
    if (attributes)
      for (const [k, v] of Object.entries(attributes)) if (v !== undefined) this.attributes[k] = v;
  }

  setAttribute(key: string, value: AttributeValue): this {
    this.attributes[key] = value;
    return this;
  }
  addEvent(_name: string, _attributes?: Attributes): this {
    return this;
  }
  setStatus(_status: SpanStatus): this {
    return this;
  }
  recordException(_exception: unknown): this {
    return this;
  }
  end(): void {
    this.ended = true;
  }
  finish(): void {
    this.end();
  }
  /** Always null: a no-op span measures nothing. */
  getDuration(): number | null {
    return null;
  }
  spanContext(): SpanContext {
    return this.context;
  }
  isRecording(): boolean {
    return false;
  }
  /** Whether end() was called. */
  get isEnded(): boolean {
    return this.ended;
  }
}
