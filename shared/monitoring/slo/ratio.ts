/**
 * Ratio SLOs (beyond the spec): "99.9% of requests succeed over 30 days", evaluated with the
 * multi-window, multi-burn-rate alerts of the Google SRE workbook. Events are counted in fixed
 * buckets, so memory per SLO is constant however many events arrive:
 *
 * - 360 one-minute buckets (the last 6 hours) answer windows up to 6 hours, to the minute;
 * - one-hour buckets covering the SLO window answer longer windows, to the hour (the current hour
 *   counts whole, so a 3-day window may include up to one hour more).
 */
import { InvalidSLOError } from '../errors';
import { AlertTier, resolveTier } from '../alerts/tiers';

/** `page` wakes someone (P0_PAGE); `ticket` waits for business hours (P1_BUSINESS_HOURS). */
export type BurnRateSeverity = 'page' | 'ticket';

/** One row of the multi-window table: alert when both windows burn at `burnRate` or more. */
export interface BurnRateRule {
  severity: BurnRateSeverity;
  burnRate: number;
  longWindowSeconds: number;
  /** The confirming window: the burn is still going on, so the alert stops soon after it ends. */
  shortWindowSeconds: number;
}

const HOUR = 3600;
/** The SRE workbook's table for a 30-day objective. */
export const DEFAULT_BURN_RATE_RULES: readonly BurnRateRule[] = Object.freeze([
  { severity: 'page', burnRate: 14.4, longWindowSeconds: HOUR, shortWindowSeconds: 5 * 60 },
  { severity: 'page', burnRate: 6, longWindowSeconds: 6 * HOUR, shortWindowSeconds: 30 * 60 },
  { severity: 'ticket', burnRate: 1, longWindowSeconds: 3 * 24 * HOUR, shortWindowSeconds: 6 * HOUR },
]);

/** Default of `minEvents`: below this many events in a rule's long window the rule does not fire. */
export const DEFAULT_MIN_EVENTS = 100;
/** Longest ratio SLO window (90 days): bounds the hourly buckets at 2,160. */
export const MAX_RATIO_WINDOW_SECONDS = 90 * 24 * HOUR;

/** What `new RatioSLO(...)` takes. */
export interface RatioSLOOptions {
  name: string;
  /** Target fraction of good events, strictly between 0 and 1 (0.999 is 99.9%). */
  objective: number;
  /** Budget window, seconds (default 30 days, at most 90 days). */
  windowSeconds?: number;
  /** Events needed in a long window before its rule may fire (default 100). */
  minEvents?: number;
  rules?: readonly BurnRateRule[];
  description?: string;
  /** Tier of `page` alerts (default P0_PAGE); `ticket` alerts are P1_BUSINESS_HOURS. */
  pageTier?: AlertTier;
  owner?: string;
  runbookUrl?: string;
}

/** A ratio SLO definition, validated; immutable. */
export class RatioSLO {
  readonly name: string;
  readonly objective: number;
  readonly windowSeconds: number;
  readonly minEvents: number;
  readonly rules: readonly BurnRateRule[];
  readonly description: string;
  readonly pageTier: AlertTier;
  readonly owner: string;
  readonly runbookUrl: string;

  constructor(options: RatioSLOOptions) {
    if (typeof options.name !== 'string' || options.name.trim() === '')
      throw new InvalidSLOError('SLO name must not be empty');
    const label = `SLO ${JSON.stringify(options.name)}`;
    if (typeof options.objective !== 'number' || !(options.objective > 0 && options.objective < 1))
      throw new InvalidSLOError(
        `${label}: objective must be between 0 and 1 exclusive, got ${options.objective}`,
      );
    const window = options.windowSeconds ?? 30 * 24 * HOUR;
    if (!(Number.isFinite(window) && window >= HOUR && window <= MAX_RATIO_WINDOW_SECONDS))
      throw new InvalidSLOError(`${label}: window must be between 1 hour and 90 days`);
    const minEvents = options.minEvents ?? DEFAULT_MIN_EVENTS;
    if (!(Number.isInteger(minEvents) && minEvents >= 0))
      throw new InvalidSLOError(`${label}: min_events must be an integer of 0 or more`);
    const rules = options.rules ?? DEFAULT_BURN_RATE_RULES;
    for (const r of rules) {
      if (!(r.burnRate > 0 && Number.isFinite(r.burnRate)))
        throw new InvalidSLOError(`${label}: burn rate must be greater than 0`);
      if (!(
        r.shortWindowSeconds >= 60 &&
        r.shortWindowSeconds < r.longWindowSeconds &&
        r.longWindowSeconds <= window
      ))
        throw new InvalidSLOError(
          `${label}: rule windows must satisfy 60 s <= short < long <= the SLO window`,
        );
    }
    if (options.pageTier !== undefined && resolveTier(options.pageTier) !== options.pageTier)
      throw new InvalidSLOError(`${label}: unknown tier ${JSON.stringify(options.pageTier)}`);
    this.name = options.name;
    this.objective = options.objective;
    this.windowSeconds = window;
    this.minEvents = minEvents;
    this.rules = Object.freeze(rules.map((r) => Object.freeze({ ...r })));
    this.description = options.description ?? '';
    this.pageTier = options.pageTier ?? AlertTier.P0_PAGE;
    this.owner = options.owner ?? '';
    this.runbookUrl = options.runbookUrl ?? '';
    Object.freeze(this);
  }

  /** Allowed fraction of bad events (1 - objective). */
  get errorBudget(): number {
    return 1 - this.objective;
  }
}

/** A ring of fixed-width buckets of good and total counts. */
class BucketRing {
  private readonly ids: Float64Array;
  private readonly good: Float64Array;
  private readonly total: Float64Array;

  constructor(
    private readonly widthMs: number,
    readonly size: number,
  ) {
    this.ids = new Float64Array(size).fill(-1);
    this.good = new Float64Array(size);
    this.total = new Float64Array(size);
  }

  add(atMs: number, good: number, total: number): void {
    const id = Math.floor(atMs / this.widthMs);
    const slot = id % this.size;
    if (this.ids[slot] !== id) {
      this.ids[slot] = id;
      this.good[slot] = 0;
      this.total[slot] = 0;
    }
    this.good[slot]! += good;
    this.total[slot]! += total;
  }

  /** Sums the buckets of the last `buckets` widths up to `nowMs` (the current bucket included). */
  sum(nowMs: number, buckets: number): { good: number; total: number } {
    const newest = Math.floor(nowMs / this.widthMs);
    const oldest = newest - Math.min(buckets, this.size) + 1;
    let good = 0;
    let total = 0;
    for (let i = 0; i < this.size; i++) {
      const id = this.ids[i]!;
      if (id >= oldest && id <= newest) {
        good += this.good[i]!;
        total += this.total[i]!;
      }
    }
    return { good, total };
  }

  clear(): void {
    this.ids.fill(-1);
  }
}

const MINUTE_MS = 60_000;
const HOUR_MS = 3_600_000;
const FINE_SPAN_SECONDS = 6 * HOUR;

/** Good and total event counts of one ratio SLO, in bounded memory. */
export class EventCounts {
  private readonly fine = new BucketRing(MINUTE_MS, FINE_SPAN_SECONDS / 60);
  private readonly coarse: BucketRing;

  constructor(windowSeconds: number) {
    this.coarse = new BucketRing(HOUR_MS, Math.ceil(windowSeconds / HOUR) + 1);
  }

  add(atMs: number, good: number, total: number): void {
    this.fine.add(atMs, good, total);
    this.coarse.add(atMs, good, total);
  }

  /** Events of the last `windowSeconds` before `nowMs`. */
  window(nowMs: number, windowSeconds: number): { good: number; total: number } {
    return windowSeconds <= FINE_SPAN_SECONDS
      ? this.fine.sum(nowMs, Math.ceil(windowSeconds / 60))
      : this.coarse.sum(nowMs, Math.ceil(windowSeconds / HOUR));
  }

  clear(): void {
    this.fine.clear();
    this.coarse.clear();
  }
}

/** One rule's figures at one evaluation. */
export interface BurnRateEvaluation {
  rule: BurnRateRule;
  /** Bad-event fraction over the long window divided by the error budget (0 without events). */
  longBurnRate: number;
  shortBurnRate: number;
  longWindowEvents: number;
  /** Both windows at or above the rule's burn rate, with at least `minEvents` events in the long window. */
  firing: boolean;
}

/** A ratio SLO's state at one evaluation. */
export interface RatioSLOStatus {
  slo: RatioSLO;
  /** Events and bad events over the SLO window. */
  events: number;
  badEvents: number;
  /**
   * Fraction of the window's error budget left: 1 - bad / (events x (1 - objective)); 1 without
   * events; negative once the budget is overspent.
   */
  errorBudgetRemaining: number;
  rules: BurnRateEvaluation[];
  /** The firing rules (a subset of `rules`). */
  firing: BurnRateEvaluation[];
}

function burnRate(counts: { good: number; total: number }, budget: number): number {
  return counts.total === 0 ? 0 : (counts.total - counts.good) / counts.total / budget;
}

/** `value >= limit`, forgiving float noise: 1 - 0.999 is not exactly 0.001, and a burn of exactly 14.4 should fire. */
function atLeast(value: number, limit: number): boolean {
  return value >= limit * (1 - 1e-9);
}

/** Evaluates a ratio SLO's rules and budget from its counts at `nowMs`. */
export function evaluateRatioSLO(slo: RatioSLO, counts: EventCounts, nowMs: number): RatioSLOStatus {
  const whole = counts.window(nowMs, slo.windowSeconds);
  const bad = whole.total - whole.good;
  const rules = slo.rules.map((rule): BurnRateEvaluation => {
    const long = counts.window(nowMs, rule.longWindowSeconds);
    const short = counts.window(nowMs, rule.shortWindowSeconds);
    const longBurnRate = burnRate(long, slo.errorBudget);
    const shortBurnRate = burnRate(short, slo.errorBudget);
    return {
      rule,
      longBurnRate,
      shortBurnRate,
      longWindowEvents: long.total,
      firing:
        long.total >= slo.minEvents &&
        atLeast(longBurnRate, rule.burnRate) &&
        atLeast(shortBurnRate, rule.burnRate),
    };
  });
  return {
    slo,
    events: whole.total,
    badEvents: bad,
    errorBudgetRemaining: whole.total === 0 ? 1 : 1 - bad / (whole.total * slo.errorBudget),
    rules,
    firing: rules.filter((r) => r.firing),
  };
}
