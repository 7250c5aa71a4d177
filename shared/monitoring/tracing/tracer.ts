/**
 * `Tracer`: starts spans on an OpenTelemetry SDK tracer provider of its own (sampler, span limits),
 * keeps the latest `max_spans` finished spans for `getAllSpans` (oldest dropped), hands finished
 * spans to an optional exporter in batches, tracks the current span through the process's
 * AsyncLocalStorage context manager, and injects and extracts context through the configured
 * propagators. Also the in-memory trace provider and the no-op tracer of the spec.
 */
import {
  type Attributes,
  type Context,
  type Link,
  ROOT_CONTEXT,
  createContextKey,
  defaultTextMapGetter,
  defaultTextMapSetter,
  trace,
  type TextMapPropagator,
  type Tracer as OtelTracer,
} from '@opentelemetry/api';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  BasicTracerProvider,
  BatchSpanProcessor,
  type ReadableSpan,
  type SpanExporter,
  type SpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import type { Clock } from '../../runtime/clock';
import type { TracingConfig } from '../config';
import { spanContextManager } from './context';
import { createPropagator } from './propagation';
import { createSampler } from './samplers';
import { type Carrier, SpanContext } from './span-context';
import { NoopSpan, Span, SpanKind, type SpanLike, toOtelKind } from './span';

/** Finished spans kept by default for `getAllSpans`. */
export const DEFAULT_MAX_SPANS = 10_000;

/** A parent: a span, a span context (for example extracted from a carrier), or null for a root. */
export type ParentContext = SpanLike | SpanContext | null;

/** Options of `startSpan`. */
export interface StartSpanOptions {
  attributes?: Attributes;
  /** The parent; by default the current span. `null` starts a new trace. */
  context?: ParentContext;
  /** Default INTERNAL. */
  kind?: SpanKind;
  links?: readonly SpanContext[];
}

/** What application code needs of a tracer (`TracerProtocol`); both tracers implement it. */
export interface TracerProtocol {
  startSpan(name: string, options?: StartSpanOptions): SpanLike;
  /**
   * Runs `fn` inside a new current span, ends it afterwards (also when `fn` throws or rejects) and
   * records a thrown error on it.
   */
  startActiveSpan<T>(name: string, options: StartSpanOptions, fn: (span: SpanLike) => T): T;
  /** Runs `fn` with `span` as the current span. */
  withSpan<T>(span: SpanLike, fn: () => T): T;
  getCurrentSpan(): SpanLike | null;
  /** Writes the context of `context` (default: the current span) and the current baggage into `carrier`. */
  injectContext(carrier: Carrier, context?: ParentContext): Carrier;
  /** The remote parent carried by `carrier`, or null when it carries none or an invalid one. */
  extractContext(carrier: Readonly<Record<string, string | string[] | undefined>>): SpanContext | null;
  /** Exports every finished span not yet exported. */
  flush(): Promise<void>;
  /** Finished spans still kept (at most `max_spans`), oldest first. */
  getAllSpans(): readonly ReadableSpan[];
  /** Flushes and stops exporting. */
  shutdown(): Promise<void>;
}

/** Keeps the latest `capacity` finished spans in a ring. */
export class BoundedSpanStore implements SpanProcessor {
  private readonly ring: ReadableSpan[] = [];
  private next = 0;

  constructor(readonly capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 1)
      throw new RangeError('max_spans must be a positive integer');
  }

  onStart(): void {}

  onEnd(span: ReadableSpan): void {
    if (this.ring.length < this.capacity) this.ring.push(span);
    else {
      this.ring[this.next] = span;
      this.next = (this.next + 1) % this.capacity;
    }
  }

  /** Oldest first. */
  spans(): ReadableSpan[] {
    return this.ring.length < this.capacity
      ? [...this.ring]
      : [...this.ring.slice(this.next), ...this.ring.slice(0, this.next)];
  }

  clear(): void {
    this.ring.length = 0;
    this.next = 0;
  }

  forceFlush(): Promise<void> {
    return Promise.resolve();
  }

  shutdown(): Promise<void> {
    return Promise.resolve();
  }
}

/** Batching of the exporter, in the units of `OpenTelemetryConfig`. */
export interface ExportBatchOptions {
  batch_size?: number;
  /** Seconds between exports. */
  export_interval?: number;
  /** Seconds per export. */
  timeout?: number;
}

/** Options of {@link Tracer}. */
export interface TracerOptions {
  service_name: string;
  /** Receives finished sampled spans in batches; none: spans are only kept in memory. */
  exporter?: SpanExporter;
  /** Finished spans kept for `getAllSpans`; default {@link DEFAULT_MAX_SPANS}. */
  max_spans?: number;
  /** Sampler, span limits and propagation formats; the schema's defaults otherwise. */
  config?: Partial<Omit<TracingConfig, 'service_name'>>;
  batch?: ExportBatchOptions;
  /** For the rate-limiting sampler. */
  clock?: Clock;
}

const WRAPPER = createContextKey('svc.monitoring.span');

function parentOf(parent: ParentContext | undefined, active: Context): Context {
  if (parent === undefined) return active;
  if (parent === null) return ROOT_CONTEXT;
  if (parent instanceof Span) return trace.setSpan(active, parent.otel);
  const ctx = parent instanceof SpanContext ? parent : parent.spanContext();
  return trace.setSpanContext(active, ctx.toOtel());
}

/** The spec's Tracer on the OpenTelemetry SDK. */
export class Tracer implements TracerProtocol {
  readonly serviceName: string;
  private readonly provider: BasicTracerProvider;
  private readonly otelTracer: OtelTracer;
  private readonly store: BoundedSpanStore;
  private readonly propagator: TextMapPropagator;
  private readonly contexts = spanContextManager();

  constructor(options: TracerOptions) {
    const c = options.config ?? {};
    this.serviceName = options.service_name;
    this.store = new BoundedSpanStore(options.max_spans ?? DEFAULT_MAX_SPANS);
    const processors: SpanProcessor[] = [this.store];
    if (options.exporter) {
      const b = options.batch ?? {};
      processors.push(
        new BatchSpanProcessor(options.exporter, {
          maxExportBatchSize: b.batch_size ?? 512,
          maxQueueSize: Math.max(2048, b.batch_size ?? 512),
          scheduledDelayMillis: Math.round((b.export_interval ?? 5) * 1000),
          exportTimeoutMillis: Math.round((b.timeout ?? 30) * 1000),
        }),
      );
    }
    this.provider = new BasicTracerProvider({
      resource: resourceFromAttributes({ 'service.name': options.service_name }),
      sampler: createSampler(
        {
          sampler_type: c.sampler_type ?? 'always_on',
          sample_rate: c.sample_rate ?? 1,
          max_traces_per_second: c.max_traces_per_second ?? 100,
        },
        options.clock,
      ),
      spanLimits: {
        attributeCountLimit: c.max_attributes ?? 128,
        eventCountLimit: c.max_events ?? 128,
        linkCountLimit: c.max_links ?? 128,
      },
      spanProcessors: processors,
    });
    this.otelTracer = this.provider.getTracer(options.service_name);
    this.propagator = createPropagator(c.propagation_formats ?? ['tracecontext', 'baggage']);
  }

  startSpan(name: string, options: StartSpanOptions = {}): Span {
    const kind = options.kind ?? SpanKind.INTERNAL;
    const links: Link[] | undefined = options.links?.map((l) => ({ context: l.toOtel() }));
    const otel = this.otelTracer.startSpan(
      name,
      { kind: toOtelKind(kind), attributes: options.attributes, links },
      parentOf(options.context, this.contexts.active()),
    );
    return new Span(name, otel, kind);
  }

  startActiveSpan<T>(name: string, options: StartSpanOptions, fn: (span: SpanLike) => T): T {
    const span = this.startSpan(name, options);
    let result: T;
    try {
      result = this.withSpan(span, () => fn(span));
    } catch (err) {
      span.recordException(err);
      span.end();
      throw err;
    }
    if (result instanceof Promise) {
      return result.then(
        (value: unknown) => {
          span.end();
          return value;
        },
        (err: unknown) => {
          span.recordException(err);
          span.end();
          throw err;
        },
      ) as T;
    }
    span.end();
    return result;
  }

  withSpan<T>(span: SpanLike, fn: () => T): T {
    return this.contexts.with(this.contextOf(span), fn);
  }

  /** The current span: ours when we started it, else the OpenTelemetry span (for example a gRPC server span) wrapped. */
  getCurrentSpan(): SpanLike | null {
    const active = this.contexts.active();
    const otel = trace.getSpan(active);
    if (!otel) return null;
    const ours = active.getValue(WRAPPER) as Span | undefined;
    if (ours && ours.otel === otel) return ours;
    const name = (otel as Partial<ReadableSpan>).name ?? '';
    return new Span(name, otel);
  }

  /** Makes `span` current for the rest of the calling flow (the in-memory provider's `setCurrentSpan`). */
  protected enterSpan(span: SpanLike): void {
    this.contexts.enterWith(this.contextOf(span));
  }

  injectContext(carrier: Carrier, context?: ParentContext): Carrier {
    this.propagator.inject(parentOf(context, this.contexts.active()), carrier, defaultTextMapSetter);
    return carrier;
  }

  extractContext(carrier: Readonly<Record<string, string | string[] | undefined>>): SpanContext | null {
    let input = carrier;
    const traceparent = carrier['traceparent'];
    // One definition of a valid traceparent (ours, stricter than the SDK's about version ff): a
    // header it rejects does not make a parent, though another format in the carrier still may.
    if (
      traceparent !== undefined &&
      (typeof traceparent !== 'string' || !SpanContext.fromTraceparent(traceparent))
    ) {
      const { traceparent: _dropped, tracestate: _state, ...rest } = carrier;
      input = rest;
    }
    const ctx = this.propagator.extract(ROOT_CONTEXT, input, defaultTextMapGetter);
    const sc = trace.getSpanContext(ctx);
    return sc && trace.isSpanContextValid(sc) ? SpanContext.fromOtel(sc) : null;
  }

  flush(): Promise<void> {
    return this.provider.forceFlush();
  }

  getAllSpans(): readonly ReadableSpan[] {
    return this.store.spans();
  }

  /** Forgets the kept finished spans. */
  clear(): void {
    this.store.clear();
  }

  shutdown(): Promise<void> {
    return this.provider.shutdown();
  }

  private contextOf(span: SpanLike): Context {
    const active = this.contexts.active();
    if (span instanceof Span) return trace.setSpan(active, span.otel).setValue(WRAPPER, span);
    return trace.setSpanContext(active, span.spanContext().toOtel());
  }
}

/** Options of {@link InMemoryTraceProvider}. */
export interface InMemoryTraceProviderOptions extends Omit<TracerOptions, 'max_spans'> {
  max_spans: number;
}

/** The in-memory trace provider: a Tracer whose finished spans are read back with `getAllSpans`. */
export class InMemoryTraceProvider extends Tracer {
  constructor(options: InMemoryTraceProviderOptions) {
    super(options);
  }

  /** Starts a span under `parent` (default: the current span). */
  createSpan(name: string, parent?: ParentContext): Span {
    return this.startSpan(name, parent === undefined ? {} : { context: parent });
  }

  /** Makes `span` the current span for the rest of the calling asynchronous flow. */
  setCurrentSpan(span: SpanLike): void {
    this.enterSpan(span);
  }
}

/** The no-op tracer: no-op spans (which keep their attributes), nothing recorded or propagated. */
export class NoopTracer implements TracerProtocol {
  startSpan(name: string, options: StartSpanOptions = {}): NoopSpan {
    return new NoopSpan(name, options.attributes);
  }
  startActiveSpan<T>(name: string, options: StartSpanOptions, fn: (span: SpanLike) => T): T {
    return fn(this.startSpan(name, options));
  }
  withSpan<T>(_span: SpanLike, fn: () => T): T {
    return fn();
  }
  getCurrentSpan(): SpanLike | null {
    return null;
  }
  injectContext(carrier: Carrier): Carrier {
    return carrier;
  }
  extractContext(): SpanContext | null {
    return null;
  }
  flush(): Promise<void> {
    return Promise.resolve();
  }
  getAllSpans(): readonly ReadableSpan[] {
    return [];
  }
  shutdown(): Promise<void> {
    return Promise.resolve();
  }
}
