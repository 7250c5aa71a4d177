import { SamplingDecision } from '@opentelemetry/sdk-trace-base';
import { ROOT_CONTEXT, SpanKind as OtelKind } from '@opentelemetry/api';
import {
  RateLimitingSampler,
  SpanContext,
  Tracer,
  createSampler,
} from '../../../../shared/monitoring/tracing';
import type { TracingConfig } from '../../../../shared/monitoring/config';

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';

function sampledCount(config: Partial<TracingConfig>, n: number): number {
  const t = new Tracer({ service_name: 's', config, max_spans: n });
  for (let i = 0; i < n; i++) t.startSpan('x', { context: null }).end();
  return t.getAllSpans().length;
}

describe('samplers', () => {
  it('always_on records every trace and always_off none', () => {
    expect(sampledCount({ sampler_type: 'always_on' }, 50)).toBe(50);
    expect(sampledCount({ sampler_type: 'always_off' }, 50)).toBe(0);
  });

  it('probability keeps about sample_rate of traces, and 0 and 1 exactly', () => {
    expect(sampledCount({ sampler_type: 'probability', sample_rate: 0 }, 200)).toBe(0);
    expect(sampledCount({ sampler_type: 'probability', sample_rate: 1 }, 200)).toBe(200);
    const half = sampledCount({ sampler_type: 'probability', sample_rate: 0.5 }, 2000);
    expect(half).toBeGreaterThan(800);
    expect(half).toBeLessThan(1200);
  });

  it('rate_limiting samples max_traces_per_second, refilled as time passes', () => {
    let ms = 0;
    const sampler = new RateLimitingSampler(3, { monotonic: () => ms, now: () => ms });
    const decide = () => sampler.shouldSample(ROOT_CONTEXT, TRACE, 'x', OtelKind.INTERNAL, {}, []).decision;
    const first = Array.from({ length: 5 }, decide);
    expect(first.filter((d) => d === SamplingDecision.RECORD_AND_SAMPLED)).toHaveLength(3);
    ms += 1000 / 3; // one token back
    expect(decide()).toBe(SamplingDecision.RECORD_AND_SAMPLED);
    expect(decide()).toBe(SamplingDecision.NOT_RECORD);
  });

  it('rate_limiting below one a second still samples one trace', () => {
    const sampler = new RateLimitingSampler(0.5, { monotonic: () => 0, now: () => 0 });
    expect(sampler.shouldSample(ROOT_CONTEXT, TRACE, 'x', OtelKind.INTERNAL, {}, []).decision).toBe(
      SamplingDecision.RECORD_AND_SAMPLED,
    );
  });

  it('parent_based follows the parent: a sampled parent is sampled even at sample_rate 0', () => {
    const t = new Tracer({ service_name: 's', config: { sampler_type: 'parent_based', sample_rate: 0 } });
    t.startSpan('child', { context: SpanContext.fromTraceparent(`00-${TRACE}-00f067aa0ba902b7-01`) }).end();
    t.startSpan('unsampled', {
      context: SpanContext.fromTraceparent(`00-${TRACE}-00f067aa0ba902b7-00`),
    }).end();
    t.startSpan('root', { context: null }).end();
    expect(t.getAllSpans().map((s) => s.name)).toEqual(['child']);
  });

  it('an unknown sampler type is refused', () => {
    expect(() =>
      createSampler({ sampler_type: 'sometimes', sample_rate: 1, max_traces_per_second: 1 }),
    ).toThrow('unknown sampler_type "sometimes"');
  });
});
