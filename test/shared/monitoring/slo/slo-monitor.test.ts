import fc from 'fast-check';
import {
  type AlertContext,
  type AlertDispatcherProtocol,
  DuplicateSLOError,
  InvalidSLOError,
  MAX_SAMPLES_PER_CALL,
  nearestRankPercentile,
  SLO,
  SLOMonitor,
  SLOLimitExceededError,
  SLOViolation,
  sloConfigSchema,
} from '../../../../shared/monitoring';
import { captureLogger, FakeClock } from '../helpers';

class RecordingDispatcher implements AlertDispatcherProtocol {
  readonly alerts: Array<{ title: string; message: string; severity: string; context: AlertContext }> = [];
  fail = false;
  async sendAlert(
    title: string,
    message: string,
    severity: string,
    context?: AlertContext | null,
  ): Promise<void> {
    if (this.fail) throw new Error('dispatcher down');
    this.alerts.push({ title, message, severity, context: context ?? {} });
  }
  async sendMetricAlert(): Promise<void> {}
}

const base = {
  name: 'checkout-p99',
  metric: 'checkout.latency',
  percentile: 0.99,
  thresholdMs: 300,
  windowSeconds: 300,
};

function monitor(extra: ConstructorParameters<typeof SLOMonitor>[0] = {}) {
  const clock = new FakeClock();
  const dispatcher = new RecordingDispatcher();
  const { logger, lines } = captureLogger();
  const m = new SLOMonitor({ clock, alertDispatcher: dispatcher, logger, ...extra });
  return { clock, dispatcher, lines, m };
}

describe('SLO', () => {
  it.each([
    [{ percentile: 1.5 }, 'percentile must be between 0.0 and 1.0'],
    [{ percentile: -0.1 }, 'percentile'],
    [{ percentile: Number.NaN }, 'percentile'],
    [{ windowSeconds: 0 }, 'window'],
    [{ windowSeconds: Number.POSITIVE_INFINITY }, 'window'],
    [{ thresholdMs: -1 }, 'threshold_ms'],
    [{ burnRateThreshold: 0 }, 'burn_rate_threshold'],
    [{ name: ' ' }, 'name must not be empty'],
    [{ metric: '' }, 'metric must not be empty'],
    [{ tier: 'P5' }, 'unknown tier'],
  ])('rejects %j', (override, message) => {
    expect(() => new SLO({ ...base, ...(override as object) })).toThrow(InvalidSLOError);
    expect(() => new SLO({ ...base, ...(override as object) })).toThrow(message);
  });

  it('defaults: burn rate threshold 1.0, tier P1_BUSINESS_HOURS', () => {
    const slo = new SLO(base);
    expect(slo).toMatchObject({
      burnRateThreshold: 1,
      tier: 'P1_BUSINESS_HOURS',
      owner: '',
      runbookUrl: '',
      description: '',
    });
    expect(new SLO({ ...base, percentile: 0 }).percentile).toBe(0);
    expect(new SLO({ ...base, percentile: 1 }).percentile).toBe(1);
  });
});

describe('SLOViolation', () => {
  it('computes burn rate as measured / threshold and generates a message when none is given', () => {
    const v = new SLOViolation(new SLO(base), 450, new Date(Date.UTC(2026, 0, 1)));
    expect(v.burnRate).toBe(1.5);
    expect(v.message).toBe(
      'SLO checkout-p99 breached: p99 of checkout.latency is 450 ms over the last 300 s, threshold 300 ms (burn rate 1.5)',
    );
    expect(v.detectedAt.toISOString()).toBe('2026-01-01T00:00:00.000Z');
    expect(new SLOViolation(new SLO(base), 450, new Date(), 'custom').message).toBe('custom');
  });
});

describe('SLOMonitor', () => {
  it('rejects a second SLO with the same name (ValueError equivalent, ALREADY_EXISTS)', () => {
    const { m } = monitor();
    m.register(new SLO(base));
    expect(() => m.register(new SLO({ ...base, metric: 'other' }))).toThrow(DuplicateSLOError);
    expect(new DuplicateSLOError('x').code).toBe('ALREADY_EXISTS');
    expect([...m.registeredSlos.keys()]).toEqual(['checkout-p99']);
  });

  it('returns no violation without samples or when within bounds', () => {
    const { m } = monitor();
    m.register(new SLO(base));
    expect(m.evaluate()).toEqual([]);
    for (let i = 0; i < 100; i++) m.recordSample('checkout.latency', 100 + i);
    expect(m.evaluate()).toEqual([]);
  });

  it('reports the SLO when its percentile reaches the threshold times the burn-rate threshold', () => {
    const { m } = monitor();
    m.register(new SLO(base));
    m.register(new SLO({ ...base, name: 'lenient', burnRateThreshold: 2 }));
    for (let i = 1; i <= 100; i++) m.recordSample('checkout.latency', i === 100 ? 600 : i);
    // p99 of 1..99,600 (nearest rank) is 99: fine.
    expect(m.evaluate()).toEqual([]);
    m.recordSample('checkout.latency', 600);
    // Now 101 samples; rank ceil(0.99*101)=100 -> 600 ms: burn 2.0, at the lenient threshold too.
    const violations = m.evaluate();
    expect(violations.map((v) => [v.slo.name, v.measuredValue, v.burnRate])).toEqual([
      ['checkout-p99', 600, 2],
      ['lenient', 600, 2],
    ]);
  });

  it("replaceSamples puts a store's samples in place of the kept ones, placed in time by their ages", () => {
    const { m } = monitor({ maxSamplesPerMetric: 3 });
    m.register(new SLO(base));
    m.recordSample('checkout.latency', 5);
    // Oldest first: 1000 ms recorded 301 s ago (outside the 300 s window), then two inside it.
    expect(m.replaceSamples('checkout.latency', [1000, 600, 700], [301_000, 2000, 0])).toBe(true);
    expect(m.sampleCount('checkout.latency')).toBe(3);
    const [status] = m.latencyStatuses();
    expect(status).toMatchObject({ samples: 2, measuredMs: 700 });
    // More than the ring holds: the newest are kept; a metric no SLO reads keeps nothing.
    m.replaceSamples('checkout.latency', [1, 2, 3, 4], [3, 2, 1, 0]);
    expect(m.latencyStatuses()[0]).toMatchObject({ samples: 3, measuredMs: 4 });
    expect(m.replaceSamples('unread.metric', [1], [0])).toBe(false);
    expect(m.sampleCount('unread.metric')).toBe(0);
  });

  it('ignores samples older than the window', () => {
    const { m, clock } = monitor();
    m.register(new SLO(base));
    m.recordSample('checkout.latency', 1000);
    clock.advance(300_001);
    m.recordSample('checkout.latency', 10);
    expect(m.evaluate()).toEqual([]);
    clock.advance(300_001);
    expect(m.evaluate()).toEqual([]);
    expect(m.sampleCount('checkout.latency')).toBe(2);
  });

  it('keeps at most max_samples_per_metric samples, dropping the oldest', () => {
    const { m } = monitor({ maxSamplesPerMetric: 3 });
    m.register(new SLO({ ...base, percentile: 1 }));
    m.recordSample('checkout.latency', 9999);
    for (const v of [1, 2, 3]) m.recordSample('checkout.latency', v);
    expect(m.sampleCount('checkout.latency')).toBe(3);
    expect(m.evaluate()).toEqual([]); // the 9999 was dropped
    m.recordSample('checkout.latency', 400);
    expect(m.evaluate()[0]!.measuredValue).toBe(400);
  });

  it('defaults max_samples_per_metric to 10,000', () => {
    const { m } = monitor();
    m.register(new SLO(base));
    for (let i = 0; i < 10_005; i++) m.recordSample('checkout.latency', 1);
    expect(m.sampleCount('checkout.latency')).toBe(10_000);
  });

  it('keeps nothing for a metric no SLO reads, and rejects values that are not finite and >= 0', () => {
    const { m } = monitor();
    expect(m.recordSample('unknown', 5)).toBe(false);
    expect(m.sampleCount('unknown')).toBe(0);
    expect(() => m.recordSample('unknown', Number.NaN)).toThrow(InvalidSLOError);
    expect(() => m.recordSample('unknown', -1)).toThrow('finite number of 0 or more');
  });

  it('clears one metric or all', () => {
    const { m } = monitor();
    m.register(new SLO(base));
    m.register(new SLO({ ...base, name: 'b', metric: 'b.latency' }));
    m.recordSample('checkout.latency', 1000);
    m.recordSample('b.latency', 1000);
    m.clearSamples('checkout.latency');
    expect(m.evaluate().map((v) => v.slo.name)).toEqual(['b']);
    m.clearSamples();
    expect(m.evaluate()).toEqual([]);
  });

  it('bounds the number of SLOs', () => {
    const { m } = monitor({ maxSlos: 1 });
    m.register(new SLO(base));
    expect(() => m.register(new SLO({ ...base, name: 'second' }))).toThrow('at most 1 SLOs');
    // An overload, not bad input: RESOURCE_EXHAUSTED at the RPC layer.
    expect(() => m.register(new SLO({ ...base, name: 'second' }))).toThrow(SLOLimitExceededError);
    expect(m.registeredSlos.size).toBe(1);
  });

  it('dispatches with tier-aware context, logs a structured warning, and suppresses repeats within the window', async () => {
    const { m, clock, dispatcher, lines } = monitor();
    m.register(
      new SLO({ ...base, tier: 'P0_PAGE', owner: 'team-pay', runbookUrl: 'https://runbooks/checkout' }),
    );
    m.recordSample('checkout.latency', 600);
    const first = await m.evaluateAndDispatch();
    expect(first).toHaveLength(1);
    expect(dispatcher.alerts).toHaveLength(1);
    expect(dispatcher.alerts[0]).toMatchObject({
      title: 'SLO violation: checkout-p99',
      severity: 'critical',
      message: first[0]!.message,
      context: {
        tier: 'P0_PAGE',
        slo: 'checkout-p99',
        owner: 'team-pay',
        runbook_url: 'https://runbooks/checkout',
        burn_rate: 2,
      },
    });
    expect(lines).toEqual([
      expect.objectContaining({
        level: 40,
        event: 'slo_violation',
        slo: 'checkout-p99',
        burn_rate: 2,
        measured_ms: 600,
        tier: 'P0_PAGE',
      }),
    ]);

    clock.advance(299_999);
    m.recordSample('checkout.latency', 600);
    expect(await m.evaluateAndDispatch()).toHaveLength(1); // still returned, and logged
    expect(dispatcher.alerts).toHaveLength(1); // but not sent again
    expect(lines).toHaveLength(2);

    clock.advance(1);
    await m.evaluateAndDispatch();
    expect(dispatcher.alerts).toHaveLength(2);
  });

  it('suppresses per SLO: another SLO in breach is still sent', async () => {
    const { m, dispatcher } = monitor();
    m.register(new SLO(base));
    m.recordSample('checkout.latency', 600);
    await m.evaluateAndDispatch();
    m.register(new SLO({ ...base, name: 'other' }));
    await m.evaluateAndDispatch();
    expect(dispatcher.alerts.map((a) => a.context.slo)).toEqual(['checkout-p99', 'other']);
  });

  it('does not mark an SLO as sent when the dispatcher fails, so the next evaluation retries', async () => {
    const { m, dispatcher, lines } = monitor();
    m.register(new SLO(base));
    m.recordSample('checkout.latency', 600);
    dispatcher.fail = true;
    await m.evaluateAndDispatch();
    expect(lines.some((l) => l.msg === 'SLO alert dispatch failed' && l.level === 50)).toBe(true);
    dispatcher.fail = false;
    await m.evaluateAndDispatch();
    expect(dispatcher.alerts).toHaveLength(1);
  });

  it('uses the logging dispatcher when none is given', async () => {
    const { logger, lines } = captureLogger();
    const m = new SLOMonitor({ logger, clock: new FakeClock() });
    m.register(new SLO(base));
    m.recordSample('checkout.latency', 600);
    await m.evaluateAndDispatch();
    expect(lines.map((l) => l.event)).toEqual(['slo_violation', 'alert']);
    expect(lines[1]).toMatchObject({
      level: 50,
      severity: 'high',
      context: { tier: 'P1_BUSINESS_HOURS', slo: 'checkout-p99' },
    });
  });
});

describe('nearestRankPercentile', () => {
  it('equals the nearest-rank value of a sorted copy', () => {
    fc.assert(
      fc.property(
        fc.array(fc.double({ min: 0, max: 1e6, noNaN: true }), { minLength: 1, maxLength: 300 }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        (values, p) => {
          const sorted = [...values].sort((a, b) => a - b);
          const k = Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1));
          expect(nearestRankPercentile(Float64Array.from(values), values.length, p)).toBe(sorted[k]);
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe('slo config', () => {
  it('has the spec defaults and rejects bad values', () => {
    expect(sloConfigSchema().parse(undefined)).toEqual({
      max_samples_per_metric: 10_000,
      suppression_window_seconds: 300,
      max_slos: 1000,
    });
    expect(sloConfigSchema().parse({ suppression_window_seconds: '10m' }).suppression_window_seconds).toBe(
      600,
    );
    expect(sloConfigSchema().safeParse({ max_samples_per_metric: 0 }).success).toBe(false);
    expect(sloConfigSchema().safeParse({ extra: 1 }).success).toBe(false);
  });
});

describe('SLOMonitor.recordSamples', () => {
  it('records a whole batch and says how many were kept', () => {
    const { m } = monitor();
    m.register(new SLO(base));
    expect(m.recordSamples('checkout.latency', [1, 2, 3])).toBe(3);
    expect(m.sampleCount('checkout.latency')).toBe(3);
    expect(m.recordSamples('nobody.reads.this', [1, 2])).toBe(0);
  });

  it.each([
    [[1, -1, 2], 1],
    [[1, 2, Number.NaN], 2],
    [[Number.POSITIVE_INFINITY], 0],
  ])('rejects %j naming index %i, and records nothing', (values, index) => {
    const { m } = monitor();
    m.register(new SLO(base));
    expect(() => m.recordSamples('checkout.latency', values)).toThrow(`sample [${index}]`);
    expect(() => m.recordSamples('checkout.latency', values)).toThrow(InvalidSLOError);
    expect(m.sampleCount('checkout.latency')).toBe(0);
  });

  it('takes at most MAX_SAMPLES_PER_CALL values', () => {
    const { m } = monitor();
    m.register(new SLO(base));
    expect(m.recordSamples('checkout.latency', new Float64Array(MAX_SAMPLES_PER_CALL))).toBe(10_000);
    expect(() => m.recordSamples('checkout.latency', new Float64Array(MAX_SAMPLES_PER_CALL + 1))).toThrow(
      'at most 10000 samples',
    );
    expect(m.sampleCount('checkout.latency')).toBe(10_000);
  });
});

describe('SLOMonitor.latencyStatuses', () => {
  it('reports nulls for an SLO without samples in its window', () => {
    const { m } = monitor();
    m.register(new SLO(base));
    expect(m.latencyStatuses()).toEqual([
      expect.objectContaining({ samples: 0, measuredMs: null, burnRate: null, errorBudgetRemaining: null }),
    ]);
  });

  it('spends the budget by the fraction of samples above the threshold against 1 - percentile', () => {
    const { m } = monitor();
    m.register(new SLO({ ...base, percentile: 0.9 })); // 10% may be above 300 ms
    // 100 samples, 5 above the threshold: half of the allowed 10% is used.
    m.recordSamples('checkout.latency', [...Array(95).fill(100), ...Array(5).fill(400)]);
    const [s] = m.latencyStatuses();
    expect(s).toMatchObject({ samples: 100, samplesAboveThreshold: 5, measuredMs: 100, burnRate: 100 / 300 });
    expect(s!.errorBudgetRemaining).toBeCloseTo(0.5, 12);
    // 15 of 110 above: 13.6% against 10% allowed, overspent.
    m.recordSamples('checkout.latency', Array(10).fill(500));
    const [t] = m.latencyStatuses();
    expect(t!.errorBudgetRemaining).toBeCloseTo(1 - 15 / 110 / 0.1, 12);
    expect(t!.errorBudgetRemaining!).toBeLessThan(0);
    expect(t!.measuredMs).toBe(400);
  });

  it('with percentile 1 the budget is whole until one sample is above the threshold, then spent', () => {
    const { m } = monitor();
    m.register(new SLO({ ...base, percentile: 1 }));
    m.recordSamples('checkout.latency', [300, 10]);
    expect(m.latencyStatuses()[0]!.errorBudgetRemaining).toBe(1);
    m.recordSamples('checkout.latency', [301]);
    expect(m.latencyStatuses()[0]!.errorBudgetRemaining).toBe(0);
  });

  it('has a negative budget exactly when the measured percentile is above the threshold (percentile < 1)', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 0, max: 600 }), { minLength: 1, maxLength: 200 }),
        fc.double({ min: 0.01, max: 0.999, noNaN: true }),
        (values, p) => {
          const { m } = monitor();
          m.register(new SLO({ ...base, percentile: p }));
          m.recordSamples('checkout.latency', values);
          const [s] = m.latencyStatuses();
          // At the boundary (budget 0, up to float rounding of p * n) either side is right.
          const budget = s!.errorBudgetRemaining!;
          if (Math.abs(budget) > 1e-9) expect(budget < 0).toBe(s!.measuredMs! > base.thresholdMs);
        },
      ),
    );
  });

  it('counts only the samples of the window', () => {
    const { m, clock } = monitor();
    m.register(new SLO(base));
    m.recordSamples('checkout.latency', [1000, 1000]);
    clock.advance(300_001);
    m.recordSamples('checkout.latency', [10]);
    expect(m.latencyStatuses()[0]).toMatchObject({ samples: 1, samplesAboveThreshold: 0, measuredMs: 10 });
  });
});

describe('SLOMonitor.evaluateAndDispatchWithOutcomes', () => {
  it('says sent, then suppressed within the window, then sent again after it', async () => {
    const { m, clock, dispatcher } = monitor();
    m.register(new SLO(base));
    m.recordSample('checkout.latency', 600);
    expect((await m.evaluateAndDispatchWithOutcomes()).map((d) => d.outcome)).toEqual(['sent']);
    expect((await m.evaluateAndDispatchWithOutcomes()).map((d) => d.outcome)).toEqual(['suppressed']);
    expect(dispatcher.alerts).toHaveLength(1);
    clock.advance(300_000);
    m.recordSample('checkout.latency', 600);
    expect((await m.evaluateAndDispatchWithOutcomes()).map((d) => d.outcome)).toEqual(['sent']);
    expect(dispatcher.alerts).toHaveLength(2);
  });

  it('says failed when the dispatcher throws, and the next evaluation sends', async () => {
    const { m, dispatcher } = monitor();
    m.register(new SLO(base));
    m.recordSample('checkout.latency', 600);
    dispatcher.fail = true;
    expect((await m.evaluateAndDispatchWithOutcomes()).map((d) => d.outcome)).toEqual(['failed']);
    dispatcher.fail = false;
    expect((await m.evaluateAndDispatchWithOutcomes()).map((d) => d.outcome)).toEqual(['sent']);
  });

  it('sends once when two evaluations run at the same time', async () => {
    const { m, dispatcher } = monitor();
    m.register(new SLO(base));
    m.recordSample('checkout.latency', 600);
    const [a, b] = await Promise.all([
      m.evaluateAndDispatchWithOutcomes(),
      m.evaluateAndDispatchWithOutcomes(),
    ]);
    expect([a![0]!.outcome, b![0]!.outcome].sort()).toEqual(['sent', 'suppressed']);
    expect(dispatcher.alerts).toHaveLength(1);
  });
});

describe('SLOMonitor with a suppression ledger', () => {
  /** A ledger shared by two monitors, as the monitor's database is by its replicas. */
  class SharedLedger {
    readonly sent = new Map<string, number>();
    released: string[] = [];
    constructor(private readonly clock: FakeClock) {}
    async reserve(key: string, windowMs: number): Promise<boolean> {
      const last = this.sent.get(key);
      if (last !== undefined && this.clock.now() - last < windowMs) return false;
      this.sent.set(key, this.clock.now());
      return true;
    }
    async release(key: string): Promise<void> {
      this.released.push(key);
      this.sent.delete(key);
    }
  }

  it('two monitors on one ledger send one alert per window between them; a failed send gives the reservation back', async () => {
    const clock = new FakeClock();
    const ledger = new SharedLedger(clock);
    const a = new RecordingDispatcher();
    const b = new RecordingDispatcher();
    const ma = new SLOMonitor({ clock, alertDispatcher: a, suppressionLedger: ledger });
    const mb = new SLOMonitor({ clock, alertDispatcher: b, suppressionLedger: ledger });
    for (const m of [ma, mb]) {
      m.register(new SLO(base));
      m.recordSample('checkout.latency', 600);
    }
    expect((await ma.evaluateAndDispatchWithOutcomes()).map((d) => d.outcome)).toEqual(['sent']);
    expect((await mb.evaluateAndDispatchWithOutcomes()).map((d) => d.outcome)).toEqual(['suppressed']);
    clock.advance(300_000);
    b.fail = true;
    expect((await mb.evaluateAndDispatchWithOutcomes()).map((d) => d.outcome)).toEqual(['failed']);
    expect(ledger.released).toEqual(['checkout-p99']);
    expect((await ma.evaluateAndDispatchWithOutcomes()).map((d) => d.outcome)).toEqual(['sent']);
    expect(a.alerts).toHaveLength(2);
    expect(b.alerts).toHaveLength(0);
  });
});
