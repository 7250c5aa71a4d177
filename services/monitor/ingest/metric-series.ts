/**
 * What the ingested series store holds: a family per exported name, a series per label block, and
 * how an operation changes a series. Validation is ./metric-validation.ts, rendering
 * ./metric-render.ts, expiry ./metric-expiry.ts; ./metric-store.ts puts them together.
 */
import type { IngestMetricType, SampleOp } from './metric-validation';

export interface Series {
  /** `k="v",...,service="s"`: rendered once, also the series' key. */
  labelText: string;
  value: number;
  sum: number;
  count: number;
  /** Per-bucket (not cumulative) counts; the last is the +Inf bucket. */
  buckets: Float64Array | undefined;
  updatedAt: number;
  /** What the series' lines take on a scrape (see `renderedBytes`), counted in the store's total. */
  bytes: number;
}

export interface Family {
  /** Exported name (a counter's ends in `_total`). */
  name: string;
  type: IngestMetricType;
  /** `# HELP ... \n# TYPE ...\n`, rendered once. */
  header: string;
  labelKeys: string[];
  keySet: Set<string>;
  bounds: number[] | undefined;
  /** `le="..."` of each bucket, +Inf last. */
  leText: string[] | undefined;
  /** Every sample name the family renders (reserved while it exists). */
  sampleNames: string[];
  series: Map<string, Series>;
}

/** The sample names a family of `type` exported as `exportName` renders. */
export function sampleNamesOf(exportName: string, type: IngestMetricType): string[] {
  return type === 'histogram'
    ? [exportName, `${exportName}_bucket`, `${exportName}_sum`, `${exportName}_count`]
    : type === 'summary'
      ? [exportName, `${exportName}_sum`, `${exportName}_count`]
      : [exportName];
}

export function applyOp(family: Family, s: Series, op: SampleOp): void {
  switch (op.kind) {
    case 'add':
      s.value += op.value;
      return;
    case 'set':
      s.value = op.value;
      return;
    case 'observe':
      s.sum += op.value;
      s.count++;
      if (s.buckets) {
        const bounds = family.bounds!;
        let i = 0;
        while (i < bounds.length && op.value > bounds[i]!) i++;
        s.buckets[i]!++;
      }
      return;
    case 'histogram': {
      const b = s.buckets!;
      if (op.cumulative) b.fill(0);
      for (let i = 0; i < b.length; i++) b[i] = b[i]! + op.counts[i]!;
      s.sum = op.cumulative ? op.sum : s.sum + op.sum;
      s.count = op.cumulative ? op.count : s.count + op.count;
      return;
    }
    case 'summary':
      s.sum = op.cumulative ? op.sum : s.sum + op.sum;
      s.count = op.cumulative ? op.count : s.count + op.count;
      return;
  }
}
