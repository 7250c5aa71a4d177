import { SpanKind as OtelKind, SpanStatusCode } from '@opentelemetry/api';
import { traced } from '../../../../shared/monitoring/instrumentation/traced';
import {
  injectTraceContext,
  traceConsume,
  tracePublish,
} from '../../../../shared/monitoring/instrumentation/messaging';
import { Tracer, getGlobalTracer, setGlobalTracer } from '../../../../shared/monitoring/tracing';

function tracer(): Tracer {
  return new Tracer({ service_name: 't' });
}

describe('traced', () => {
  it('runs a sync function in a span named after it, with the argument count as an event', () => {
    const t = tracer();
    function add(a: number, b: number): number {
      return a + b;
    }
    expect(traced(undefined, { tracer: t })(add)(2, 3)).toBe(5);
    const [span] = t.getAllSpans();
    expect(span!.name).toBe('add');
    expect(span!.events[0]).toMatchObject({ name: 'call', attributes: { 'args.count': 2 } });
    // Argument values are never recorded.
    expect(JSON.stringify(span!.attributes)).not.toContain('3');
  });

  it('an async function: the span ends when it settles and records the rejection', async () => {
    const t = tracer();
    const fail = traced('payment.charge', { tracer: t, service: 'billing' })(async () => {
      await new Promise((r) => setImmediate(r));
      throw new RangeError('card declined');
    });
    await expect(fail()).rejects.toThrow('card declined');
    const [span] = t.getAllSpans();
    expect(span!.name).toBe('payment.charge');
    expect(span!.attributes['service']).toBe('billing');
    expect(span!.status).toEqual({ code: SpanStatusCode.ERROR, message: 'card declined' });
    expect(span!.events.map((e) => e.name)).toEqual(['call', 'exception']);
  });

  it('as a method decorator: named Class.method, `this` kept', () => {
    const t = tracer();
    class Greeter {
      constructor(private readonly greeting: string) {}
      @traced(undefined, { tracer: t })
      greet(name: string): string {
        return `${this.greeting} ${name}`;
      }
    }
    expect(new Greeter('hello').greet('ada')).toBe('hello ada');
    expect(t.getAllSpans()[0]!.name).toBe('Greeter.greet');
  });

  it('without a tracer uses the process tracer at call time (no-op by default)', () => {
    const t = tracer();
    const fn = traced('late')(() => 1);
    fn();
    expect(t.getAllSpans()).toHaveLength(0);
    setGlobalTracer(t);
    try {
      fn();
    } finally {
      setGlobalTracer(null);
    }
    expect(t.getAllSpans().map((s) => s.name)).toEqual(['late']);
    expect(getGlobalTracer()).not.toBe(t);
  });
});

describe('message tracing', () => {
  it('the consumer span is a child of the producer span through the carrier', () => {
    const t = tracer();
    let headers: Record<string, string> = {};
    tracePublish('emails', (carrier) => (headers = carrier), { tracer: t, recipient: 'a@example.com' });
    const handled = traceConsume('emails', () => 'done', {
      tracer: t,
      carrier: headers,
      messageType: 'email',
    });
    expect(handled).toBe('done');
    const [producer, consumer] = t.getAllSpans();
    expect(producer!.name).toBe('publish emails');
    expect(producer!.kind).toBe(OtelKind.PRODUCER);
    expect(producer!.attributes['message.type']).toBe('email');
    expect(JSON.stringify(producer!.attributes)).not.toContain('a@example.com');
    expect(consumer!.kind).toBe(OtelKind.CONSUMER);
    expect(consumer!.spanContext().traceId).toBe(producer!.spanContext().traceId);
    expect(consumer!.parentSpanContext?.spanId).toBe(producer!.spanContext().spanId);
  });

  it('a consumer without a carrier starts a new trace with message type unknown', () => {
    const t = tracer();
    traceConsume('jobs', () => undefined, { tracer: t });
    const [span] = t.getAllSpans();
    expect(span!.parentSpanContext).toBeUndefined();
    expect(span!.attributes['message.type']).toBe('unknown');
  });

  it('injectTraceContext writes the current span into the carrier, nothing outside a span', () => {
    const t = tracer();
    expect(injectTraceContext({}, t)).toEqual({});
    const span = t.startSpan('s');
    const carrier = t.withSpan(span, () => injectTraceContext({}, t));
    expect(carrier['traceparent']).toBe(span.spanContext().toTraceparent());
  });
});
