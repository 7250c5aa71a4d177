/**
 * The checks a sample passes before the ingested series store records it: the fixed rejection
 * reasons, metric and label names, and the numbers of each operation. Pure functions, no state:
 * the store (./metric-store.ts) decides which check runs when. Decisions are in ./README.md.
 */
import { cutText } from '../../../shared/text/cut';

/** The instrument types a sample can have. */
export type IngestMetricType = 'counter' | 'gauge' | 'histogram' | 'summary';

/** Every reason a sample or data point is rejected: the fixed values of the `reason` label. */
export const REJECTION_REASONS = [
  'unknown_type',
  'invalid_name',
  'invalid_value',
  'invalid_label_name',
  'reserved_label_name',
  'too_many_labels',
  'label_value_too_long',
  'description_too_long',
  'type_mismatch',
  'label_mismatch',
  'bucket_mismatch',
  'name_collision',
  'unsupported',
  'max_metric_names',
  'max_series_per_metric',
  'max_series',
  'max_ingest_bytes',
] as const;

/** Why a sample was not recorded (the `reason` label of the rejection counter). */
export type RejectionReason = (typeof REJECTION_REASONS)[number];

/** A refused sample: the fixed reason and a message for the caller (bounded length). */
export interface Rejection {
  reason: RejectionReason;
  message: string;
}

/**
 * What to do to a series. `add` (counter increment, delta sum), `set` (gauge, cumulative counter
 * total), `observe` (one value into a histogram or summary), and the pre-aggregated OTLP points:
 * `histogram` (per-bucket counts for `bounds`, sum and count) and `summary` (sum and count); for
 * those, `cumulative` replaces the state and otherwise it is added.
 */
export type SampleOp =
  | { kind: 'add' | 'set' | 'observe'; value: number }
  | {
      kind: 'histogram';
      bounds: readonly number[];
      counts: readonly number[];
      sum: number;
      count: number;
      cumulative: boolean;
    }
  | { kind: 'summary'; sum: number; count: number; cumulative: boolean };

/** Refusals an expired series or name may cause: tried again after expiry ran. */
export const RETRY_AFTER_SWEEP: ReadonlySet<RejectionReason> = new Set<RejectionReason>([
  'type_mismatch',
  'label_mismatch',
  'bucket_mismatch',
  'name_collision',
  'max_metric_names',
  'max_series_per_metric',
  'max_series',
  'max_ingest_bytes',
]);

/** Longest accepted metric or label name (names are kept in memory and rendered on every scrape). */
export const MAX_NAME_LENGTH = 200;
/** Most bucket bounds of one histogram (an OTLP point chooses its own). */
export const MAX_BUCKETS = 64;
/** Message length cap: rejection messages quote caller input. */
const MAX_QUOTED = 80;

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

export function reject(reason: RejectionReason, message: string): Rejection {
  return { reason, message };
}

/** Caller input as a JSON string for a message, cut to 80 characters on code points. */
export function quote(s: string): string {
  return JSON.stringify(s.length > MAX_QUOTED ? `${cutText(s, MAX_QUOTED)}...` : s);
}

/** `invalid_name` for a metric name outside `[a-zA-Z_:][a-zA-Z0-9_:]*` or too long, else undefined. */
export function checkMetricName(name: string): Rejection | undefined {
  if (name.length > MAX_NAME_LENGTH || !METRIC_NAME.test(name)) {
    return reject('invalid_name', `invalid metric name ${quote(name)}: expected [a-zA-Z_:][a-zA-Z0-9_:]*`);
  }
  return undefined;
}

export function checkLabelName(k: string, type: IngestMetricType): Rejection | undefined {
  if (k.length > MAX_NAME_LENGTH || !LABEL_NAME.test(k)) {
    return reject('invalid_label_name', `invalid label name ${quote(k)}: expected [a-zA-Z_][a-zA-Z0-9_]*`);
  }
  if (k.startsWith('__') || k === 'service') {
    return reject('reserved_label_name', `label name ${quote(k)} is reserved for the monitor`);
  }
  if ((k === 'le' && type === 'histogram') || (k === 'quantile' && type === 'summary')) {
    return reject('reserved_label_name', `label name ${quote(k)} is reserved for a ${type}`);
  }
  return undefined;
}

/** Why an operation's numbers are unusable for the type, or undefined. */
export function checkOp(type: IngestMetricType, op: SampleOp): string | undefined {
  switch (op.kind) {
    case 'add':
    case 'set':
    case 'observe':
      if (!Number.isFinite(op.value)) return 'the value must be a finite number';
      if (type === 'counter' && op.value < 0) return 'a counter takes non-negative values';
      return undefined;
    case 'histogram': {
      if (type !== 'histogram') return 'histogram data for a non-histogram';
      const { bounds, counts } = op;
      if (!bounds.every((b, i) => Number.isFinite(b) && (i === 0 || b > bounds[i - 1]!))) {
        return 'bucket bounds must be finite and increasing';
      }
      if (counts.length !== bounds.length + 1) return 'expected one bucket count per bound, plus one';
      if (!counts.every((c) => Number.isFinite(c) && c >= 0)) return 'bucket counts must be non-negative';
      if (!Number.isFinite(op.sum) || !Number.isFinite(op.count) || op.count < 0) {
        return 'sum and count must be finite, count non-negative';
      }
      return undefined;
    }
    case 'summary':
      if (type !== 'summary') return 'summary data for a non-summary';
      if (!Number.isFinite(op.sum) || !Number.isFinite(op.count) || op.count < 0) {
        return 'sum and count must be finite, count non-negative';
      }
      return undefined;
  }
}

export function sameBounds(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((v, i) => v === b[i]);
}
