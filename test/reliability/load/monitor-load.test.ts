/**
 * Load (issue 16) on the monitor process: closed-loop RecordMetrics (batches of 50 samples over a
 * fixed set of 100 series) and ExportSpans (batches of 20 spans of new traces) over loopback. The
 * span store is set small (2,000 spans) so the warm-up fills it and the run shows it staying at its
 * bound (evicting), not growing. Figures: calls, errors (0), p50/p99 per call kind (reported only),
 * RSS after warm-up and at the end, both after full GCs (growth <= 10%), spans stored at the end
 * (<= the bound), and client connections back to 0 once the clients left.
 *
 * Short run in `npm test`: 10 s of load after 5 s of warm-up. `npm run soak`: RELIABILITY_SOAK_SECONDS
 * (default 600).
 */
import { randomBytes } from 'node:crypto';

import { MetricType, MonitorService } from '../../../shared/gen/svc/monitor/v1/monitor_pb';
import { until } from '../../support/email-service';
import { grpcClient, unary } from '../../support/grpc-clients';
import { descriptorCounts, inspectorUrl, memoryAfterGc, metricSum } from '../../support/process-probe';
import { startServiceProcess, type ServiceProcess } from '../../support/service-process';
import { atLeast, atMost, exactly, recordFigures, reported, SOAK } from '../results';
import { CallStats, loop } from './call-stats';

const LOAD_SECONDS = SOAK ? Number(process.env.RELIABILITY_SOAK_SECONDS ?? 600) : 10;
const WARMUP_SECONDS = SOAK ? 30 : 5;
// Bounds against hangs, never speed checks.
const CALL_DEADLINE_MS = 30_000;
const SETTLE_TIMEOUT_MS = 60_000;

const METRIC_SENDERS = 3;
const SPAN_SENDERS = 3;
const SAMPLES_PER_CALL = 50;
const SPANS_PER_CALL = 20;
// 5 metric names x 20 label values: a fixed set of series, so the registry reaches its size in the warm-up.
const SERIES_PER_NAME = 20;
const METRIC_NAMES = ['load_requests', 'load_queue', 'load_latency', 'load_errors', 'load_bytes'];
const MAX_SPANS = 2000;
/** See notification-load.test.ts: memory read after full GCs. */
const RSS_GROWTH_LIMIT = 0.1;

let service: ServiceProcess | undefined;
afterAll(async () => {
  await service?.stop('SIGTERM', 10_000);
});

/** One RecordMetrics batch. */
function metricsBatch(i: number): Record<string, unknown> {
  return {
    sourceService: 'load',
    samples: Array.from({ length: SAMPLES_PER_CALL }, (_, j) => {
      const n = (i * SAMPLES_PER_CALL + j) % (METRIC_NAMES.length * SERIES_PER_NAME);
      const name = METRIC_NAMES[n % METRIC_NAMES.length]!;
      const type = [MetricType.COUNTER, MetricType.GAUGE, MetricType.HISTOGRAM][n % 3]!;
      return {
        name: `${name}_${type}`,
        type,
        value: (j % 7) + 0.5,
        labels: { route: `/r${Math.floor(n / METRIC_NAMES.length)}` },
      };
    }),
  };
}

/** One ExportSpans batch: a new trace, a root and its children. */
function spansBatch(): Record<string, unknown> {
  const traceId = randomBytes(16).toString('hex');
  const rootId = randomBytes(8).toString('hex');
  const now = Date.now();
  const ts = (ms: number) => ({ seconds: BigInt(Math.floor(ms / 1000)), nanos: (ms % 1000) * 1_000_000 });
  return {
    spans: Array.from({ length: SPANS_PER_CALL }, (_, j) => ({
      traceId,
      spanId: j === 0 ? rootId : randomBytes(8).toString('hex'),
      parentSpanId: j === 0 ? '' : rootId,
      name: `load-op-${j}`,
      startTime: ts(now - 50),
      endTime: ts(now),
      serviceName: 'load',
    })),
  };
}

/** Runs the mix over a fresh client until `endAt`, then closes it. */
async function traffic(port: number, endAt: number, stats: CallStats): Promise<{ rejected: number }> {
  const client = grpcClient(MonitorService, `127.0.0.1:${port}`);
  const done = () => Date.now() >= endAt;
  const opts = { deadlineMs: CALL_DEADLINE_MS };
  let rejected = 0;
  try {
    await Promise.all([
      ...Array.from({ length: METRIC_SENDERS }, (_, s) =>
        loop(stats, 'RecordMetrics', done, async (i) => {
          const { response } = await unary<{ rejected: unknown[] }>(
            client,
            'recordMetrics',
            metricsBatch(i * METRIC_SENDERS + s),
            opts,
          );
          rejected += response.rejected.length;
        }),
      ),
      ...Array.from({ length: SPAN_SENDERS }, () =>
        loop(stats, 'ExportSpans', done, async () => {
          const { response } = await unary<{ rejected: number }>(client, 'exportSpans', spansBatch(), opts);
          rejected += response.rejected;
        }),
      ),
    ]);
  } finally {
    client.close();
  }
  return { rejected };
}

test(
  `${LOAD_SECONDS} s of RecordMetrics and ExportSpans: no errors, bounded memory and span store, connections back to 0`,
  async () => {
    service = await startServiceProcess('monitor', {
      SVC_MONITOR__TRACING__MAX_SPANS: String(MAX_SPANS),
      // Loopback only, for the full garbage collections before reading memory.
      NODE_OPTIONS: '--inspect=127.0.0.1:0',
    });
    const pid = service.child.pid!;
    const metricsUrl = `http://127.0.0.1:${service.httpPort}/metrics`;
    const inspector = inspectorUrl(service.logs);
    const inbound = () => descriptorCounts(pid, [service!.grpcPort, service!.httpPort], {}).inbound;

    const warmup = new CallStats();
    await traffic(service.grpcPort, Date.now() + WARMUP_SECONDS * 1000, warmup);
    const start = await memoryAfterGc(pid, inspector, metricsUrl);

    const stats = new CallStats();
    const { rejected } = await traffic(service.grpcPort, Date.now() + LOAD_SECONDS * 1000, stats);
    const end = await memoryAfterGc(pid, inspector, metricsUrl);
    const stored = await metricSum(metricsUrl, 'monitor_spans_stored');
    const evicted = await metricSum(metricsUrl, 'monitor_spans_evicted_total');
    let settled = true;
    await until(async () => inbound() === 0, 'client connections back to 0', SETTLE_TIMEOUT_MS).catch(
      () => (settled = false),
    );
    const connections = inbound();

    const growth = (end.rss - start.rss) / start.rss;
    const mib = (b: number) => Math.round((b / 1024 / 1024) * 10) / 10;
    recordFigures({
      section: 'load-monitor',
      title: `Load: RecordMetrics + ExportSpans, ${LOAD_SECONDS} s on one monitor process`,
      kind: 'load',
      figures: [
        reported('duration of load (s), warm-up before it (s)', `${LOAD_SECONDS}, ${WARMUP_SECONDS}`),
        reported(
          'clients',
          `${METRIC_SENDERS} RecordMetrics (${SAMPLES_PER_CALL} samples), ${SPAN_SENDERS} ExportSpans (${SPANS_PER_CALL} spans)`,
        ),
        atLeast('calls', stats.totalCalls, 1),
        exactly('errors', stats.totalErrors, 0),
        exactly('samples and spans rejected', rejected, 0),
        ...[...stats.kinds.keys()].flatMap((k) => [
          reported(`${k}: calls`, stats.kinds.get(k)!.calls),
          reported(`${k}: p50 / p99 (ms)`, `${stats.quantile(k, 0.5)} / ${stats.quantile(k, 0.99)}`),
        ]),
        reported(
          'RSS after a full GC, after warm-up / at the end (MiB)',
          `${mib(start.rss)} / ${mib(end.rss)}`,
        ),
        reported(
          'V8 heap in use after a full GC, after warm-up / at the end (MiB)',
          `${mib(start.heapUsed)} / ${mib(end.heapUsed)}`,
        ),
        atMost('RSS growth (%)', Math.round(growth * 1000) / 10, RSS_GROWTH_LIMIT * 100),
        atMost('spans stored at the end', stored, MAX_SPANS),
        atLeast('spans evicted (the store at its bound)', evicted, 1),
        exactly('client connections after the clients left', connections, 0),
      ],
    });

    for (const [kind, k] of stats.kinds) {
      expect({ kind, errors: k.errors, samples: k.errorSamples }).toEqual({ kind, errors: 0, samples: [] });
    }
    expect(stats.kinds.size).toBe(2);
    expect(rejected).toBe(0);
    expect(growth).toBeLessThanOrEqual(RSS_GROWTH_LIMIT);
    expect(stored).toBeLessThanOrEqual(MAX_SPANS);
    expect(evicted).toBeGreaterThan(0);
    expect(settled).toBe(true);
    expect(connections).toBe(0);
  },
  (WARMUP_SECONDS + LOAD_SECONDS) * 1000 + 4 * SETTLE_TIMEOUT_MS,
);
