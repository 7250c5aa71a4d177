/**
 * OTLP metrics into the ingested series store, the same store RecordMetrics writes: the OTLP
 * endpoints (gRPC MetricsService/Export, HTTP POST /v1/metrics) decode a request and call
 * {@link applyOtlpMetrics}. How each OTLP point type maps is in ../ingest/README.md.
 */
import type { ExportMetricsServiceRequest } from '../../../shared/gen/opentelemetry/proto/collector/metrics/v1/metrics_service_pb';
import type { AnyValue, KeyValue } from '../../../shared/gen/opentelemetry/proto/common/v1/common_pb';
import {
  AggregationTemporality,
  DataPointFlags,
  type Metric,
  type NumberDataPoint,
} from '../../../shared/gen/opentelemetry/proto/metrics/v1/metrics_pb';
import { sanitizeLabelName, sanitizeMetricName } from '../../../shared/monitoring/metric-names';
import type { IngestMetricType, MetricIngestStore, Rejection, SampleOp } from '../ingest/metric-store';
import { UNKNOWN_SERVICE } from '../ingest/record-metrics';
import { cutText } from '../../../shared/text/cut';

export type { MetricIngestStore } from '../ingest/metric-store';

/** Distinct rejection messages quoted in `errorMessage` (the rest are only counted). */
const MAX_MESSAGES = 5;

/** What an export did: data points not recorded and why (OTLP's partial success). */
export interface OtlpMetricsOutcome {
  rejectedDataPoints: number;
  /** Empty when everything was recorded; else up to a few reasons, `; `-joined. */
  errorMessage: string;
}

/**
 * Applies every data point of `request` to `store`; never throws for bad content, each bad point is
 * counted in `rejectedDataPoints` (and on `/metrics`) with the first reasons in `errorMessage`. The
 * `service` label is the resource's `service.name` attribute, else "unknown".
 */
export function applyOtlpMetrics(
  store: MetricIngestStore,
  request: ExportMetricsServiceRequest,
): OtlpMetricsOutcome {
  const messages: string[] = [];
  let rejectedDataPoints = 0;
  const note = (rejection: Rejection | undefined, points = 1): void => {
    if (!rejection) return;
    rejectedDataPoints += points;
    if (messages.length < MAX_MESSAGES && !messages.includes(rejection.message))
      messages.push(rejection.message);
  };
  for (const rm of request.resourceMetrics) {
    const serviceAttr = rm.resource?.attributes.find((a) => a.key === 'service.name');
    const service = (serviceAttr && stringOf(serviceAttr.value)) || UNKNOWN_SERVICE;
    // Scope metrics, and the older instrumentation-library metrics of pre-0.17 senders.
    const groups = [...rm.scopeMetrics, ...rm.instrumentationLibraryMetrics];
    for (const group of groups) {
      for (const metric of group.metrics) applyMetric(store, metric, service, note);
    }
  }
  return { rejectedDataPoints, errorMessage: messages.join('; ') };
}

function applyMetric(
  store: MetricIngestStore,
  metric: Metric,
  service: string,
  note: (r: Rejection | undefined, points?: number) => void,
): void {
  // OTLP names are dotted (`http.server.duration`); Prometheus names take `_` instead.
  const name = sanitizeMetricName(metric.name);
  const description = metric.description;
  const one = (type: IngestMetricType, attributes: KeyValue[], flags: number, op: SampleOp): void => {
    // A point with no recorded value marks a stream as gone; there is nothing to set.
    if ((flags & DataPointFlags.FLAG_NO_RECORDED_VALUE) !== 0) return;
    note(store.apply({ name, type, labels: labelsOf(attributes), service, description }, op));
  };
  const data = metric.data;
  switch (data.case) {
    case 'gauge':
      for (const p of data.value.dataPoints)
        one('gauge', p.attributes, p.flags, { kind: 'set', value: numberOf(p) });
      return;
    case 'sum': {
      const cumulative = data.value.aggregationTemporality === AggregationTemporality.CUMULATIVE;
      // Monotonic: a counter (a cumulative point IS the total); otherwise a gauge.
      const type = data.value.isMonotonic ? 'counter' : 'gauge';
      for (const p of data.value.dataPoints) {
        one(type, p.attributes, p.flags, { kind: cumulative ? 'set' : 'add', value: numberOf(p) });
      }
      return;
    }
    case 'histogram': {
      const cumulative = data.value.aggregationTemporality === AggregationTemporality.CUMULATIVE;
      for (const p of data.value.dataPoints) {
        one('histogram', p.attributes, p.flags, {
          kind: 'histogram',
          bounds: p.explicitBounds,
          counts: p.bucketCounts.map(Number),
          sum: p.sum ?? 0,
          count: Number(p.count),
          cumulative,
        });
      }
      return;
    }
    case 'summary':
      // OTLP summaries are cumulative by definition; their quantiles are not kept (see README).
      for (const p of data.value.dataPoints) {
        one('summary', p.attributes, p.flags, {
          kind: 'summary',
          sum: p.sum,
          count: Number(p.count),
          cumulative: true,
        });
      }
      return;
    case 'exponentialHistogram': {
      const points = data.value.dataPoints.length;
      for (let i = 0; i < points; i++) store.countRejection('unsupported');
      note(
        {
          reason: 'unsupported',
          message: `metric ${JSON.stringify(cutText(name, 80))}: exponential histograms are not supported`,
        },
        points,
      );
      return;
    }
    default:
      // A metric without data has no points to reject.
      return;
  }
}

function numberOf(p: NumberDataPoint): number {
  switch (p.value.case) {
    case 'asDouble':
      return p.value.value;
    case 'asInt':
      return Number(p.value.value);
    default:
      return NaN;
  }
}

/**
 * Attributes as labels: keys sanitized (`http.method` -> `http_method`), values as strings; the
 * store then applies the label rules (reserved names, lengths, count).
 */
function labelsOf(attributes: KeyValue[]): Record<string, string> {
  const labels: Record<string, string> = {};
  for (const a of attributes) labels[sanitizeLabelName(a.key)] = stringOf(a.value);
  return labels;
}

function stringOf(v: AnyValue | undefined): string {
  const value = v?.value;
  switch (value?.case) {
    case 'stringValue':
      return value.value;
    case 'boolValue':
    case 'intValue':
    case 'doubleValue':
      return String(value.value);
    case 'arrayValue':
      return JSON.stringify(value.value.values.map(stringOf));
    case 'kvlistValue':
      return JSON.stringify(Object.fromEntries(value.value.values.map((kv) => [kv.key, stringOf(kv.value)])));
    case 'bytesValue':
      return Buffer.from(value.value).toString('base64');
    default:
      return '';
  }
}
