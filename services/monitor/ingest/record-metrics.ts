/**
 * RecordMetrics without the wire: a batch of samples applied one by one to the ingested series
 * store, each accepted or rejected with its index and reason.
 */
import { InvalidArgumentError } from '../../../shared/errors';
import type { IngestMetricType, MetricIngestStore, RejectionReason } from './metric-store';

/** Most samples in one RecordMetrics request; a larger batch is refused whole. */
export const MAX_SAMPLES_PER_REQUEST = 10_000;

/** The `service` label of samples whose sender names no service at all. */
export const UNKNOWN_SERVICE = 'unknown';

/** One sample as RecordMetrics carries it; `type` undefined means the wire's type was not one we know. */
export interface IngestSample {
  name: string;
  type: IngestMetricType | undefined;
  value: number;
  labels: Readonly<Record<string, string>>;
  /** Empty: the batch's service. */
  sourceService: string;
  description: string;
}

/** What a batch did: how many samples were recorded, and which were not and why. */
export interface RecordOutcome {
  accepted: number;
  rejected: { index: number; reason: RejectionReason; message: string }[];
}

const OP_OF = { counter: 'add', gauge: 'set', histogram: 'observe', summary: 'observe' } as const;

/**
 * Records `samples` into `store`. Counters add the value, gauges set it, histograms and summaries
 * observe it. The `service` label is the sample's source service, else `batchService`, else
 * "unknown". More than {@link MAX_SAMPLES_PER_REQUEST} samples: InvalidArgumentError, nothing applied.
 */
export function recordSamples(
  store: MetricIngestStore,
  samples: readonly IngestSample[],
  batchService: string,
): RecordOutcome {
  if (samples.length > MAX_SAMPLES_PER_REQUEST) {
    throw new InvalidArgumentError(
      `at most ${MAX_SAMPLES_PER_REQUEST} samples per request (got ${samples.length}); nothing was recorded`,
      'samples',
    );
  }
  const outcome: RecordOutcome = { accepted: 0, rejected: [] };
  const fallback = batchService || UNKNOWN_SERVICE;
  for (let index = 0; index < samples.length; index++) {
    const s = samples[index]!;
    const rejection = store.apply(
      {
        name: s.name,
        type: s.type,
        labels: s.labels,
        service: s.sourceService || fallback,
        description: s.description,
      },
      { kind: OP_OF[s.type ?? 'counter'], value: s.value },
    );
    if (rejection) outcome.rejected.push({ index, ...rejection });
    else outcome.accepted++;
  }
  return outcome;
}
