/**
 * SLO benchmark: `SLOMonitor.evaluate` over 100 latency SLOs with 10,000 samples each, against a
 * plain sort of the same samples (a typed-array numeric sort of a copy of each metric's 10,000
 * values, the cheapest way to read a percentile by sorting). Measured in the same run, interleaved
 * (ABBA per round), summarised by the median. ratio = evaluate ms / sort ms (target <= 1.5).
 */
import { SLO } from '../../shared/monitoring/slo/slo';
import { SLOMonitor } from '../../shared/monitoring/slo/monitor';
import type { BenchRow } from './measure';

const SLOS = 100;
const SAMPLES = 10_000;
const ROUNDS = 9;

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

function time(fn: () => unknown): number {
  const t0 = performance.now();
  fn();
  return performance.now() - t0;
}

/** Runs the SLO evaluation benchmark. */
export async function runSloBench(): Promise<BenchRow[]> {
  const monitor = new SLOMonitor({ maxSamplesPerMetric: SAMPLES });
  const raw: Float64Array[] = [];
  // A fixed pseudo-random stream, so every run measures the same data.
  let seed = 42;
  const next = () => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return seed / 2147483648;
  };
  for (let s = 0; s < SLOS; s++) {
    const metric = `svc${s}.latency`;
    monitor.register(
      new SLO({ name: `slo-${s}`, metric, percentile: 0.99, thresholdMs: 250, windowSeconds: 3600 }),
    );
    const values = new Float64Array(SAMPLES);
    for (let i = 0; i < SAMPLES; i++) {
      values[i] = -Math.log(1 - next()) * 40; // exponential latencies, mean 40 ms
      monitor.recordSample(metric, values[i]!);
    }
    raw.push(values);
  }
  let sink = 0;
  const evaluate = () => (sink += monitor.evaluate().length);
  const plainSort = () => {
    for (const values of raw) {
      const sorted = values.slice().sort();
      sink += sorted[Math.ceil(0.99 * sorted.length) - 1]!;
    }
  };
  // Warm both paths.
  for (let i = 0; i < 3; i++) {
    evaluate();
    plainSort();
  }
  const a: number[] = [];
  const b: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    if (round % 2 === 0) {
      a.push(time(evaluate));
      b.push(time(plainSort));
    } else {
      b.push(time(plainSort));
      a.push(time(evaluate));
    }
  }
  if (sink === Number.MIN_VALUE) process.stdout.write(''); // keep the work observable
  const value = median(a);
  const baseline = median(b);
  return [
    {
      name: `SLOMonitor.evaluate, ${SLOS} SLOs x ${SAMPLES} samples (ms per evaluation)`,
      value,
      baseline,
      ratio: value / baseline,
      target: '<= 1.5',
      unit: 'ms',
    },
  ];
}
