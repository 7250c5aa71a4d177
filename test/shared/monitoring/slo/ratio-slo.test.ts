import {
  type AlertContext,
  type AlertDispatcherProtocol,
  DEFAULT_BURN_RATE_RULES,
  DuplicateSLOError,
  InvalidSLOError,
  RatioSLO,
  SLO,
  SLOMonitor,
} from '../../../../shared/monitoring';
import { captureLogger, FakeClock } from '../helpers';

class RecordingDispatcher implements AlertDispatcherProtocol {
  readonly alerts: Array<{ title: string; severity: string; context: AlertContext }> = [];
  async sendAlert(
    title: string,
    _message: string,
    severity: string,
    context?: AlertContext | null,
  ): Promise<void> {
    this.alerts.push({ title, severity, context: context ?? {} });
  }
  async sendMetricAlert(): Promise<void> {}
}

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

function setup(minEvents = 100) {
  const clock = new FakeClock(0, Date.UTC(2026, 0, 1));
  const dispatcher = new RecordingDispatcher();
  const { logger, lines } = captureLogger();
  const m = new SLOMonitor({ clock, alertDispatcher: dispatcher, logger });
  m.registerRatio(
    new RatioSLO({
      name: 'api-availability',
      objective: 0.999,
      minEvents,
      owner: 'team-api',
      runbookUrl: 'https://rb/api',
    }),
  );
  /** Records `perMinute` events a minute, `badPerMinute` of them bad, for `minutes` minutes. */
  const traffic = (minutes: number, perMinute: number, badPerMinute: number) => {
    for (let i = 0; i < minutes; i++) {
      m.recordEvents('api-availability', perMinute - badPerMinute, perMinute);
      clock.advance(MINUTE);
    }
  };
  const firing = () => m.evaluateRatios()[0]!.firing.map((r) => `${r.rule.severity}@${r.rule.burnRate}`);
  return { clock, dispatcher, lines, m, traffic, firing };
}

describe('RatioSLO', () => {
  it('has the SRE workbook table by default', () => {
    expect(
      DEFAULT_BURN_RATE_RULES.map((r) => [r.severity, r.burnRate, r.longWindowSeconds, r.shortWindowSeconds]),
    ).toEqual([
      ['page', 14.4, 3600, 300],
      ['page', 6, 21600, 1800],
      ['ticket', 1, 259200, 21600],
    ]);
  });

  it.each([
    [{ objective: 1 }, 'objective'],
    [{ objective: 0 }, 'objective'],
    [{ windowSeconds: 60 }, 'window'],
    [{ windowSeconds: 100 * 86400 }, 'window'],
    [{ minEvents: -1 }, 'min_events'],
    [
      { rules: [{ severity: 'page', burnRate: 2, longWindowSeconds: 300, shortWindowSeconds: 600 }] },
      'short < long',
    ],
    // The workbook's 3-day ticket rule does not fit a 1-day window (the defaults scale to it instead).
    [{ windowSeconds: 86400, rules: DEFAULT_BURN_RATE_RULES }, 'short < long'],
  ])('rejects %j', (override, message) => {
    expect(() => new RatioSLO({ name: 'x', objective: 0.99, ...(override as object) })).toThrow(
      InvalidSLOError,
    );
    expect(() => new RatioSLO({ name: 'x', objective: 0.99, ...(override as object) })).toThrow(message);
  });

  it('shares the name space with latency SLOs', () => {
    const m = new SLOMonitor();
    m.register(new SLO({ name: 'a', metric: 'm', percentile: 0.5, thresholdMs: 1, windowSeconds: 1 }));
    expect(() => m.registerRatio(new RatioSLO({ name: 'a', objective: 0.9 }))).toThrow(DuplicateSLOError);
  });

  it('rejects event counts that are not integers with 0 <= good <= total, and ignores unknown names', () => {
    const m = new SLOMonitor();
    expect(() => m.recordEvents('x', 5, 4)).toThrow('0 <= good <= total');
    expect(() => m.recordEvents('x', 0.5, 1)).toThrow(InvalidSLOError);
    expect(m.recordEvents('x', 1, 1)).toBe(false);
  });
});

describe('multi-window, multi-burn-rate table (objective 99.9%, budget 0.1%)', () => {
  it('nothing fires and the whole budget is left without events', () => {
    const { m, firing } = setup();
    expect(firing()).toEqual([]);
    expect(m.evaluateRatios()[0]).toMatchObject({ events: 0, badEvents: 0, errorBudgetRemaining: 1 });
  });

  it('pages at 14.4x once the 1 h window and the 5 min window both burn that fast', () => {
    const { traffic, firing } = setup();
    traffic(60, 1000, 15); // 1.5% errors = 15x for one hour
    expect(firing()).toContain('page@14.4');
  });

  it('does not page at 14.4x when the last 5 minutes are clean (the burn has stopped)', () => {
    const { traffic, firing, m } = setup();
    traffic(55, 1000, 16);
    traffic(5, 1000, 0);
    const rule = m.evaluateRatios()[0]!.rules[0]!;
    expect(rule.longBurnRate).toBeGreaterThan(14.4);
    expect(rule.shortBurnRate).toBe(0);
    expect(firing()).not.toContain('page@14.4');
  });

  it('does not page at 14.4x for a short spike that leaves the 1 h average low', () => {
    const { traffic, firing } = setup();
    traffic(55, 1000, 0);
    traffic(5, 1000, 100); // 10% for 5 minutes: 100x short, ~8.3x long
    expect(firing()).not.toContain('page@14.4');
  });

  it('pages at 6x over 6 h confirmed over 30 min, below the 14.4x rule', () => {
    const { traffic, firing } = setup();
    traffic(360, 1000, 7); // 7x for six hours (the slow ticket rule trips too)
    expect(firing()).toEqual(['page@6', 'ticket@1']);
  });

  it('does not page at 6x when the last 30 minutes are below 6x', () => {
    const { traffic, firing } = setup();
    traffic(330, 1000, 8);
    traffic(30, 1000, 2);
    expect(firing()).toEqual(['ticket@1']);
  });

  it('opens a ticket at 1x over 3 days confirmed over 6 h, with the budget report', () => {
    const { firing, m, clock } = setup();
    // 3 days at 1.2x (72 bad of 60,000 an hour), recorded an hour at a time to keep the test quick.
    for (let h = 0; h < 72; h++) {
      m.recordEvents('api-availability', 60_000 - 72, 60_000);
      clock.advance(HOUR);
    }
    // The last record is an hour old; the 6 h confirming window still sees five hours of it.
    expect(firing()).toEqual(['ticket@1']);
    const s = m.evaluateRatios()[0]!;
    expect(s.events).toBe(72 * 60_000);
    expect(s.badEvents).toBe(72 * 72);
    // Budget over the 30-day window: bad / (events x 0.001) = 1.2 -> 20% overspent.
    expect(s.errorBudgetRemaining).toBeCloseTo(-0.2, 6);
  });

  it('sends a ticket to P1 when only the ticket rule fires', async () => {
    const { traffic, m, dispatcher } = setup();
    traffic(360, 1000, 2); // 2x: below both page rules
    await m.evaluateAndDispatch();
    expect(dispatcher.alerts).toEqual([
      expect.objectContaining({
        severity: 'high',
        context: expect.objectContaining({ tier: 'P1_BUSINESS_HOURS', burn_rate_threshold: 1 }),
      }),
    ]);
  });

  it('does not page a quiet service for one error (minimum-events guard)', () => {
    const { m, firing } = setup(100);
    m.recordEvents('api-availability', 0, 1);
    const rule = m.evaluateRatios()[0]!.rules[0]!;
    expect(rule.longBurnRate).toBeCloseTo(1000, 6);
    expect(firing()).toEqual([]);
    m.recordEvents('api-availability', 90, 99); // 100 events in the hour now
    expect(firing()).toContain('page@14.4');
  });

  it('reports the remaining error budget', () => {
    const { m } = setup();
    m.recordEvents('api-availability', 99_975, 100_000); // 25 bad of 100 allowed
    expect(m.evaluateRatios()[0]!.errorBudgetRemaining).toBeCloseTo(0.75, 9);
  });

  it('forgets events older than its window: memory is a fixed set of buckets', () => {
    const { m, clock } = setup();
    m.recordEvents('api-availability', 0, 1000);
    clock.advance(31 * 24 * HOUR);
    expect(m.evaluateRatios()[0]).toMatchObject({ events: 0, errorBudgetRemaining: 1 });
  });

  it('dispatches the most severe firing rule (a page, to P0) with the SLO context, suppressed within the window', async () => {
    const { traffic, m, dispatcher, lines, clock } = setup();
    traffic(360, 1000, 20); // 20x for 6 h: both page rules fire
    await m.evaluateAndDispatch();
    expect(dispatcher.alerts).toHaveLength(1);
    expect(dispatcher.alerts[0]).toMatchObject({
      title: 'SLO burn rate: api-availability',
      severity: 'critical',
      context: {
        tier: 'P0_PAGE',
        slo: 'api-availability',
        owner: 'team-api',
        runbook_url: 'https://rb/api',
        burn_rate_threshold: 14.4,
      },
    });
    expect(dispatcher.alerts[0]!.context.burn_rate).toBeCloseTo(20, 6);
    expect(lines.filter((l) => l.event === 'slo_burn_rate')).toHaveLength(1);
    await m.evaluateAndDispatch();
    expect(dispatcher.alerts).toHaveLength(1);
    clock.advance(5 * MINUTE);
    traffic(1, 1000, 20);
    await m.evaluateAndDispatch();
    expect(dispatcher.alerts).toHaveLength(2);
  });
});
