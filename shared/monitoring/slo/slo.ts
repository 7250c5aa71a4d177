/**
 * SLO and SLOViolation of spec/monitoring.md: a latency objective ("the p99 of `checkout.latency`
 * stays under 300 ms over 5 minutes") and one breach of it.
 */
import { InvalidSLOError } from '../errors';
import { AlertTier, resolveTier } from '../alerts/tiers';
import { type BurnRateRule, DEFAULT_MIN_EVENTS, defaultBurnRateRules, ruleName } from './ratio';
import { type SloPeriod, validatePeriod } from './period';

/** What `new SLO(...)` takes. `window` is seconds (the spec's time delta). */
export interface SLOOptions {
  name: string;
  metric: string;
  /** Fraction between 0.0 and 1.0 (0.99 is p99). */
  percentile: number;
  /** Largest acceptable measured value, milliseconds. */
  thresholdMs: number;
  /** Rolling measurement window, seconds. */
  windowSeconds: number;
  /** Alert when measured / threshold is at or above this (default 1.0: as soon as the threshold is exceeded). */
  burnRateThreshold?: number;
  description?: string;
  /** Alert routing tier (default P1_BUSINESS_HOURS). */
  tier?: AlertTier;
  /** Team or spec identifier. */
  owner?: string;
  runbookUrl?: string;
  /**
   * Error-budget period. Set: the SLO is also the ratio "`percentile` of samples at or under
   * `thresholdMs`" over it, alerted by `rules` (burn-rate rules, as ratio SLOs are) instead of the
   * single-window check.
   */
  period?: SloPeriod;
  /** With a period: burn-rate rules (default: the workbook's, scaled to the period). */
  rules?: readonly BurnRateRule[];
  /** With a period: events needed in a rule's long window before it fires (default 100). */
  minEvents?: number;
}

function positiveFinite(value: number): boolean {
  return typeof value === 'number' && Number.isFinite(value) && value > 0;
}

/** A latency SLO. Validated on construction; immutable. */
export class SLO {
  readonly name: string;
  readonly metric: string;
  readonly percentile: number;
  readonly thresholdMs: number;
  readonly windowSeconds: number;
  readonly burnRateThreshold: number;
  readonly description: string;
  readonly tier: AlertTier;
  readonly owner: string;
  readonly runbookUrl: string;
  /** The error-budget period, or undefined for the single-window check alone. */
  readonly period: SloPeriod | undefined;
  /** With a period: its rules, defaults applied and named; else empty. */
  readonly rules: readonly BurnRateRule[];
  /** With a period: its minimum events; else 0. */
  readonly minEvents: number;

  constructor(options: SLOOptions) {
    if (typeof options.name !== 'string' || options.name.trim() === '')
      throw new InvalidSLOError('SLO name must not be empty');
    const label = `SLO ${JSON.stringify(options.name)}`;
    if (typeof options.metric !== 'string' || options.metric.trim() === '')
      throw new InvalidSLOError(`${label}: metric must not be empty`);
    if (typeof options.percentile !== 'number' || !(options.percentile >= 0 && options.percentile <= 1))
      throw new InvalidSLOError(
        `${label}: percentile must be between 0.0 and 1.0, got ${options.percentile}`,
      );
    if (!positiveFinite(options.thresholdMs))
      throw new InvalidSLOError(`${label}: threshold_ms must be a number greater than 0`);
    if (!positiveFinite(options.windowSeconds))
      throw new InvalidSLOError(`${label}: window must be a duration greater than 0`);
    const burn = options.burnRateThreshold ?? 1.0;
    if (!positiveFinite(burn))
      throw new InvalidSLOError(`${label}: burn_rate_threshold must be greater than 0`);
    if (options.tier !== undefined && resolveTier(options.tier) !== options.tier)
      throw new InvalidSLOError(`${label}: unknown tier ${JSON.stringify(options.tier)}`);
    this.name = options.name;
    this.metric = options.metric;
    this.percentile = options.percentile;
    this.thresholdMs = options.thresholdMs;
    this.windowSeconds = options.windowSeconds;
    this.burnRateThreshold = burn;
    this.description = options.description ?? '';
    this.tier = options.tier ?? AlertTier.P1_BUSINESS_HOURS;
    this.owner = options.owner ?? '';
    this.runbookUrl = options.runbookUrl ?? '';
    if (options.period === undefined) {
      if (options.rules !== undefined || options.minEvents !== undefined)
        throw new InvalidSLOError(`${label}: rules and min_events need a period`);
      this.period = undefined;
      this.rules = Object.freeze([]);
      this.minEvents = 0;
    } else {
      validatePeriod(options.period, label);
      if (!(options.percentile < 1))
        throw new InvalidSLOError(`${label}: a latency SLO with a period needs a percentile below 1`);
      this.period = Object.freeze({ ...options.period });
      // Checked in full (windows, names, bounds) when SLOMonitor builds its ratio view.
      this.rules = Object.freeze(
        (options.rules ?? defaultBurnRateRules(options.period)).map((r) =>
          Object.freeze({ ...r, name: ruleName(r) }),
        ),
      );
      this.minEvents = options.minEvents ?? DEFAULT_MIN_EVENTS;
    }
    Object.freeze(this);
  }
}

/** `p99`, `p99.9`, `p50`: how a percentile is written in messages. */
export function percentileLabel(percentile: number): string {
  return `p${Number((percentile * 100).toFixed(4))}`;
}

/** One breach of an SLO, as found by one evaluation. */
export class SLOViolation {
  /** measuredValue / slo.thresholdMs. */
  readonly burnRate: number;
  readonly message: string;

  constructor(
    readonly slo: SLO,
    /** Milliseconds. */
    readonly measuredValue: number,
    /** UTC instant of the evaluation that found it. */
    readonly detectedAt: Date = new Date(),
    message = '',
  ) {
    this.burnRate = measuredValue / slo.thresholdMs;
    this.message =
      message !== ''
        ? message
        : `SLO ${slo.name} breached: ${percentileLabel(slo.percentile)} of ${slo.metric} is ` +
          `${round(measuredValue)} ms over the last ${slo.windowSeconds} s, threshold ${slo.thresholdMs} ms ` +
          `(burn rate ${round(this.burnRate)})`;
    Object.freeze(this);
  }
}

function round(n: number): number {
  return Math.round(n * 100) / 100;
}
