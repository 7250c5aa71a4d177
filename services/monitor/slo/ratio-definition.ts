/**
 * Ratio SLOs as callers define them (RegisterRatioSlo, `slo.ratio_objectives`) and as stores keep
 * them: plain JSON, checked here for what remote input needs on top of the library's rules (string
 * bounds, a runbook URL, the wire's shortest period of a day, label bounds), then built into the
 * library's RatioSLO, which checks the rest and fills in the default rules.
 */
import { InvalidArgumentError } from '../../../shared/errors';
import { InvalidSLOError } from '../../../shared/monitoring/errors';
import type { AlertTier } from '../../../shared/monitoring/alerts/tiers';
import {
  type BurnRateRule,
  burnRateFromBudgetPercent,
  MAX_RULES_PER_SLO,
  RatioSLO,
  RULE_NAME_PATTERN,
} from '../../../shared/monitoring/slo/ratio';
import { DEFAULT_SLO_PERIOD, type SloPeriod } from '../../../shared/monitoring/slo/period';
import { checkSloString, checkSloTexts } from './slo-area';
import { longerThan } from '../../../shared/text/check';

/** Shortest rolling period on the wire: a day (the library takes an hour for its own tests). */
export const MIN_WIRE_PERIOD_SECONDS = 86_400;
/** Most labels one counter selector may require, and their sizes. */
export const SELECTOR_LIMITS = Object.freeze({ labels: 16, labelName: 128, labelValue: 1024 });
/** Largest `min_events`. */
export const MAX_MIN_EVENTS = 1_000_000_000;

/** One burn-rate rule as defined: `burnRate`, or Sloth's `errorBudgetPercent` of the period. */
export interface RatioRuleDefinition {
  severity: string;
  longWindowSeconds: number;
  shortWindowSeconds: number;
  burnRate?: number;
  errorBudgetPercent?: number;
  name?: string;
}

/** A counter of the monitor's ingested series: its name and the label values it must have. */
export interface CounterSelectorDefinition {
  metric: string;
  labels: Record<string, string>;
}

/** A ratio SLO as defined (a store keeps it with defaults applied: see ratioDefinitionOf). */
export interface RatioSloDefinition {
  name: string;
  /** Fraction of good events, strictly between 0 and 1. */
  target: number;
  /** Default rolling 30 days. */
  period?: SloPeriod;
  metricSource?: { good: CounterSelectorDefinition; total: CounterSelectorDefinition };
  /** Empty or absent: the workbook's table scaled to the period. */
  rules?: RatioRuleDefinition[];
  minEvents?: number;
  description?: string;
  tier?: string;
  owner?: string;
  runbookUrl?: string;
}

function checkSelector(sel: CounterSelectorDefinition | undefined, field: string): void {
  if (!sel) throw new InvalidArgumentError(`${field} is required with a metric_source`, field);
  checkSloString('metric', `${field}.metric`, sel.metric, true);
  const entries = Object.entries(sel.labels ?? {});
  if (entries.length > SELECTOR_LIMITS.labels)
    throw new InvalidArgumentError(
      `${field}.labels: at most ${SELECTOR_LIMITS.labels} labels`,
      `${field}.labels`,
    );
  for (const [k, v] of entries) {
    if (k === '' || k.length > SELECTOR_LIMITS.labelName || !/^[a-zA-Z_][a-zA-Z0-9_]*$/.test(k))
      throw new InvalidArgumentError(
        `${field}.labels: ${JSON.stringify(k.slice(0, 64))} is not a label name`,
        `${field}.labels`,
      );
    if (longerThan(v, SELECTOR_LIMITS.labelValue))
      throw new InvalidArgumentError(
        `${field}.labels.${k}: at most ${SELECTOR_LIMITS.labelValue} characters`,
        `${field}.labels`,
      );
  }
}

/** One rule as defined, checked (field names `rules[i]...`), its burn rate from Sloth's form if needed. */
export function buildRatioRule(r: RatioRuleDefinition, i: number, period: SloPeriod): BurnRateRule {
  const field = `rules[${i}]`;
  if (r.severity !== 'page' && r.severity !== 'ticket')
    throw new InvalidArgumentError(`${field}.severity must be "page" or "ticket"`, `${field}.severity`);
  if (!(Number.isFinite(r.longWindowSeconds) && r.longWindowSeconds > 0))
    throw new InvalidArgumentError(`${field}.long_window is required`, `${field}.long_window`);
  if (!(Number.isFinite(r.shortWindowSeconds) && r.shortWindowSeconds > 0))
    throw new InvalidArgumentError(`${field}.short_window is required`, `${field}.short_window`);
  if (r.name !== undefined && r.name !== '' && !RULE_NAME_PATTERN.test(r.name))
    throw new InvalidArgumentError(
      `${field}.name must be 1-64 of a-z, 0-9, ".", "_", "-" starting with a letter or digit`,
      `${field}.name`,
    );
  let burnRate = r.burnRate ?? 0;
  if (burnRate === 0) {
    const pct = r.errorBudgetPercent ?? 0;
    if (!(Number.isFinite(pct) && pct > 0 && pct <= 100))
      throw new InvalidArgumentError(
        `${field}: give burn_rate (> 0) or error_budget_percent (more than 0, at most 100)`,
        `${field}.burn_rate`,
      );
    burnRate = burnRateFromBudgetPercent(pct, r.longWindowSeconds, period);
  }
  if (!(Number.isFinite(burnRate) && burnRate > 0))
    throw new InvalidArgumentError(`${field}.burn_rate must be greater than 0`, `${field}.burn_rate`);
  return {
    severity: r.severity,
    burnRate,
    longWindowSeconds: r.longWindowSeconds,
    shortWindowSeconds: r.shortWindowSeconds,
    ...(r.name ? { name: r.name } : {}),
  };
}

/** The wire's bound on top of the library's: a rolling period of a day at least. */
export function checkWirePeriod(period: SloPeriod): void {
  if (period.kind === 'rolling' && !(period.seconds >= MIN_WIRE_PERIOD_SECONDS))
    throw new InvalidArgumentError('period.rolling must be between 1 day and 90 days', 'period');
}

/**
 * Checks a definition and builds the library's RatioSLO: InvalidArgumentError naming the field for
 * what the wire bounds, InvalidSLOError (also INVALID_ARGUMENT) for the library's rules.
 */
export function buildRatioSlo(def: RatioSloDefinition): RatioSLO {
  checkSloTexts(def);
  if (!(typeof def.target === 'number' && def.target > 0 && def.target < 1))
    throw new InvalidArgumentError(`target must be between 0 and 1 exclusive, got ${def.target}`, 'target');
  const period = def.period ?? DEFAULT_SLO_PERIOD;
  checkWirePeriod(period);
  if (def.metricSource) {
    checkSelector(def.metricSource.good, 'metric_source.good');
    checkSelector(def.metricSource.total, 'metric_source.total');
  }
  if (
    def.minEvents !== undefined &&
    !(Number.isInteger(def.minEvents) && def.minEvents >= 0 && def.minEvents <= MAX_MIN_EVENTS)
  )
    throw new InvalidArgumentError(`min_events must be an integer from 0 to ${MAX_MIN_EVENTS}`, 'min_events');
  const rules = def.rules ?? [];
  if (rules.length > MAX_RULES_PER_SLO)
    throw new InvalidArgumentError(`at most ${MAX_RULES_PER_SLO} rules`, 'rules');
  try {
    return new RatioSLO({
      name: def.name,
      objective: def.target,
      period,
      rules: rules.length > 0 ? rules.map((r, i) => buildRatioRule(r, i, period)) : undefined,
      minEvents: def.minEvents,
      description: def.description,
      pageTier: def.tier === undefined || def.tier === '' ? undefined : (def.tier as AlertTier),
      owner: def.owner,
      runbookUrl: def.runbookUrl === '' ? undefined : def.runbookUrl,
    });
  } catch (err) {
    if (err instanceof InvalidSLOError) throw new InvalidArgumentError(err.message, 'slo');
    throw err;
  }
}

/** The definition of a built SLO with every default applied (rules included): what stores keep. */
export function ratioDefinitionOf(
  slo: RatioSLO,
  metricSource?: RatioSloDefinition['metricSource'],
): RatioSloDefinition {
  return {
    name: slo.name,
    target: slo.objective,
    period: { ...slo.period },
    ...(metricSource ? { metricSource } : {}),
    rules: slo.rules.map((r) => ({
      severity: r.severity,
      longWindowSeconds: r.longWindowSeconds,
      shortWindowSeconds: r.shortWindowSeconds,
      burnRate: r.burnRate,
      name: r.name!,
    })),
    minEvents: slo.minEvents,
    description: slo.description,
    tier: slo.pageTier,
    owner: slo.owner,
    ...(slo.runbookUrl ? { runbookUrl: slo.runbookUrl } : {}),
  };
}

/** Two definitions (defaults applied) define the same SLO: a repeated registration is then no change. */
export function sameRatioDefinition(a: RatioSloDefinition, b: RatioSloDefinition): boolean {
  return canonical(a) === canonical(b);
}

function canonical(value: unknown): string {
  return JSON.stringify(value, (_k, v: unknown) =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(
          Object.entries(v as Record<string, unknown>).sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0)),
        )
      : v,
  );
}
