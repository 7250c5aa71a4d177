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
import {
  DEFAULT_SLO_PERIOD,
  formatWindow,
  periodNominalSeconds,
  periodSpanSeconds,
  periodStartMs,
  type SloPeriod,
  validatePeriod,
} from './period';

/** `page` wakes someone (P0_PAGE); `ticket` waits for business hours (P1_BUSINESS_HOURS). */
export type BurnRateSeverity = 'page' | 'ticket';

/** One row of the multi-window table: alert when both windows burn at `burnRate` or more. */
export interface BurnRateRule {
  severity: BurnRateSeverity;
  burnRate: number;
  longWindowSeconds: number;
  /** The confirming window: the burn is still going on, so the alert stops soon after it ends. */
  shortWindowSeconds: number;
  /**
   * Stable name: the rule's alert is keyed by it (`slo:<slo>:<rule>`). Absent: `ruleName` derives
   * `<severity>-<long>-<short>`, e.g. `page-1h-5m`.
   */
  name?: string;
}

/** A rule's name: its own, else `<severity>-<long window>-<short window>` (`page-1h-5m`). */
export function ruleName(rule: BurnRateRule): string {
  return (
    rule.name ??
    `${rule.severity}-${formatWindow(rule.longWindowSeconds)}-${formatWindow(rule.shortWindowSeconds)}`
  );
}

/** Most rules one SLO may have. */
export const MAX_RULES_PER_SLO = 10;
/** Rule names: what a dedup key and a label value can carry unchanged. */
export const RULE_NAME_PATTERN = /^[a-z0-9][a-z0-9._-]{0,63}$/;

const HOUR = 3600;
/** The SRE workbook's table for a 30-day objective. */
export const DEFAULT_BURN_RATE_RULES: readonly BurnRateRule[] = Object.freeze([
  { severity: 'page', burnRate: 14.4, longWindowSeconds: HOUR, shortWindowSeconds: 5 * 60 },
  { severity: 'page', burnRate: 6, longWindowSeconds: 6 * HOUR, shortWindowSeconds: 30 * 60 },
  { severity: 'ticket', burnRate: 1, longWindowSeconds: 3 * 24 * HOUR, shortWindowSeconds: 6 * HOUR },
]);

const THIRTY_DAYS = 30 * 24 * HOUR;

/**
 * The workbook's table for `period`: both windows scaled by the period's nominal length over 30 days
 * (rounded to whole minutes, a short window of at least a minute), burn rates unchanged, as Pyrra
 * scales them. A 30-day period gives exactly DEFAULT_BURN_RATE_RULES; a 28-day one pages on 56 min
 * and 4 min 40 s -> 5 min windows. Names follow the scaled windows.
 */
export function defaultBurnRateRules(period: SloPeriod = DEFAULT_SLO_PERIOD): BurnRateRule[] {
  const scale = periodNominalSeconds(period) / THIRTY_DAYS;
  const minutes = (s: number) => Math.max(60, Math.round((s * scale) / 60) * 60);
  return DEFAULT_BURN_RATE_RULES.map((r) => ({
    severity: r.severity,
    burnRate: r.burnRate,
    longWindowSeconds: minutes(r.longWindowSeconds),
    shortWindowSeconds: minutes(r.shortWindowSeconds),
  }));
}

/**
 * Sloth's `AlertWindows` form: spending `errorBudgetPercent` of the period's budget within
 * `longWindowSeconds` is a burn rate of percent / 100 x period / long window (2% of 30 days in 1 h
 * is 14.4).
 */
export function burnRateFromBudgetPercent(
  errorBudgetPercent: number,
  longWindowSeconds: number,
  period: SloPeriod = DEFAULT_SLO_PERIOD,
): number {
  return ((errorBudgetPercent / 100) * periodNominalSeconds(period)) / longWindowSeconds;
}

/** Default of `minEvents`: below this many events in a rule's long window the rule does not fire. */
export const DEFAULT_MIN_EVENTS = 100;
/** Longest ratio SLO window (90 days): bounds the hourly buckets at 2,160. */
export const MAX_RATIO_WINDOW_SECONDS = 90 * 24 * HOUR;

/** What `new RatioSLO(...)` takes. */
export interface RatioSLOOptions {
  name: string;
  /** Target fraction of good events, strictly between 0 and 1 (0.999 is 99.9%). */
  objective: number;
  /** Budget window, seconds: the rolling shorthand of `period` (giving both throws). */
  windowSeconds?: number;
  /** Budget period (default rolling 30 days). */
  period?: SloPeriod;
  /** `latency` for the ratio view of a latency SLO with a period; default `ratio`. */
  kind?: 'ratio' | 'latency';
  /** Events needed in a long window before its rule may fire (default 100). */
  minEvents?: number;
  /** Default: defaultBurnRateRules(period). */
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
  /** Rolling: the period's length; calendar month: the span of events kept (31 days and an hour). */
  readonly windowSeconds: number;
  readonly period: SloPeriod;
  readonly kind: 'ratio' | 'latency';
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
    if (options.windowSeconds !== undefined && options.period !== undefined)
      throw new InvalidSLOError(`${label}: give a period or a window, not both`);
    const period: SloPeriod =
      options.period ??
      (options.windowSeconds !== undefined
        ? { kind: 'rolling', seconds: options.windowSeconds }
        : DEFAULT_SLO_PERIOD);
    if (period.kind === 'rolling') {
      const w = period.seconds;
      if (!(Number.isFinite(w) && w >= HOUR && w <= MAX_RATIO_WINDOW_SECONDS))
        throw new InvalidSLOError(`${label}: window must be between 1 hour and 90 days`);
    }
    validatePeriod(period, label);
    const nominal = periodNominalSeconds(period);
    const minEvents = options.minEvents ?? DEFAULT_MIN_EVENTS;
    if (!(Number.isInteger(minEvents) && minEvents >= 0))
      throw new InvalidSLOError(`${label}: min_events must be an integer of 0 or more`);
    const rules = options.rules ?? defaultBurnRateRules(period);
    if (rules.length > MAX_RULES_PER_SLO)
      throw new InvalidSLOError(`${label}: at most ${MAX_RULES_PER_SLO} rules`);
    const names = new Set<string>();
    for (const r of rules) {
      if (r.severity !== 'page' && r.severity !== 'ticket')
        throw new InvalidSLOError(`${label}: rule severity must be page or ticket`);
      const name = ruleName(r);
      if (r.name !== undefined && !RULE_NAME_PATTERN.test(r.name))
        throw new InvalidSLOError(
          `${label}: rule name ${JSON.stringify(r.name)} must be 1-64 of a-z, 0-9, ".", "_", "-"`,
        );
      if (names.has(name)) throw new InvalidSLOError(`${label}: two rules are named ${name}`);
      names.add(name);
      if (!(r.burnRate > 0 && Number.isFinite(r.burnRate)))
        throw new InvalidSLOError(`${label}: burn rate must be greater than 0`);
      if (!(
        r.shortWindowSeconds >= 60 &&
        r.shortWindowSeconds < r.longWindowSeconds &&
        r.longWindowSeconds <= nominal
      ))
        throw new InvalidSLOError(
          `${label}: rule windows must satisfy 60 s <= short < long <= the SLO period`,
        );
    }
    if (options.pageTier !== undefined && resolveTier(options.pageTier) !== options.pageTier)
      throw new InvalidSLOError(`${label}: unknown tier ${JSON.stringify(options.pageTier)}`);
    this.name = options.name;
    this.objective = options.objective;
    this.period = Object.freeze({ ...period });
    this.kind = options.kind ?? 'ratio';
    this.windowSeconds = periodSpanSeconds(period);
    this.minEvents = minEvents;
    this.rules = Object.freeze(rules.map((r) => Object.freeze({ ...r, name: ruleName(r) })));
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
  /** The newest bucket id added (-Infinity before any). */
  private newestId = -Infinity;

  constructor(
    private readonly widthMs: number,
    readonly size: number,
  ) {
    this.ids = new Float64Array(size).fill(-1);
    this.good = new Float64Array(size);
    this.total = new Float64Array(size);
  }

  /** Adds to the bucket of `atMs`; false (nothing added) when its slot already holds a newer bucket. */
  add(atMs: number, good: number, total: number): boolean {
    const id = Math.floor(atMs / this.widthMs);
    // Older than the ring's span behind the newest bucket seen: nowhere to keep it (and no slot to
    // look at: a late event outside the span costs one comparison).
    if (id <= this.newestId - this.size) return false;
    if (id > this.newestId) this.newestId = id;
    const slot = id % this.size;
    // A late event older than the ring's span must not wipe the newer bucket in its slot.
    if (this.ids[slot]! > id) return false;
    if (this.ids[slot] !== id) {
      this.ids[slot] = id;
      this.good[slot] = 0;
      this.total[slot] = 0;
    }
    this.good[slot]! += good;
    this.total[slot]! += total;
    return true;
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
    this.newestId = -Infinity;
  }
}

const MINUTE_MS = 60_000;
const HOUR_MS = 3_600_000;
const FINE_SPAN_SECONDS = 6 * HOUR;

/**
 * Window sums an evaluation reads. EventCounts implements it in memory; a caller whose events live in
 * a database passes the sums it queried (services/monitor/slo).
 */
export interface SloWindowCounts {
  /** Events of the last `windowSeconds` before `nowMs`. */
  window(nowMs: number, windowSeconds: number): { good: number; total: number };
  /** Events from `startMs` to `nowMs` (the period so far). */
  since(startMs: number, nowMs: number): { good: number; total: number };
}

/** The windows (seconds) an evaluation of `slo` reads: every rule's two, deduplicated, ascending. */
export function ratioWindows(slo: RatioSLO): number[] {
  const set = new Set<number>();
  for (const r of slo.rules) set.add(r.longWindowSeconds).add(r.shortWindowSeconds);
  return [...set].sort((a, b) => a - b);
}

/** Good and total event counts of one ratio SLO, in bounded memory. */
export class EventCounts implements SloWindowCounts {
  // Slack of 6 minutes / 1 hour: an event stamped up to 5 minutes ahead (MAX_EVENT_FUTURE_MS) takes
  // a slot of its own instead of evicting a bucket still inside the longest window.
  private readonly fine = new BucketRing(MINUTE_MS, FINE_SPAN_SECONDS / 60 + 6);
  private readonly coarse: BucketRing;

  constructor(windowSeconds: number) {
    this.coarse = new BucketRing(HOUR_MS, Math.ceil(windowSeconds / HOUR) + 2);
  }

  /**
   * Adds events that happened at `atMs`. Events older than the minute ring's 6 hours count in the
   * hour buckets only; older than the hour ring's span, nowhere (false).
   */
  add(atMs: number, good: number, total: number): boolean {
    this.fine.add(atMs, good, total);
    return this.coarse.add(atMs, good, total);
  }

  /** Events of the last `windowSeconds` before `nowMs`. */
  window(nowMs: number, windowSeconds: number): { good: number; total: number } {
    return windowSeconds <= FINE_SPAN_SECONDS
      ? this.fine.sum(nowMs, Math.ceil(windowSeconds / 60))
      : this.coarse.sum(nowMs, Math.ceil(windowSeconds / HOUR));
  }

  /** Events from `startMs` (to the hour: the hour holding it counts whole) to `nowMs`. */
  since(startMs: number, nowMs: number): { good: number; total: number } {
    const hours = Math.floor(nowMs / HOUR_MS) - Math.floor(startMs / HOUR_MS) + 1;
    return hours <= 0 ? { good: 0, total: 0 } : this.coarse.sum(nowMs, hours);
  }

  clear(): void {
    this.fine.clear();
    this.coarse.clear();
  }
}

/** One rule's figures at one evaluation. */
export interface BurnRateEvaluation {
  rule: BurnRateRule;
  /** ruleName(rule). */
  name: string;
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
  /** Start of the period evaluated (rolling: now minus the period). */
  periodStartMs: number;
  /** Events and bad events over the period so far. */
  events: number;
  badEvents: number;
  /** Bad events the period allows so far: events x (1 - objective). */
  errorBudgetEvents: number;
  /**
   * Fraction of the window's error budget left: 1 - bad / (events x (1 - objective)); 1 without
   * events; negative once the budget is overspent.
   */
  errorBudgetRemaining: number;
  rules: BurnRateEvaluation[];
  /** The firing rules (a subset of `rules`). */
  firing: BurnRateEvaluation[];
}

/** Bad events of a sum; never negative (counters of good and total may arrive apart). */
function badOf(counts: { good: number; total: number }): number {
  return Math.max(0, counts.total - counts.good);
}

function burnRate(counts: { good: number; total: number }, budget: number): number {
  return counts.total <= 0 ? 0 : badOf(counts) / counts.total / budget;
}

/** `value >= limit`, forgiving float noise: 1 - 0.999 is not exactly 0.001, and a burn of exactly 14.4 should fire. */
function atLeast(value: number, limit: number): boolean {
  return value >= limit * (1 - 1e-9);
}

/** Evaluates a ratio SLO's rules and budget from its counts at `nowMs`. */
export function evaluateRatioSLO(slo: RatioSLO, counts: SloWindowCounts, nowMs: number): RatioSLOStatus {
  const start = periodStartMs(slo.period, nowMs);
  const whole =
    slo.period.kind === 'rolling' ? counts.window(nowMs, slo.period.seconds) : counts.since(start, nowMs);
  const bad = badOf(whole);
  const rules = slo.rules.map((rule): BurnRateEvaluation => {
    const long = counts.window(nowMs, rule.longWindowSeconds);
    const short = counts.window(nowMs, rule.shortWindowSeconds);
    const longBurnRate = burnRate(long, slo.errorBudget);
    const shortBurnRate = burnRate(short, slo.errorBudget);
    return {
      rule,
      name: ruleName(rule),
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
    periodStartMs: start,
    events: whole.total,
    badEvents: bad,
    errorBudgetEvents: whole.total * slo.errorBudget,
    errorBudgetRemaining: whole.total === 0 ? 1 : 1 - bad / (whole.total * slo.errorBudget),
    rules,
    firing: rules.filter((r) => r.firing),
  };
}

/** Width of the buckets a window of `seconds` is summed from: minutes up to 6 hours, hours beyond. */
export function bucketWidthSeconds(seconds: number): 60 | 3600 {
  return seconds <= FINE_SPAN_SECONDS ? 60 : 3600;
}

/**
 * One sum an evaluation needs, as bucket starts (epoch ms, both inclusive) of one width: what a store
 * that keeps EventCounts' buckets in a database sums to answer `window` and `since` exactly as
 * EventCounts does. `key` is `w:<seconds>` for a window, `period` for a calendar period so far.
 */
export interface BucketRange {
  key: string;
  widthSeconds: 60 | 3600;
  fromMs: number;
  toMs: number;
}

/** The bucket ranges an evaluation of `slo` at `nowMs` reads: each rule window, and the period. */
export function bucketRanges(slo: RatioSLO, nowMs: number): BucketRange[] {
  const out: BucketRange[] = [];
  const windows = ratioWindows(slo);
  if (slo.period.kind === 'rolling' && !windows.includes(slo.period.seconds))
    windows.push(slo.period.seconds);
  for (const seconds of windows) {
    const width = bucketWidthSeconds(seconds);
    const widthMs = width * 1000;
    const newest = Math.floor(nowMs / widthMs);
    out.push({
      key: `w:${seconds}`,
      widthSeconds: width,
      fromMs: (newest - Math.ceil(seconds / width) + 1) * widthMs,
      toMs: newest * widthMs,
    });
  }
  if (slo.period.kind !== 'rolling') {
    const start = periodStartMs(slo.period, nowMs);
    out.push({
      key: 'period',
      widthSeconds: 3600,
      fromMs: Math.floor(start / HOUR_MS) * HOUR_MS,
      toMs: Math.floor(nowMs / HOUR_MS) * HOUR_MS,
    });
  }
  return out;
}

/** Window sums a store computed over `bucketRanges` (keyed as they are): an evaluation's input. */
export class SummedWindowCounts implements SloWindowCounts {
  constructor(private readonly sums: ReadonlyMap<string, { good: number; total: number }>) {}

  window(_nowMs: number, windowSeconds: number): { good: number; total: number } {
    return this.sums.get(`w:${windowSeconds}`) ?? { good: 0, total: 0 };
  }

  since(): { good: number; total: number } {
    return this.sums.get('period') ?? { good: 0, total: 0 };
  }
}
