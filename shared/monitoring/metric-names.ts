/**
 * Metric and label naming: the spec's dotted names (`http.requests`) become valid Prometheus names.
 */
import type { MetricsConfig } from './config';

const INVALID_NAME_CHARS = /[^a-zA-Z0-9_:]/g;
const INVALID_LABEL_CHARS = /[^a-zA-Z0-9_]/g;

/** Replaces characters Prometheus does not allow in a metric name with `_`. */
export function sanitizeMetricName(name: string): string {
  const clean = name.replace(INVALID_NAME_CHARS, '_');
  return /^[0-9]/.test(clean) ? `_${clean}` : clean;
}

/** Replaces characters Prometheus does not allow in a label name with `_`. */
export function sanitizeLabelName(name: string): string {
  const clean = name.replace(INVALID_LABEL_CHARS, '_');
  return /^[0-9]/.test(clean) ? `_${clean}` : clean;
}

/** `MetricsConfig.make_metric_name`: the name with the configured prefix, joined by `_`. */
export function makeMetricName(config: Pick<MetricsConfig, 'prefix'> | undefined, name: string): string {
  const prefix = config?.prefix ?? '';
  if (!prefix) return name;
  return prefix.endsWith('_') || prefix.endsWith('.') ? `${prefix}${name}` : `${prefix}_${name}`;
}

/** The exported Prometheus name of a counter: sanitized and ending in `_total`. */
export function counterExportName(name: string): string {
  const clean = sanitizeMetricName(name);
  return clean.endsWith('_total') ? clean : `${clean}_total`;
}
