/**
 * Monitor metrics ingest benchmark (issue 14), against the monitor running as its own process
 * (`dist/services/monitor/main.js`), so the client and the service share the two cores as in use:
 *
 * 1. `RecordMetrics` over gRPC (grpc-js client), batches of 1,000 samples with 3 labels, 8 calls in
 *    flight, in samples per second. Baseline: the same batches, already encoded, decoded with
 *    protobuf-es and applied to prom-client counters in this one process (the limit without the
 *    network). Target >= 0.5.
 * 2. The scrape of the monitor's `/metrics` (HTTP GET, whole body read) after 10,000 series were
 *    ingested, in ms (median). Baseline: prom-client rendering the same 10,000 series in this
 *    process (`registry.metrics()`). Target <= 1.2 (lower is better; the monitor's own metrics
 *    are in its scrape too).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { create, fromBinary, toBinary } from '@bufbuild/protobuf';
import { Counter, Registry } from 'prom-client';
import {
  MetricType,
  MonitorService,
  RecordMetricsRequestSchema,
  type RecordMetricsRequest,
} from '../../shared/gen/svc/monitor/v1/monitor_pb';
import { grpcClient, unary } from '../support/grpc-clients';
import { startServiceProcess } from '../support/service-process';
import { compareThroughput, median, type BenchRow } from './measure';

const BATCH = 1000;
const IN_FLIGHT = 8;
const NAMES = 10;
/** Label sets per name: 10 routes x 4 methods x 25 codes = 1,000, so 10 names hold 10,000 series. */
const SERIES_PER_NAME = 1000;
const BATCHES_PER_ROUND = 200;
const SCRAPES = 15;

/** Batch `b`: 1,000 counter samples with 3 labels, cycling through all 10,000 series. */
function batch(b: number): RecordMetricsRequest {
  return create(RecordMetricsRequestSchema, {
    sourceService: 'bench',
    samples: Array.from({ length: BATCH }, (_, i) => {
      const n = (b * BATCH + i) % (NAMES * SERIES_PER_NAME);
      const series = n % SERIES_PER_NAME;
      return {
        name: `bench_requests_${Math.floor(n / SERIES_PER_NAME)}`,
        type: MetricType.COUNTER,
        value: 1,
        labels: {
          route: `/route/${series % 10}`,
          method: ['GET', 'POST', 'PUT', 'DELETE'][Math.floor(series / 10) % 4]!,
          code: String(200 + Math.floor(series / 40)),
        },
      };
    }),
  });
}

/** The baseline's store: one prom-client counter per name, labels plus `service`. */
function promClientSink(registry: Registry): (req: RecordMetricsRequest) => void {
  const counters = new Map<string, Counter>();
  return (req) => {
    for (const s of req.samples) {
      let counter = counters.get(s.name);
      if (!counter) {
        counter = new Counter({
          name: `${s.name}_total`,
          help: s.name,
          labelNames: [...Object.keys(s.labels), 'service'],
          registers: [registry],
        });
        counters.set(s.name, counter);
      }
      counter.inc({ ...s.labels, service: s.sourceService || req.sourceService }, s.value);
    }
  };
}

/** Runs the monitor ingest benchmark. */
export async function runMonitorIngestBench(): Promise<BenchRow[]> {
  const cwd = mkdtempSync(join(tmpdir(), 'monitor-ingest-bench-'));
  const service = await startServiceProcess(
    'monitor',
    {
      SVC_MONITOR__METRICS__MAX_SERIES_PER_METRIC: String(SERIES_PER_NAME),
    },
    { cwd },
  );
  const client = grpcClient(MonitorService, `127.0.0.1:${service.grpcPort}`);
  const batches = Array.from({ length: (NAMES * SERIES_PER_NAME) / BATCH }, (_, b) => batch(b));
  const encoded = batches.map((b) => toBinary(RecordMetricsRequestSchema, b));
  try {
    const viaGrpc = async (): Promise<number> => {
      let next = 0;
      const started = performance.now();
      await Promise.all(
        Array.from({ length: IN_FLIGHT }, async () => {
          while (next < BATCHES_PER_ROUND) {
            const req = batches[next++ % batches.length]!;
            const { response } = await unary<{ accepted: number }>(client, 'recordMetrics', req);
            if (response.accepted !== BATCH) throw new Error(`only ${response.accepted} samples accepted`);
          }
        }),
      );
      return (BATCHES_PER_ROUND * BATCH) / ((performance.now() - started) / 1000);
    };
    const baselineRegistry = new Registry();
    const apply = promClientSink(baselineRegistry);
    const inProcess = async (): Promise<number> => {
      const started = performance.now();
      for (let i = 0; i < BATCHES_PER_ROUND; i++)
        apply(fromBinary(RecordMetricsRequestSchema, encoded[i % encoded.length]!));
      return (BATCHES_PER_ROUND * BATCH) / ((performance.now() - started) / 1000);
    };
    const ingest = await compareThroughput(viaGrpc, inProcess, 3);

    // Both sides now hold the same 10,000 series (every batch went through both at least once).
    const url = `http://127.0.0.1:${service.httpPort}/metrics`;
    const scrapeMs: number[] = [];
    const renderMs: number[] = [];
    let body = '';
    for (let i = 0; i < SCRAPES + 2; i++) {
      let t = performance.now();
      body = await (await fetch(url)).text();
      const scrape = performance.now() - t;
      t = performance.now();
      await baselineRegistry.metrics();
      const render = performance.now() - t;
      // The first two of each are warm-up.
      if (i >= 2) {
        scrapeMs.push(scrape);
        renderMs.push(render);
      }
    }
    const seriesLines = body.split('\n').filter((l) => l.startsWith('bench_requests_')).length;
    if (seriesLines !== NAMES * SERIES_PER_NAME) throw new Error(`scrape has ${seriesLines} bench series`);
    const scrape = median(scrapeMs);
    const render = median(renderMs);
    return [
      {
        name: `monitor RecordMetrics over gRPC, batches of ${BATCH} samples x 3 labels, ${IN_FLIGHT} in flight (samples/s vs protobuf-es decode + prom-client in one process)`,
        value: Math.round(ingest.value),
        baseline: Math.round(ingest.baseline),
        ratio: Math.round(ingest.ratio * 100) / 100,
        target: '>= 0.5',
        unit: 'samples/s',
      },
      {
        name: `monitor /metrics scrape with ${NAMES * SERIES_PER_NAME} ingested series (ms, median of ${SCRAPES}; vs prom-client rendering the same series)`,
        value: Math.round(scrape * 100) / 100,
        baseline: Math.round(render * 100) / 100,
        ratio: Math.round((scrape / render) * 100) / 100,
        target: '<= 1.2',
        unit: 'ms',
      },
    ];
  } finally {
    client.close();
    await service.stop();
    rmSync(cwd, { recursive: true, force: true });
  }
}
