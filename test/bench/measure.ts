/**
 * Measurement helpers for `npm run bench`. Every figure is a ratio against a baseline measured in the
 * same run, interleaved in rounds, so a noisy shared machine moves both sides alike.
 */

export interface BenchRow {
  name: string;
  /** The candidate's figure (calls/s, ms, ...). */
  value: number;
  /** The baseline's figure, same unit. */
  baseline: number;
  /** value / baseline (or baseline / value for "lower is better" figures), as stated by `target`. */
  ratio: number;
  /** The target, in words, e.g. ">= 0.85". */
  target: string;
  unit?: string;
  /** Lines printed under the row (e.g. CPU-ms per unit per process). */
  detail?: string[];
}

/** Runs `call` with `concurrency` calls in flight for `durationMs`; returns completed calls per second. */
export async function throughput(
  call: () => Promise<unknown>,
  concurrency: number,
  durationMs: number,
): Promise<number> {
  const until = performance.now() + durationMs;
  let done = 0;
  const worker = async () => {
    while (performance.now() < until) {
      await call();
      done++;
    }
  };
  const started = performance.now();
  await Promise.all(Array.from({ length: concurrency }, worker));
  return done / ((performance.now() - started) / 1000);
}

export function median(values: number[]): number {
  const s = [...values].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

export function percentile(values: number[], p: number): number {
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(p * s.length) - 1))]!;
}

/**
 * Measures candidate and baseline alternately for `rounds` rounds (after one warm-up of each) and
 * returns the medians: higher is better (throughput).
 */
export async function compareThroughput(
  candidate: () => Promise<number>,
  baseline: () => Promise<number>,
  rounds = 3,
): Promise<{ value: number; baseline: number; ratio: number }> {
  await candidate();
  await baseline();
  const c: number[] = [];
  const b: number[] = [];
  for (let i = 0; i < rounds; i++) {
    b.push(await baseline());
    c.push(await candidate());
  }
  const value = median(c);
  const base = median(b);
  return { value, baseline: base, ratio: value / base };
}
