/**
 * `GET /status/slos/<name>/budget` (issue 29): the error-budget burn-down of an SLO over its period,
 * from events recorded through RecordSloSamples on a monitor whose SLO clock is fixed. A known history
 * (12 hours of events, 3 hours of only bad events in the middle): point counts per period kind, the
 * carried value before any event, the exact value at a known hour, monotone during the burn; auth,
 * unknown names, a latency SLO without a period.
 */
import { timestampFromMs } from '@bufbuild/protobuf/wkt';
import { silentLogger } from '../../../shared/logging/logger';
import { startMonitorApp, type RunningMonitorApp } from '../../support/monitor-app';
import { ManualClock } from '../../support/manual-clock';

const NOW = Date.parse('2026-11-29T12:30:00Z');
const HOUR = 3_600_000;
const TOKEN = 'page-token-0123456789abcdef';
const TWO_DAYS = 'checkout 🛒 结账 الدفع';
const THIRTY_DAYS = 'search 30d';
const MONTH = 'login month';
/** Hours seeded, the newest being the current hour; hours BURN of them hold only bad events. */
const K = 12;
const BURN = [4, 5, 6];
let svc: RunningMonitorApp;

interface Budget {
  slo: string;
  objective: number;
  target: number;
  period: string;
  period_start: string;
  period_end: string;
  step_hours: number;
  points: Array<{ at: string; budget_remaining: number }>;
}

/** Hour i of the seed (0 oldest): 100 good events, or 2 bad ones during the burn. */
function seedHour(i: number): { good: bigint; bad: bigint } {
  return BURN.includes(i) ? { good: 0n, bad: 2n } : { good: 100n, bad: 0n };
}

beforeAll(async () => {
  svc = await startMonitorApp(
    {
      web: { api_tokens: [TOKEN] },
      slo: {
        objectives: [{ name: 'latency only', metric: 'm', threshold_ms: 100 }],
        ratio_objectives: [
          { name: TWO_DAYS, target: 0.99, period: '2d' },
          { name: THIRTY_DAYS, target: 0.99, period: '30d' },
          { name: MONTH, target: 0.99, period: { calendar: 'month', time_zone: 'UTC' } },
        ],
      },
    },
    silentLogger(),
    { sloClock: new ManualClock(new Date(NOW)) },
  );
  const nowHour = Math.floor(NOW / HOUR) * HOUR;
  for (const slo of [TWO_DAYS, THIRTY_DAYS, MONTH])
    await svc.monitorConnect.recordSloSamples({
      slo,
      events: Array.from({ length: K }, (_, i) => ({
        ...seedHour(i),
        time: timestampFromMs(nowHour - (K - 1 - i) * HOUR + 60_000),
      })),
    });
}, 60_000);

afterAll(async () => {
  await svc?.close();
});

const url = (name: string) => `${svc.baseUrl}/status/slos/${encodeURIComponent(name)}/budget`;
const auth = { authorization: `Bearer ${TOKEN}` };
async function budget(name: string): Promise<Budget> {
  const res = await fetch(url(name), { headers: auth });
  expect(res.status).toBe(200);
  return (await res.json()) as Budget;
}
/** The budget left after seed hours 0..i (cumulative), by the library's rule. */
function expectedAfter(i: number): number {
  let good = 0;
  let total = 0;
  for (let h = 0; h <= i; h++) {
    const e = seedHour(h);
    good += Number(e.good);
    total += Number(e.good + e.bad);
  }
  return 1 - (total - good) / (total * 0.01);
}

describe('GET /status/slos/<name>/budget', () => {
  it('answers 401 without a token or with a wrong one, and never echoes the token', async () => {
    expect((await fetch(url(TWO_DAYS))).status).toBe(401);
    const wrong = await fetch(url(TWO_DAYS), { headers: { authorization: 'Bearer nope' } });
    expect(wrong.status).toBe(401);
    expect(JSON.stringify(await wrong.json())).not.toContain(TOKEN);
  });

  it('answers 404 for an unknown SLO, 400 failed_precondition for a latency SLO without a period', async () => {
    const unknown = await fetch(url('nobody 🙈 无人 لا أحد'), { headers: auth });
    expect(unknown.status).toBe(404);
    expect(((await unknown.json()) as { error: { code: string } }).error.code).toBe('not_found');
    const latency = await fetch(url('latency only'), { headers: auth });
    expect(latency.status).toBe(400);
    const body = (await latency.json()) as { error: { code: string; message: string } };
    expect(body.error).toEqual({
      code: 'failed_precondition',
      message: 'SLO "latency only" has no error-budget period',
    });
  });

  it('a 2-day period: 48 hourly points, 1 before any event, falling during the burn, exact at a known hour', async () => {
    const b = await budget(TWO_DAYS);
    expect(b).toMatchObject({ slo: TWO_DAYS, objective: 0.99, target: 0, period: '2d', step_hours: 1 });
    expect(b.period_start).toBe(new Date(NOW - 48 * HOUR).toISOString());
    expect(b.period_end).toBe(new Date(NOW).toISOString());
    expect(b.points).toHaveLength(48);
    // The last point is now; the others end on the hour.
    expect(b.points[47]!.at).toBe(new Date(NOW).toISOString());
    expect(b.points[46]!.at).toBe('2026-11-29T12:00:00.000Z');
    // Seed hour i is point 48 - K + i; before the first event, the untouched budget carried.
    const first = 48 - K;
    for (let k = 0; k < first; k++) expect(b.points[k]!.budget_remaining).toBe(1);
    const values = b.points.map((p) => p.budget_remaining);
    for (let i = 0; i < K; i++) expect(values[first + i]).toBeCloseTo(expectedAfter(i), 8);
    // Only bad events: the budget never rises, and it is spent by the end of the burn.
    const burn = BURN.map((i) => values[first + i]!);
    for (let j = 1; j < burn.length; j++) expect(burn[j]!).toBeLessThan(burn[j - 1]!);
    expect(values[first + 3]).toBe(1);
    expect(values[first + 6]).toBeCloseTo(1 - 6 / (406 * 0.01), 8);
    expect(values[first + 6]!).toBeLessThanOrEqual(0);
    // Good events after the burn raise the share of the budget left again.
    expect(values[47]).toBeCloseTo(1 - 6 / (906 * 0.01), 8);
  });

  it('a 30-day period: 90 points of 8 hours, the last one the same cumulative figure', async () => {
    const b = await budget(THIRTY_DAYS);
    expect(b.step_hours).toBe(8);
    expect(b.points).toHaveLength(90);
    expect(b.points.slice(0, 88).every((p) => p.budget_remaining === 1)).toBe(true);
    expect(b.points[89]!.budget_remaining).toBeCloseTo(1 - 6 / (906 * 0.01), 8);
    expect(b.points[89]!.at).toBe(new Date(NOW).toISOString());
    expect(b.points[88]!.at).toBe('2026-11-29T05:00:00.000Z');
  });

  it('a calendar month: points of 8 hours from the 1st up to now, the ideal burn ending on the next 1st', async () => {
    const b = await budget(MONTH);
    expect(b.period).toBe('calendar month (UTC)');
    expect(b.period_start).toBe('2026-11-01T00:00:00.000Z');
    expect(b.period_end).toBe('2026-12-01T00:00:00.000Z');
    // 28 days and 12 hours since the 1st: 85 full groups of 8 hours and the current one.
    expect(b.points).toHaveLength(86);
    expect(b.points[0]!.at).toBe('2026-11-01T08:00:00.000Z');
    expect(b.points[85]!.at).toBe(new Date(NOW).toISOString());
    expect(b.points[85]!.budget_remaining).toBeCloseTo(1 - 6 / (906 * 0.01), 8);
  });
});
