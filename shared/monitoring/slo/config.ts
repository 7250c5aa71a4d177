/**
 * The `slo` config section (the spec's "SLO evaluation configuration"): SLOMonitor's bounds and its
 * suppression window. SLO definitions themselves are registered in code or over the monitor's RPCs.
 */
import { z } from 'zod';

import { duration, positiveInt } from '../../config/fields';
import type { SLOMonitorOptions } from './monitor';

/**
 * The keys of the `slo` section, for a service whose section adds its own keys (the monitor adds its
 * objectives and evaluation interval): `z.strictObject({ ...sloConfigShape(), ... })`.
 */
export function sloConfigShape() {
  return {
    /** Latency samples kept per metric; beyond it the oldest are dropped. */
    max_samples_per_metric: positiveInt()
      .max(1_000_000, { error: 'expected at most 1,000,000' })
      .default(10_000),
    /** Seconds during which a second alert for the same SLO is not sent. */
    suppression_window_seconds: duration().default(300),
    /** Most SLOs registered at once (latency and ratio together). */
    max_slos: positiveInt().default(1000),
  };
}

/** The `slo` section. */
export function sloConfigSchema() {
  return z.strictObject(sloConfigShape()).prefault({});
}

/** The validated `slo` section. */
export type SLOConfig = z.infer<ReturnType<typeof sloConfigSchema>>;

/** The `slo` section with every default. */
export const DEFAULT_SLO_CONFIG: SLOConfig = sloConfigSchema().parse(undefined);

/** SLOMonitor options of an `slo` section. */
export function sloMonitorOptions(config: SLOConfig): SLOMonitorOptions {
  return {
    maxSamplesPerMetric: config.max_samples_per_metric,
    suppressionWindowSeconds: config.suppression_window_seconds,
    maxSlos: config.max_slos,
  };
}
