/**
 * Issue 29 (the monitor page): an SLO's error-budget burn-down over its current period, from the
 * stored hour buckets of its events (`monitor_slo_events`, or the memory store's rings).
 *
 * Each point is the budget left cumulatively from the period's start to the point's time, by the
 * library's rule (RatioSLOStatus.errorBudgetRemaining): 1 - bad / (events x (1 - objective)), 1
 * before any event, 0 or less once spent. A point without new events carries the previous value; the
 * last point is the figure the page shows beside the SLO. Points:
 * - periods up to 4 days: one per hour;
 * - longer: hours grouped by ceil(span hours / 100) (30 d: 90 points of 8 h, 90 d: 99 of 22 h; a
 *   calendar month spans up to 31 days and gets groups of 8 h).
 * A rolling period's groups end at the current hour (the last point is "now"; the first group also
 * holds the hour its start falls in, as the library counts it whole). A calendar month's groups run
 * from the hour of the month's start in its zone, up to now.
 */
import { formatPeriod, periodStartMs, type SloPeriod } from '../../../shared/monitoring/slo/period';
import type { SloEventCount } from './store';

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;
/** Periods up to this many hours get one point per hour. */
export const HOURLY_UP_TO_HOURS = 96;
/** About the most points a burn-down has. */
export const MAX_BURN_DOWN_POINTS = 100;

/** One point: the budget left from the period's start to `at` (ISO 8601). */
export interface BudgetPoint {
  at: string;
  budget_remaining: number;
}

/** What `GET /status/slos/<name>/budget` answers. */
export interface BudgetBurnDown {
  slo: string;
  /** The SLO's objective (share of good events, 0.99). */
  objective: number;
  /** The chart's target line: the budget_remaining at which the budget is spent (0). */
  target: number;
  /** The period as the page writes it: `30d`, `calendar month (Europe/Berlin)`. */
  period: string;
  period_start: string;
  /** Rolling: now; calendar month: the next month's start (the ideal burn reaches 0 there). */
  period_end: string;
  /** Hours each point covers. */
  step_hours: number;
  points: BudgetPoint[];
}

/**
 * To 9 decimals: float noise must not make an exactly spent budget (1 - 0.99 is not exactly 0.01)
 * read as a sliver left, nor print as 8.9e-16.
 */
function roundBudget(value: number): number {
  return Math.round(value * 1e9) / 1e9 + 0;
}

/** Hours each point covers for a period. */
export function stepHours(period: SloPeriod): number {
  const spanHours = period.kind === 'rolling' ? Math.ceil(period.seconds / 3600) : 31 * 24;
  return spanHours <= HOURLY_UP_TO_HOURS ? 1 : Math.ceil(spanHours / MAX_BURN_DOWN_POINTS);
}

/** Where the points end, as hour indexes (exclusive ends), oldest first. */
function groupEnds(period: SloPeriod, firstHour: number, nowHour: number, step: number): number[] {
  const ends: number[] = [];
  if (period.kind === 'rolling') {
    const n = Math.max(1, Math.ceil(period.seconds / 3600 / step));
    for (let k = n - 1; k >= 0; k--) ends.push(Math.max(firstHour + 1, nowHour + 1 - k * step));
    return ends;
  }
  for (let end = firstHour + step; ; end += step) {
    ends.push(Math.min(end, nowHour + 1));
    if (end > nowHour) return ends;
  }
}

/** The burn-down of `buckets` (hour buckets, any order) over the period holding `nowMs`. */
export function budgetBurnDown(input: {
  slo: string;
  period: SloPeriod;
  objective: number;
  nowMs: number;
  buckets: readonly SloEventCount[];
}): BudgetBurnDown {
  const { period, objective, nowMs } = input;
  const startMs = periodStartMs(period, nowMs);
  // A month is 28 to 31 days: 32 days on is always in the next one.
  const endMs = period.kind === 'rolling' ? nowMs : periodStartMs(period, startMs + 32 * DAY_MS);
  const firstHour = Math.floor(startMs / HOUR_MS);
  const nowHour = Math.floor(nowMs / HOUR_MS);
  const step = stepHours(period);
  const buckets = input.buckets
    .filter((b) => {
      const h = Math.floor(b.atMs / HOUR_MS);
      return h >= firstHour && h <= nowHour;
    })
    .sort((a, b) => a.atMs - b.atMs);
  const allowed = 1 - objective;
  let good = 0;
  let total = 0;
  let i = 0;
  const points: BudgetPoint[] = [];
  for (const end of groupEnds(period, firstHour, nowHour, step)) {
    while (i < buckets.length && Math.floor(buckets[i]!.atMs / HOUR_MS) < end) {
      good += buckets[i]!.good;
      total += buckets[i]!.total;
      i++;
    }
    const bad = Math.max(0, total - good);
    points.push({
      at: new Date(Math.min(end * HOUR_MS, nowMs)).toISOString(),
      budget_remaining: total <= 0 ? 1 : roundBudget(1 - bad / (total * allowed)),
    });
  }
  return {
    slo: input.slo,
    objective,
    target: 0,
    period: formatPeriod(period),
    period_start: new Date(startMs).toISOString(),
    period_end: new Date(endMs).toISOString(),
    step_hours: step,
    points,
  };
}
