/**
 * The `slo` section of the monitor: its one home, beside the slo area that reads it; the service's
 * root config (../config.ts) composes it.
 */
import { z } from 'zod';

import {
  duration,
  fraction,
  httpUrl,
  nonEmptyString,
  positiveInt,
  positiveNumber,
  uniqueNames,
} from '../../../shared/config';
import { ALERT_TIERS } from '../../../shared/monitoring/alerts/tiers';
import { sloConfigShape } from '../../../shared/monitoring/slo/config';

/** One service-level objective (`SLO`). */
export const SLOSchema = z.strictObject({
  name: nonEmptyString(),
  /** Name of the metric whose samples are evaluated. */
  metric: nonEmptyString(),
  percentile: fraction().default(0.99),
  threshold_ms: positiveNumber(),
  /** Rolling window: seconds, or "5m", "1h". Normalised to seconds. */
  window: duration().default(300),
  /** Alert when measured / threshold is at or above this. */
  burn_rate_threshold: positiveNumber().default(1.0),
  description: z.string().default(''),
  /** Alert routing tier, one of the monitoring library's tiers (checked here so a typo stops the start). */
  tier: z.enum(ALERT_TIERS).default('P1_BUSINESS_HOURS'),
  owner: z.string().default(''),
  runbook_url: httpUrl().optional(),
});

/** A burn-rate rule of a ratio objective (Sloth's AlertWindows: `burn_rate`, or `error_budget_percent`). */
export const RatioRuleSchema = z.strictObject({
  severity: z.enum(['page', 'ticket']),
  long_window: duration(),
  short_window: duration(),
  /** Burn rate both windows must reach; or give `error_budget_percent`. */
  burn_rate: positiveNumber().optional(),
  /** Share of the period's error budget (percent) spent within the long window. */
  error_budget_percent: positiveNumber().max(100).optional(),
  /** Stable name (default `<severity>-<long>-<short>`, e.g. `page-1h-5m`). */
  name: nonEmptyString().optional(),
});

/** A counter of ingested series: its name (with or without `_total`) and the label values it must have. */
const CounterSelectorSchema = z.strictObject({
  metric: nonEmptyString(),
  labels: z.record(z.string(), z.string()).default(() => ({})),
});

/** A ratio objective (issue 31): at least `target` of the events are good over `period`. */
export const RatioObjectiveSchema = z.strictObject({
  name: nonEmptyString(),
  /** Share of good events, strictly between 0 and 1 (0.999 is 99.9%). */
  target: z
    .number({ error: 'expected a number between 0 and 1 exclusive' })
    .gt(0, { error: 'expected a number between 0 and 1 exclusive' })
    .lt(1, { error: 'expected a number between 0 and 1 exclusive' }),
  /** A rolling period ("30d", "28d", seconds), or `{ calendar: month, time_zone }`. */
  period: z
    .union([
      duration(),
      z.strictObject({ calendar: z.literal('month'), time_zone: nonEmptyString().default('UTC') }),
    ])
    .default(30 * 86_400),
  /** Empty: the SRE workbook's table, windows scaled to the period. */
  rules: z
    .array(RatioRuleSchema)
    .max(10, { error: 'expected at most 10 rules' })
    .default(() => []),
  /** Events needed in a rule's long window before it fires. */
  min_events: z.number().int().min(0).max(1_000_000_000).default(100),
  /** Count the events from ingested counters instead of RecordSloSamples events. */
  metric_source: z.strictObject({ good: CounterSelectorSchema, total: CounterSelectorSchema }).optional(),
  description: z.string().default(''),
  /** Tier of the `page` rules' alerts (`ticket` rules are P1_BUSINESS_HOURS). */
  tier: z.enum(ALERT_TIERS).default('P0_PAGE'),
  owner: z.string().default(''),
  runbook_url: httpUrl().optional(),
});

/**
 * The `slo` section: the monitoring library's keys (one home: `max_samples_per_metric`,
 * `suppression_window_seconds`, `max_slos`) plus the monitor's own, the evaluation interval and the
 * objectives registered at start (at most `max_slos`).
 */
export const SLOConfigSchema = z
  .strictObject({
    ...sloConfigShape(),
    evaluation_interval_seconds: positiveInt().default(60),
    objectives: z
      .array(SLOSchema)
      .default(() => [])
      .superRefine(uniqueNames('SLO')),
    /** Ratio SLOs registered at start (one name space with `objectives`). */
    ratio_objectives: z
      .array(RatioObjectiveSchema)
      .default(() => [])
      .superRefine(uniqueNames('SLO')),
  })
  .superRefine((slo, ctx) => {
    const latency = new Set(slo.objectives.map((o) => o.name));
    slo.ratio_objectives.forEach((o, i) => {
      if (latency.has(o.name))
        ctx.addIssue({
          code: 'custom',
          path: ['ratio_objectives', i, 'name'],
          message: `duplicate SLO name "${o.name}" (already used by objectives)`,
        });
    });
    if (slo.objectives.length + slo.ratio_objectives.length > slo.max_slos) {
      ctx.addIssue({
        code: 'custom',
        path: ['objectives'],
        message: `at most max_slos (${slo.max_slos}) objectives`,
      });
    }
  })
  .prefault({});

/** One ratio objective. */
export type RatioObjective = z.infer<typeof RatioObjectiveSchema>;
/** One SLO. */
export type SLO = z.infer<typeof SLOSchema>;
/** SLO section. */
export type SLOConfig = z.infer<typeof SLOConfigSchema>;
