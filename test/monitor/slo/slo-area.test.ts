import { Registry } from 'prom-client';
import type { AlertContext, AlertDispatcherProtocol } from '../../../shared/monitoring/alerts/dispatcher';
import { MetricsCollector } from '../../../shared/monitoring/collector';
import { SLOLimitExceededError } from '../../../shared/monitoring/errors';
import { InvalidArgumentError } from '../../../shared/errors';
import { loadMonitorConfig, type MonitorConfigInput } from '../../../services/monitor/config';
import { SloEvaluationWorker } from '../../../services/monitor/slo/evaluation-worker';
import { SLO_FIELD_LIMITS, SloArea, type SloDefinition } from '../../../services/monitor/slo/slo-area';
import { captureLogger, FakeClock } from '../../shared/monitoring/helpers';
import { waitFor } from '../../support/wait';

class RecordingDispatcher implements AlertDispatcherProtocol {
  readonly alerts: Array<{ title: string; context: AlertContext }> = [];
  fail = false;
  async sendAlert(title: string, _m: string, _s: string, context?: AlertContext | null) {
    if (this.fail) throw new Error('alert channel down');
    this.alerts.push({ title, context: context ?? {} });
  }
  async sendMetricAlert(): Promise<void> {}
}

const checkout: SloDefinition = {
  name: 'checkout-p99',
  metric: 'checkout.latency',
  percentile: 0.99,
  thresholdMs: 300,
  windowSeconds: 60,
};

function setup(slo: MonitorConfigInput['slo'] = {}) {
  const config = loadMonitorConfig({ slo }, { env: {}, file: null });
  const clock = new FakeClock();
  const dispatcher = new RecordingDispatcher();
  const registry = new Registry();
  const collector = new MetricsCollector({ registry });
  const { logger, lines } = captureLogger();
  const area = new SloArea({ config: config.slo, alertDispatcher: dispatcher, collector, clock, logger });
  const metric = async (name: string, labels = ''): Promise<number | undefined> => {
    const body = await registry.metrics();
    const line = body.split('\n').find((l) => l.startsWith(`${name}${labels} `));
    return line === undefined ? undefined : Number(line.split(' ')[1]);
  };
  return { area, clock, dispatcher, registry, metric, lines };
}

describe('SloArea', () => {
  it('applies the defaults: window 300 s, burn rate threshold 1.0, tier P1_BUSINESS_HOURS', () => {
    const { area } = setup();
    const slo = area.register({ name: 'a', metric: 'm', percentile: 0.9, thresholdMs: 5 });
    expect(slo).toMatchObject({
      windowSeconds: 300,
      burnRateThreshold: 1,
      tier: 'P1_BUSINESS_HOURS',
      owner: '',
    });
  });

  it('registers the objectives of the config once, however often it is started', () => {
    const { area } = setup({ objectives: [{ name: 'cfg', metric: 'cfg.latency', threshold_ms: 10 }] });
    area.start();
    area.start();
    expect(area.list().map((s) => [s.name, s.percentile, s.windowSeconds])).toEqual([['cfg', 0.99, 300]]);
  });

  it('lists by name, not by registration order', () => {
    const { area } = setup();
    for (const name of ['zeta', 'alpha', 'Mid']) area.register({ ...checkout, name });
    expect(area.list().map((s) => s.name)).toEqual(['Mid', 'alpha', 'zeta']);
  });

  it('throws InvalidArgumentError naming the field for input the library does not bound', () => {
    const { area } = setup();
    expect(() => area.register({ ...checkout, runbookUrl: 'javascript:alert(1)' })).toThrow(
      InvalidArgumentError,
    );
    expect(() => area.register({ ...checkout, percentile: 0 })).toThrow('percentile must be greater than 0');
    expect(() => area.recordSamples('', [1])).toThrow('metric is required');
    expect(area.list()).toEqual([]);
  });

  it('takes every string at its length bound and refuses one character more', () => {
    const { area } = setup();
    const atBound = {
      ...checkout,
      name: 'n'.repeat(SLO_FIELD_LIMITS.name),
      metric: 'm'.repeat(SLO_FIELD_LIMITS.metric),
      description: 'd'.repeat(SLO_FIELD_LIMITS.description),
      owner: 'o'.repeat(SLO_FIELD_LIMITS.owner),
      runbookUrl: `https://runbooks.example/${'r'.repeat(SLO_FIELD_LIMITS.runbookUrl - 25)}`,
    };
    expect(atBound.runbookUrl).toHaveLength(SLO_FIELD_LIMITS.runbookUrl);
    expect(area.register(atBound).name).toHaveLength(128);
    for (const field of ['name', 'metric', 'description', 'owner', 'runbookUrl'] as const) {
      const over = { ...atBound, name: 'other', [field]: `${atBound[field]}x` };
      expect(() => area.register(over)).toThrow('characters');
    }
    expect(area.list()).toHaveLength(1);
  });

  it('refuses the SLO beyond max_slos with SLOLimitExceededError and adds no series for it', async () => {
    const { area, registry } = setup({ max_slos: 3 });
    for (const name of ['a', 'b', 'c']) area.register({ ...checkout, name });
    expect(() => area.register({ ...checkout, name: 'd' })).toThrow(SLOLimitExceededError);
    const body = await registry.metrics();
    expect(body.match(/^slo_burn_rate\{/gm)).toHaveLength(3);
    expect(body).not.toContain('slo="d"');
  });

  it('reports statuses in the status page shape, nulls without samples', () => {
    const { area } = setup();
    area.register({ ...checkout, percentile: 0.5 });
    area.register({ ...checkout, name: 'idle', metric: 'idle.latency', tier: 'P2_DIGEST' });
    area.recordSamples('checkout.latency', [100, 200, 400, 500]);
    expect(area.statuses()).toEqual([
      {
        name: 'checkout-p99',
        metric: 'checkout.latency',
        percentile: 0.5,
        thresholdMs: 300,
        windowSeconds: 60,
        kind: 'latency',
        tier: 'P1_BUSINESS_HOURS',
        samples: 4,
        measuredMs: 200,
        burnRate: 200 / 300,
        // Half the samples above 300 ms, against the 50% a p50 allows: the budget is spent.
        budgetRemaining: 0,
      },
      {
        name: 'idle',
        metric: 'idle.latency',
        percentile: 0.99,
        thresholdMs: 300,
        windowSeconds: 60,
        kind: 'latency',
        tier: 'P2_DIGEST',
        samples: 0,
        measuredMs: null,
        burnRate: null,
        budgetRemaining: null,
      },
    ]);
  });

  it('dispatches once, reports the repeat within the suppression window as suppressed, and sends again after it', async () => {
    const { area, clock, dispatcher, metric } = setup({ suppression_window_seconds: 120 });
    area.register(checkout);
    area.recordSamples('checkout.latency', [600]);
    expect((await area.evaluate(true)).map((r) => r.suppressed)).toEqual([false]);
    expect((await area.evaluate(true)).map((r) => r.suppressed)).toEqual([true]);
    expect(dispatcher.alerts.map((a) => a.title)).toEqual(['SLO violation: checkout-p99']);
    clock.advance(120_000);
    area.recordSamples('checkout.latency', [600]);
    expect((await area.evaluate(true)).map((r) => r.suppressed)).toEqual([false]);
    expect(dispatcher.alerts).toHaveLength(2);
    expect(await metric('slo_alerts_total', '{outcome="sent"}')).toBe(2);
    expect(await metric('slo_alerts_total', '{outcome="suppressed"}')).toBe(1);
    expect(await metric('slo_evaluations_total')).toBe(3);
  });

  it('does not dispatch when not asked, and never calls that suppressed', async () => {
    const { area, dispatcher } = setup();
    area.register(checkout);
    area.recordSamples('checkout.latency', [600]);
    expect((await area.evaluate(false)).map((r) => [r.violation.measuredValue, r.suppressed])).toEqual([
      [600, false],
    ]);
    expect(dispatcher.alerts).toEqual([]);
  });

  it('reports a failed dispatch as not suppressed, counts it, and retries at the next evaluation', async () => {
    const { area, dispatcher, metric } = setup();
    area.register(checkout);
    area.recordSamples('checkout.latency', [600]);
    dispatcher.fail = true;
    expect((await area.evaluate(true)).map((r) => r.suppressed)).toEqual([false]);
    expect(await metric('slo_alerts_total', '{outcome="failed"}')).toBe(1);
    dispatcher.fail = false;
    expect((await area.evaluate(true)).map((r) => r.suppressed)).toEqual([false]);
    expect(dispatcher.alerts).toHaveLength(1);
  });

  it('refreshes the per-SLO gauges at each evaluation, back to 0 and 1 once the window is empty', async () => {
    const { area, clock, metric } = setup();
    area.register(checkout);
    area.recordSamples('checkout.latency', [600, 600]);
    await area.evaluate(false);
    expect(await metric('slo_burn_rate', '{slo="checkout-p99"}')).toBe(2);
    expect(await metric('slo_window_samples', '{slo="checkout-p99"}')).toBe(2);
    expect(await metric('slo_error_budget_remaining', '{slo="checkout-p99"}')).toBeLessThan(0);
    clock.advance(60_001);
    await area.evaluate(false);
    expect(await metric('slo_burn_rate', '{slo="checkout-p99"}')).toBe(0);
    expect(await metric('slo_window_samples', '{slo="checkout-p99"}')).toBe(0);
    expect(await metric('slo_error_budget_remaining', '{slo="checkout-p99"}')).toBe(1);
  });
});

describe('SloEvaluationWorker', () => {
  it('logs and counts a failing evaluation, and runs again the next time', async () => {
    const registry = new Registry();
    const { logger, lines } = captureLogger();
    let calls = 0;
    const worker = new SloEvaluationWorker({
      evaluate: async () => {
        calls++;
        if (calls === 1) throw new Error('boom');
      },
      intervalSeconds: 1,
      collector: new MetricsCollector({ registry }),
      logger,
    });
    worker.start();
    try {
      await waitFor(() => calls >= 2, 'a second timed evaluation after the failing one');
    } finally {
      await worker.stop();
    }
    expect(lines.filter((l) => l.msg === 'SLO evaluation failed' && l.level === 50)).toHaveLength(1);
    expect(await registry.metrics()).toMatch(/^slo_evaluation_failures_total 1$/m);
  });

  it('evaluates on its timer, and not after stop()', async () => {
    let calls = 0;
    const worker = new SloEvaluationWorker({ evaluate: async () => void calls++, intervalSeconds: 1 });
    worker.start();
    try {
      await waitFor(() => calls >= 1, 'a timed evaluation');
    } finally {
      await worker.stop();
    }
    const after = calls;
    expect(await worker.runOnce()).toBe(false);
    expect(calls).toBe(after);
  });

  it('stop() waits for an evaluation in progress', async () => {
    let release!: () => void;
    let finished = false;
    const worker = new SloEvaluationWorker({
      evaluate: () =>
        new Promise<void>((resolve) => (release = resolve)).then(() => {
          finished = true;
        }),
      intervalSeconds: 60,
    });
    const run = worker.runOnce();
    const stopped = worker.stop();
    release();
    await stopped;
    expect(finished).toBe(true);
    await run;
  });
});
