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
  })
  .superRefine((slo, ctx) => {
    if (slo.objectives.length > slo.max_slos) {
      ctx.addIssue({
        code: 'custom',
        path: ['objectives'],
        message: `at most max_slos (${slo.max_slos}) objectives`,
      });
    }
  })
  .prefault({});

/** One SLO. */
export type SLO = z.infer<typeof SLOSchema>;
/** SLO section. */
export type SLOConfig = z.infer<typeof SLOConfigSchema>;
