/**
 * The samplers of `tracing.sampler_type`. `always_on`, `always_off`, `probability` (`sample_rate`)
 * and `parent_based` are OpenTelemetry's; `rate_limiting` (`max_traces_per_second`) is ours, a token
 * bucket. `parent_based` follows a remote or local parent's decision and samples root spans by
 * `sample_rate`.
 */
import type { Attributes, Context, Link, SpanKind } from '@opentelemetry/api';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  ParentBasedSampler,
  type Sampler,
  SamplingDecision,
  type SamplingResult,
  TraceIdRatioBasedSampler,
} from '@opentelemetry/sdk-trace-base';
import { type Clock, systemClock } from '../../runtime/clock';

/** Samples at most `maxPerSecond` new traces a second (a token bucket refilled continuously). */
export class RateLimitingSampler implements Sampler {
  private tokens: number;
  /** Burst size: one second's worth, and at least one trace so a rate below 1/s still samples. */
  private readonly capacity: number;
  private last: number;

  constructor(
    private readonly maxPerSecond: number,
    private readonly clock: Clock = systemClock,
  ) {
    if (!(maxPerSecond > 0)) throw new RangeError('max_traces_per_second must be positive');
    this.capacity = Math.max(1, maxPerSecond);
    this.tokens = this.capacity;
    this.last = clock.monotonic();
  }

  shouldSample(
    _context: Context,
    _traceId: string,
    _name: string,
    _kind: SpanKind,
    _attributes: Attributes,
    _links: Link[],
  ): SamplingResult {
    const now = this.clock.monotonic();
    const refill = ((now - this.last) / 1000) * this.maxPerSecond;
    this.tokens = Math.min(this.capacity, this.tokens + refill);
    this.last = now;
    if (this.tokens >= 1) {
      this.tokens -= 1;
      return { decision: SamplingDecision.RECORD_AND_SAMPLED };
    }
    return { decision: SamplingDecision.NOT_RECORD };
  }

  toString(): string {
    return `RateLimitingSampler{${this.maxPerSecond}}`;
  }
}

/** What {@link createSampler} reads of `TracingConfig`. */
export interface SamplerConfig {
  sampler_type: string;
  sample_rate: number;
  max_traces_per_second: number;
}

/** The sampler `config.sampler_type` names. */
export function createSampler(config: SamplerConfig, clock?: Clock): Sampler {
  switch (config.sampler_type) {
    case 'always_on':
      return new AlwaysOnSampler();
    case 'always_off':
      return new AlwaysOffSampler();
    case 'probability':
      return new TraceIdRatioBasedSampler(config.sample_rate);
    case 'rate_limiting':
      return new RateLimitingSampler(config.max_traces_per_second, clock);
    case 'parent_based':
      return new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(config.sample_rate) });
    default:
      throw new RangeError(`unknown sampler_type "${config.sampler_type}"`);
  }
}
