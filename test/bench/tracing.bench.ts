/**
 * Tracing benchmark: a span started and ended through our Tracer against the same through a raw
 * `@opentelemetry/sdk-trace-base` tracer, measured in the same run, interleaved (ABBA order per
 * round) and summarised by the median of several rounds. Both record every span (always_on) and keep
 * finished spans in a ring of the same size, so the ratio is the cost of our layer (the Span wrapper,
 * its duration clock, the context lookup). ratio = ours ops/s / raw ops/s (target >= 0.7).
 */
import { ROOT_CONTEXT } from '@opentelemetry/api';
import {
  AlwaysOnSampler,
  BasicTracerProvider,
  type ReadableSpan,
  type SpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { Tracer } from '../../shared/monitoring/tracing';
import { median, type BenchRow } from './measure';

const ROUNDS = 7;
const SPANS_PER_ROUND = 50_000;
const KEEP = 10_000;

/** The raw side's store: the same ring as ours, written inline so the raw side uses none of our code. */
class RingProcessor implements SpanProcessor {
  private readonly ring: ReadableSpan[] = [];
  private next = 0;
  onStart(): void {}
  onEnd(span: ReadableSpan): void {
    if (this.ring.length < KEEP) this.ring.push(span);
    else {
      this.ring[this.next] = span;
      this.next = (this.next + 1) % KEEP;
    }
  }
  forceFlush(): Promise<void> {
    return Promise.resolve();
  }
  shutdown(): Promise<void> {
    return Promise.resolve();
  }
}

function opsPerSecond(fn: () => void): number {
  const t0 = performance.now();
  for (let i = 0; i < SPANS_PER_ROUND; i++) fn();
  return (SPANS_PER_ROUND / (performance.now() - t0)) * 1000;
}

/** Span start and end: our Tracer against raw sdk-trace-base. */
export async function runTracingBench(): Promise<BenchRow[]> {
  const ours = new Tracer({
    service_name: 'bench',
    max_spans: KEEP,
    config: { sampler_type: 'always_on' },
  });
  const rawProvider = new BasicTracerProvider({
    sampler: new AlwaysOnSampler(),
    spanProcessors: [new RingProcessor()],
  });
  const raw = rawProvider.getTracer('bench');
  const attributes = { 'rpc.method': 'Send', 'rpc.service': 'InboxService' };
  const oursOnce = () => ours.startSpan('op', { attributes }).end();
  const rawOnce = () => raw.startSpan('op', { attributes }, ROOT_CONTEXT).end();

  opsPerSecond(oursOnce); // warm-up of both
  opsPerSecond(rawOnce);
  const a: number[] = [];
  const b: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    if (round % 2 === 0) {
      a.push(opsPerSecond(oursOnce));
      b.push(opsPerSecond(rawOnce));
    } else {
      b.push(opsPerSecond(rawOnce));
      a.push(opsPerSecond(oursOnce));
    }
    // Let the event loop and GC breathe between rounds.
    await new Promise((r) => setImmediate(r));
  }
  await ours.shutdown();
  await rawProvider.shutdown();
  const value = median(a);
  const baseline = median(b);
  return [
    {
      name: 'tracing: span start+end, our Tracer vs raw @opentelemetry/sdk-trace-base',
      value,
      baseline,
      ratio: value / baseline,
      target: '>= 0.7',
      unit: 'spans/s',
    },
  ];
}
