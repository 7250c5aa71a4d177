/**
 * Monitoring library benchmark: the library against raw prom-client on the same data, measured in the
 * same run, interleaved (ABBA order per round) and summarised by the median of several rounds.
 *
 * 1. Rendering `/metrics` with 10,000 series: the library's render path (content negotiation and
 *    prom-client text) against `registry.metrics()`. ratio = library ms / raw ms (target <= 1.2).
 * 2. Recording: library `Counter.increment` / `Histogram.observe` against prom-client `inc` /
 *    `observe`. ratio = library ops/s / raw ops/s (target >= 0.7).
 */
import * as prom from 'prom-client';
import { MetricsCollector } from '../../shared/monitoring/collector';
import { MetricsMiddleware } from '../../shared/monitoring/http/metrics-middleware';
import type { BenchRow } from './measure';

const ROUNDS = 7;

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

async function timeAsync(fn: () => Promise<unknown>): Promise<number> {
  const t0 = performance.now();
  await fn();
  return performance.now() - t0;
}

function opsPerSecond(n: number, fn: (n: number) => void): number {
  const t0 = performance.now();
  fn(n);
  const ms = performance.now() - t0;
  return (n / ms) * 1000;
}

/** Runs `a` and `b` interleaved for ROUNDS rounds (ABBA), returning each one's samples. */
async function interleave(a: () => Promise<number>, b: () => Promise<number>): Promise<[number[], number[]]> {
  const as: number[] = [];
  const bs: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    if (round % 2 === 0) {
      as.push(await a());
      bs.push(await b());
    } else {
      bs.push(await b());
      as.push(await a());
    }
  }
  return [as, bs];
}

async function renderBench(): Promise<BenchRow> {
  const registry = new prom.Registry();
  const collector = new MetricsCollector({ registry, config: { prefix: 'bench' } });
  const requests = collector.createCounter('requests', 'Requests handled', undefined, {
    labelNames: ['route'],
  });
  const inflight = collector.createGauge('inflight', 'Requests in flight', undefined, {
    labelNames: ['route'],
  });
  for (let i = 0; i < 5000; i++) {
    requests.increment(i + 1, { route: `/r/${i}` });
    inflight.set(i % 17, { route: `/r/${i}` });
  }
  const middleware = new MetricsMiddleware({ registry });
  // Warm both paths.
  await registry.metrics();
  await middleware.render(undefined);
  const [lib, raw] = await interleave(
    () => timeAsync(() => middleware.render('text/plain;version=0.0.4;q=0.3,*/*;q=0.1')),
    () => timeAsync(() => registry.metrics()),
  );
  const value = median(lib);
  const baseline = median(raw);
  return {
    name: 'render /metrics, 10,000 series (ms)',
    value,
    baseline,
    ratio: value / baseline,
    target: '<= 1.2',
  };
}

async function recordBench(kind: 'counter' | 'histogram', labelled: boolean): Promise<BenchRow> {
  const n = kind === 'counter' ? 2_000_000 : 1_000_000;
  const registry = new prom.Registry();
  const collector = new MetricsCollector({ registry });
  const labels = labelled ? { route: '/inbox' } : undefined;
  const labelNames = labelled ? ['route'] : [];
  let lib: (n: number) => void;
  let raw: (n: number) => void;
  if (kind === 'counter') {
    const c = collector.createCounter('lib_ops', 'library counter', undefined, { labelNames });
    const r = new prom.Counter({
      name: 'raw_ops_total',
      help: 'raw counter',
      labelNames,
      registers: [registry],
    });
    lib = labels
      ? (k) => {
          for (let i = 0; i < k; i++) c.increment((i & 3) + 1, labels);
        }
      : (k) => {
          for (let i = 0; i < k; i++) c.increment((i & 3) + 1);
        };
    raw = labels
      ? (k) => {
          for (let i = 0; i < k; i++) r.inc(labels, (i & 3) + 1);
        }
      : (k) => {
          for (let i = 0; i < k; i++) r.inc((i & 3) + 1);
        };
  } else {
    const h = collector.createHistogram('lib_latency', 'library histogram', undefined, undefined, {
      labelNames,
    });
    const r = new prom.Histogram({
      name: 'raw_latency',
      help: 'raw histogram',
      labelNames,
      registers: [registry],
    });
    lib = labels
      ? (k) => {
          for (let i = 0; i < k; i++) h.observe((i % 1000) / 1000, labels);
        }
      : (k) => {
          for (let i = 0; i < k; i++) h.observe((i % 1000) / 1000);
        };
    raw = labels
      ? (k) => {
          for (let i = 0; i < k; i++) r.observe(labels, (i % 1000) / 1000);
        }
      : (k) => {
          for (let i = 0; i < k; i++) r.observe((i % 1000) / 1000);
        };
  }
  lib(n / 10);
  raw(n / 10);
  const [libOps, rawOps] = await interleave(
    async () => opsPerSecond(n, lib),
    async () => opsPerSecond(n, raw),
  );
  const value = median(libOps);
  const baseline = median(rawOps);
  const op = kind === 'counter' ? 'Counter.increment vs inc' : 'Histogram.observe vs observe';
  return {
    name: `${op}${labelled ? ', 1 label' : ''} (ops/s)`,
    value,
    baseline,
    ratio: value / baseline,
    target: '>= 0.7',
  };
}

/** Runs the monitoring benchmark and returns one row per figure. */
export async function runMonitoringBench(): Promise<BenchRow[]> {
  return [
    await renderBench(),
    await recordBench('counter', false),
    await recordBench('counter', true),
    await recordBench('histogram', false),
    await recordBench('histogram', true),
  ];
}

if (require.main === module) {
  runMonitoringBench().then(
    (rows) => {
      for (const r of rows) {
        console.log(
          `${r.name}: ${r.value.toFixed(2)} vs ${r.baseline.toFixed(2)} ratio ${r.ratio.toFixed(3)} (target ${r.target})`,
        );
      }
    },
    (err: unknown) => {
      console.error(err);
      process.exitCode = 1;
    },
  );
}
