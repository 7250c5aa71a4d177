/**
 * SLO benchmarks. Ratio SLOs (issue 31): 100 ratio SLOs with the default rules (six windows and the
 * 30-day period each) fed 1,000,000 timestamped events spread over three days (the longest rule
 * window), recorded and then evaluated, against a plain count of the same events (one pass summing
 * good and total per window for each SLO, then the same burn rates): ratio = monitor ms / count ms
 * (target <= 2). The monitor pays for its buckets here once per event; an evaluation afterwards
 * reads a fixed number of buckets, however many events there were.
 *
 * Latency SLOs: `SLOMonitor.evaluate` over 100 latency SLOs with 10,000 samples each, against a
 * plain sort of the same samples (a typed-array numeric sort of a copy of each metric's 10,000
 * values, the cheapest way to read a percentile by sorting). Measured in the same run, interleaved
 * (ABBA per round), summarised by the median. ratio = evaluate ms / sort ms (target <= 1.5).
 */
import { SLO } from '../../shared/monitoring/slo/slo';
import {
  MAX_EVENT_ENTRIES_PER_CALL,
  type SloEventInput,
  SLOMonitor,
} from '../../shared/monitoring/slo/monitor';
import { DEFAULT_BURN_RATE_RULES, RatioSLO } from '../../shared/monitoring/slo/ratio';
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

const RATIO_SLOS = 100;
const EVENTS = 1_000_000;
const RATIO_ROUNDS = 5;

/** Ratio SLOs: record 1,000,000 timestamped events and evaluate, against a plain count of them. */
function ratioRow(): BenchRow {
  const now = Date.UTC(2026, 10, 28, 12);
  const span = 3 * 24 * 3600 * 1000;
  const perSlo = EVENTS / RATIO_SLOS;
  let seed = 7;
  const next = () => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return seed / 2147483648;
  };
  const at: Float64Array[] = [];
  const bad: Uint8Array[] = [];
  // As a client sends them: batches of timestamped entries (RecordSloSamples `events`).
  const batches: SloEventInput[][][] = [];
  for (let s = 0; s < RATIO_SLOS; s++) {
    const t = new Float64Array(perSlo);
    const b = new Uint8Array(perSlo);
    for (let i = 0; i < perSlo; i++) {
      t[i] = now - Math.floor(next() * span);
      b[i] = next() < 0.002 ? 1 : 0;
    }
    at.push(t);
    bad.push(b);
    const entries = Array.from(t, (atMs, i) => ({ good: 1 - b[i]!, bad: b[i]!, atMs }));
    const chunks: SloEventInput[][] = [];
    for (let i = 0; i < entries.length; i += MAX_EVENT_ENTRIES_PER_CALL)
      chunks.push(entries.slice(i, i + MAX_EVENT_ENTRIES_PER_CALL));
    batches.push(chunks);
  }
  const clock = { now: () => now, monotonic: () => 0 };
  let sink = 0;
  const viaMonitor = () => {
    const m = new SLOMonitor({ clock, maxSlos: RATIO_SLOS });
    for (let s = 0; s < RATIO_SLOS; s++) m.registerRatio(new RatioSLO({ name: `r${s}`, objective: 0.999 }));
    for (let s = 0; s < RATIO_SLOS; s++) for (const batch of batches[s]!) m.recordEventBatch(`r${s}`, batch);
    for (const st of m.evaluateRatios()) sink += st.firing.length + st.rules[0]!.longBurnRate;
  };
  // The same figures by brute force: every event against every window.
  const windows = DEFAULT_BURN_RATE_RULES.flatMap((r) => [r.longWindowSeconds, r.shortWindowSeconds]);
  windows.push(30 * 24 * 3600);
  const since = windows.map((w) => now - w * 1000);
  const plainCount = () => {
    const good = new Float64Array(windows.length);
    const total = new Float64Array(windows.length);
    for (let s = 0; s < RATIO_SLOS; s++) {
      good.fill(0);
      total.fill(0);
      const t = at[s]!;
      const b = bad[s]!;
      for (let i = 0; i < perSlo; i++) {
        for (let w = 0; w < since.length; w++) {
          if (t[i]! >= since[w]!) {
            total[w]!++;
            good[w]! += 1 - b[i]!;
          }
        }
      }
      for (let w = 0; w < windows.length; w++)
        sink += total[w]! === 0 ? 0 : (total[w]! - good[w]!) / total[w]! / 0.001;
    }
  };
  viaMonitor();
  plainCount();
  const a: number[] = [];
  const c: number[] = [];
  for (let round = 0; round < RATIO_ROUNDS; round++) {
    if (round % 2 === 0) {
      a.push(time(viaMonitor));
      c.push(time(plainCount));
    } else {
      c.push(time(plainCount));
      a.push(time(viaMonitor));
    }
  }
  if (sink === Number.MIN_VALUE) process.stdout.write('');
  const value = median(a);
  const baseline = median(c);
  return {
    name: `ratio SLOs: record ${EVENTS.toLocaleString('en')} events into ${RATIO_SLOS} SLOs and evaluate (ms), vs a plain count`,
    value,
    baseline,
    ratio: value / baseline,
    target: '<= 2',
    unit: 'ms',
  };
}

/** Runs the SLO evaluation benchmarks. */
export async function runSloBench(): Promise<BenchRow[]> {
  const ratio = ratioRow();
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
    ratio,
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
