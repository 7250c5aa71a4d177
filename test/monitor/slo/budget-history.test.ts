/**
 * The budget burn-down (issue 29): point counts and their bound (at most 100, hourly up to 100 hours
 * and past it), groups of a calendar month in a zone whose month starts on a half hour, events outside
 * the period left out, a latency SLO with a period read through the SloArea, one without refused.
 */
import { budgetBurnDown, stepHours } from '../../../services/monitor/slo/budget-history';
import { SloArea } from '../../../services/monitor/slo/slo-area';
import { MemorySloStateStore } from '../../../services/monitor/slo/store';
import { loadMonitorConfig } from '../../../services/monitor/config';
import type { SloPeriod } from '../../../shared/monitoring/slo/period';
import { ManualClock } from '../../support/manual-clock';

const HOUR = 3_600_000;
const NOW = Date.parse('2026-11-29T12:30:00Z');
const rolling = (hours: number): SloPeriod => ({ kind: 'rolling', seconds: hours * 3600 });
const points = (
  period: SloPeriod,
  nowMs = NOW,
  buckets: Array<{ atMs: number; good: number; total: number }> = [],
) => budgetBurnDown({ slo: 's', period, objective: 0.99, nowMs, buckets });

describe('budgetBurnDown', () => {
  it.each([
    [24, 1, 24],
    [96, 1, 96],
    [100, 1, 100],
    [101, 2, 51],
    [120, 2, 60],
    [720, 8, 90],
    [2160, 22, 99],
  ])('a rolling period of %i h: points of %i h, %i of them', (hours, step, count) => {
    expect(stepHours(rolling(hours))).toBe(step);
    const b = points(rolling(hours));
    expect(b.points).toHaveLength(count);
    expect(b.points.length).toBeLessThanOrEqual(100);
    expect(b.points.every((p) => p.budget_remaining === 1)).toBe(true);
    expect(b.points.at(-1)!.at).toBe(new Date(NOW).toISOString());
  });

  it('groups a calendar month from its local start (Asia/Kolkata: 18:30 UTC the day before), up to now', () => {
    const period: SloPeriod = { kind: 'calendar_month', timeZone: 'Asia/Kolkata' };
    const b = points(period, Date.parse('2026-11-01T03:10:00Z'), [
      // The hour before the month's start hour: not this month's.
      { atMs: Date.parse('2026-10-31T17:00:00Z'), good: 0, total: 50 },
      // The start's hour counts whole (as the library counts it).
      { atMs: Date.parse('2026-10-31T18:00:00Z'), good: 99, total: 100 },
    ]);
    expect(b.period_start).toBe('2026-10-31T18:30:00.000Z');
    expect(b.period_end).toBe('2026-11-30T18:30:00.000Z');
    expect(b.step_hours).toBe(8);
    // 18:00 to 02:00, then 02:00 to now.
    expect(b.points.map((p) => p.at)).toEqual(['2026-11-01T02:00:00.000Z', '2026-11-01T03:10:00.000Z']);
    expect(b.points.map((p) => p.budget_remaining)).toEqual([0, 0]);
  });

  it('a calendar month in its first hour has one point', () => {
    const b = points({ kind: 'calendar_month', timeZone: 'UTC' }, Date.parse('2026-12-01T00:20:00Z'));
    expect(b.points).toEqual([{ at: '2026-12-01T00:20:00.000Z', budget_remaining: 1 }]);
  });

  it('counts bad events of the sums (good may run ahead of total in one bucket)', () => {
    const b = points(rolling(4), NOW, [
      { atMs: NOW - 2 * HOUR, good: 10, total: 0 },
      { atMs: NOW - HOUR, good: 0, total: 20 },
    ]);
    // Sums: good 10 of 20, bad 10: 1 - 10 / (20 x 0.01).
    expect(b.points.at(-2)!.budget_remaining).toBeCloseTo(1 - 10 / 0.2, 8);
    // Only good counted so far: no events yet by the rule (total 0).
    expect(b.points.at(-3)!.budget_remaining).toBe(1);
  });
});

describe('SloArea.budgetHistory', () => {
  it('reads a latency SLO with a period (its samples are events), refuses one without, null when unknown', async () => {
    const clock = new ManualClock(new Date(NOW));
    const area = new SloArea({
      config: loadMonitorConfig({}, { env: {}, file: null }).slo,
      alertDispatcher: { sendAlert: async () => undefined, sendMetricAlert: async () => undefined },
      clock,
      store: new MemorySloStateStore(clock),
    });
    await area.start();
    const name = 'p99 ⏱ 延迟 تأخير';
    await area.registerSlo({
      name,
      metric: 'm',
      percentile: 0.9,
      thresholdMs: 100,
      period: { kind: 'rolling', seconds: 86_400 },
    });
    await area.registerSlo({ name: 'plain', metric: 'm', percentile: 0.9, thresholdMs: 100 });
    // 10 samples, 2 over the threshold: bad 2 of 10 with 10 % allowed: 1 - 2 / 1 = -1.
    await area.record('m', [1, 2, 3, 4, 5, 6, 7, 8, 500, 600]);
    const b = (await area.budgetHistory(name))!;
    expect(b.objective).toBe(0.9);
    expect(b.points).toHaveLength(24);
    expect(b.points.at(-1)!.budget_remaining).toBeCloseTo(-1, 8);
    expect(b.points.at(-2)!.budget_remaining).toBe(1);
    await expect(area.budgetHistory('plain')).rejects.toThrow('SLO "plain" has no error-budget period');
    expect(await area.budgetHistory('nobody')).toBeNull();
    await area.stop();
  });
});
