import { SpanKind as OtelSpanKind, SpanStatusCode, context, propagation } from '@opentelemetry/api';
import { InMemorySpanExporter } from '@opentelemetry/sdk-trace-base';
import {
  InMemoryTraceProvider,
  type NoopSpan,
  NoopTracer,
  SpanContext,
  SpanKind,
  Tracer,
} from '../../../../shared/monitoring/tracing';

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const SPAN = '00f067aa0ba902b7';

function tracer(opts: Partial<ConstructorParameters<typeof Tracer>[0]> = {}): Tracer {
  return new Tracer({ service_name: 'test', ...opts });
}

describe('Span', () => {
  it('records attributes, events, status and ends once with a duration', () => {
    const t = tracer();
    const span = t.startSpan('work', { attributes: { a: 1 } });
    expect(span.getDuration()).toBeNull();
    span.setAttribute('b', 'two').addEvent('step', { n: 3 }).setStatus('OK');
    span.end();
    const duration = span.getDuration();
    expect(duration).not.toBeNull();
    expect(duration!).toBeGreaterThanOrEqual(0);
    span.finish(); // a second end changes nothing
    expect(span.getDuration()).toBe(duration);
    const [done] = t.getAllSpans();
    expect(t.getAllSpans()).toHaveLength(1);
    expect(done!.name).toBe('work');
    expect(done!.attributes).toEqual({ a: 1, b: 'two' });
    expect(done!.events.map((e) => e.name)).toEqual(['step']);
    expect(done!.status.code).toBe(SpanStatusCode.OK);
  });

  it('finish is an alias of end', () => {
    const t = tracer();
    t.startSpan('x').finish();
    expect(t.getAllSpans()).toHaveLength(1);
  });

  it('recordException adds an exception event and sets ERROR with the message', () => {
    const t = tracer();
    const span = t.startSpan('fails');
    span.recordException(new TypeError('bad input'));
    span.end();
    const [done] = t.getAllSpans();
    expect(done!.status).toEqual({ code: SpanStatusCode.ERROR, message: 'bad input' });
    expect(done!.events[0]!.name).toBe('exception');
    expect(done!.events[0]!.attributes!['exception.type']).toBe('TypeError');
  });

  it('setStatus ERROR keeps a description', () => {
    const t = tracer();
    t.startSpan('s').setStatus({ code: 'ERROR', description: 'timeout' }).end();
    expect(t.getAllSpans()[0]!.status).toEqual({ code: SpanStatusCode.ERROR, message: 'timeout' });
  });
});

describe('Tracer', () => {
  it('starts INTERNAL spans by default and honours a given kind', () => {
    const t = tracer();
    t.startSpan('a').end();
    t.startSpan('b', { kind: SpanKind.SERVER }).end();
    expect(t.getAllSpans().map((s) => s.kind)).toEqual([OtelSpanKind.INTERNAL, OtelSpanKind.SERVER]);
  });

  it('parents a span on an extracted remote context, keeping its trace id', () => {
    const t = tracer();
    const parent = SpanContext.fromTraceparent(`00-${TRACE}-${SPAN}-01`)!;
    const child = t.startSpan('child', { context: parent });
    child.end();
    expect(child.spanContext().traceId).toBe(TRACE);
    expect(t.getAllSpans()[0]!.parentSpanContext?.spanId).toBe(SPAN);
  });

  it('a span started inside startActiveSpan is a child of it; getCurrentSpan sees it across await', async () => {
    const t = tracer();
    expect(t.getCurrentSpan()).toBeNull();
    await t.startActiveSpan('outer', {}, async (outer) => {
      await new Promise((r) => setImmediate(r));
      expect(t.getCurrentSpan()).toBe(outer);
      const inner = t.startSpan('inner');
      inner.end();
      expect(inner.spanContext().traceId).toBe(outer.spanContext().traceId);
    });
    expect(t.getCurrentSpan()).toBeNull();
    const [inner, outer] = t.getAllSpans();
    expect(inner!.parentSpanContext?.spanId).toBe(outer!.spanContext().spanId);
  });

  it('startActiveSpan records a rejection and still ends the span', async () => {
    const t = tracer();
    await expect(
      t.startActiveSpan('op', {}, async () => {
        throw new Error('boom');
      }),
    ).rejects.toThrow('boom');
    const [done] = t.getAllSpans();
    expect(done!.status.code).toBe(SpanStatusCode.ERROR);
    expect(done!.ended).toBe(true);
  });

  it('context null starts a new trace even inside an active span', () => {
    const t = tracer();
    t.startActiveSpan('outer', {}, (outer) => {
      const root = t.startSpan('root', { context: null });
      expect(root.spanContext().traceId).not.toBe(outer.spanContext().traceId);
      root.end();
    });
  });

  it('injectContext writes the current span as traceparent; extractContext reads it back', () => {
    const t = tracer();
    const span = t.startSpan('s');
    const carrier = t.withSpan(span, () => t.injectContext({}));
    expect(carrier['traceparent']).toBe(span.spanContext().toTraceparent());
    const extracted = t.extractContext(carrier);
    expect(extracted?.traceId).toBe(span.spanContext().traceId);
    expect(extracted?.spanId).toBe(span.spanContext().spanId);
  });

  it('injectContext of an explicit context writes that context', () => {
    const carrier = tracer().injectContext({}, new SpanContext(TRACE, SPAN, 1));
    expect(carrier['traceparent']).toBe(`00-${TRACE}-${SPAN}-01`);
  });

  it('injectContext writes the active baggage in the baggage format', () => {
    const t = tracer();
    const bag = propagation.createBaggage({ tenant: { value: 'acme' } });
    const carrier = context.with(propagation.setBaggage(context.active(), bag), () => t.injectContext({}));
    expect(carrier['baggage']).toBe('tenant=acme');
  });

  it('without the baggage format, no baggage header is written', () => {
    const t = tracer({ config: { propagation_formats: ['tracecontext'] } });
    const bag = propagation.createBaggage({ tenant: { value: 'acme' } });
    const carrier = context.with(propagation.setBaggage(context.active(), bag), () => t.injectContext({}));
    expect(carrier['baggage']).toBeUndefined();
  });

  it.each([
    ['an invalid traceparent', { traceparent: `ff-${TRACE}-${SPAN}-01` }],
    ['upper-case hex', { traceparent: `00-${TRACE.toUpperCase()}-${SPAN}-01` }],
    ['no header', {}],
  ])('extractContext gives null for %s', (_what, carrier) => {
    expect(tracer().extractContext(carrier)).toBeNull();
  });

  it('the b3 format is read when configured', () => {
    const t = tracer({ config: { propagation_formats: ['b3'] } });
    expect(t.extractContext({ b3: `${TRACE}-${SPAN}-1` })?.traceId).toBe(TRACE);
    expect(t.injectContext({}, new SpanContext(TRACE, SPAN, 1))['b3']).toBe(`${TRACE}-${SPAN}-1`);
  });

  it('keeps at most max_spans finished spans, dropping the oldest', () => {
    const t = tracer({ max_spans: 3 });
    for (let i = 0; i < 5; i++) t.startSpan(`s${i}`).end();
    expect(t.getAllSpans().map((s) => s.name)).toEqual(['s2', 's3', 's4']);
  });

  it('rejects a max_spans that is not a positive integer', () => {
    expect(() => tracer({ max_spans: 0 })).toThrow(RangeError);
  });

  it('flush exports finished spans to the exporter', async () => {
    const exporter = new InMemorySpanExporter();
    const t = tracer({ exporter, batch: { export_interval: 3600 } });
    t.startSpan('a').end();
    t.startSpan('b').end();
    expect(exporter.getFinishedSpans()).toHaveLength(0);
    await t.flush();
    expect(exporter.getFinishedSpans().map((s) => s.name)).toEqual(['a', 'b']);
    await t.shutdown();
  });

  it('enforces max_attributes, max_events and max_links per span', () => {
    const t = tracer({ config: { max_attributes: 2, max_events: 1, max_links: 1 } });
    const links = [new SpanContext(TRACE, SPAN), new SpanContext(TRACE, 'a'.repeat(16))];
    const span = t.startSpan('limited', { attributes: { a: 1, b: 2, c: 3 }, links });
    span.addEvent('e1').addEvent('e2');
    span.end();
    const [done] = t.getAllSpans();
    expect(Object.keys(done!.attributes)).toHaveLength(2);
    expect(done!.droppedAttributesCount).toBe(1);
    expect(done!.events.map((e) => e.name)).toEqual(['e2']); // the SDK keeps the newest event
    expect(done!.droppedEventsCount).toBe(1);
    expect(done!.links).toHaveLength(1);
  });
});

describe('InMemoryTraceProvider', () => {
  it('createSpan under a parent and setCurrentSpan for the rest of the flow', async () => {
    const provider = new InMemoryTraceProvider({ service_name: 'mem', max_spans: 10 });
    await (async () => {
      const parent = provider.createSpan('parent');
      provider.setCurrentSpan(parent);
      await Promise.resolve();
      expect(provider.getCurrentSpan()).toBe(parent);
      const child = provider.createSpan('child');
      expect(child.spanContext().traceId).toBe(parent.spanContext().traceId);
      child.end();
      parent.end();
    })();
    expect(provider.getAllSpans().map((s) => s.name)).toEqual(['child', 'parent']);
  });
});

describe('NoopTracer', () => {
  it('returns no-op spans that keep attributes and record nothing', async () => {
    const t = new NoopTracer();
    const span = t.startSpan('x', { attributes: { a: 1 } }) as NoopSpan;
    span.setAttribute('b', 'two').addEvent('e').recordException(new Error('x'));
    span.end();
    expect(span.attributes).toEqual({ a: 1, b: 'two' });
    expect(span.getDuration()).toBeNull();
    expect(span.isRecording()).toBe(false);
    expect(t.getAllSpans()).toEqual([]);
    expect(t.injectContext({})).toEqual({});
    expect(t.extractContext()).toBeNull();
    await expect(t.flush()).resolves.toBeUndefined();
  });
});
