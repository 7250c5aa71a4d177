/**
 * Per call kind counts and latencies for the load suites: calls, errors (with the first few error
 * texts, to say what went wrong) and a bounded uniform sample of latencies (reservoir sampling) from
 * which p50 and p99 are read. Bounded so a ten-minute soak keeps the same memory as a short run.
 */

/** Latencies kept per kind; beyond it each new one replaces a random kept one (Algorithm R). */
export const LATENCY_SAMPLE_SIZE = 20_000;
/** Error texts kept per kind. */
const ERROR_SAMPLES = 5;

/** One call kind's figures. */
export interface KindStats {
  calls: number;
  errors: number;
  /** The first error texts seen. */
  errorSamples: string[];
  /** Sampled latencies in ms. */
  latencies: number[];
}

/** Counts calls of several kinds. */
export class CallStats {
  readonly kinds = new Map<string, KindStats>();

  private get(kind: string): KindStats {
    let k = this.kinds.get(kind);
    if (!k) this.kinds.set(kind, (k = { calls: 0, errors: 0, errorSamples: [], latencies: [] }));
    return k;
  }

  /** A call of `kind` that succeeded after `ms`. */
  ok(kind: string, ms: number): void {
    const k = this.get(kind);
    k.calls++;
    if (k.latencies.length < LATENCY_SAMPLE_SIZE) k.latencies.push(ms);
    else {
      const slot = Math.floor(Math.random() * k.calls);
      if (slot < LATENCY_SAMPLE_SIZE) k.latencies[slot] = ms;
    }
  }

  /** A call of `kind` that failed. */
  error(kind: string, err: unknown): void {
    const k = this.get(kind);
    k.calls++;
    k.errors++;
    if (k.errorSamples.length < ERROR_SAMPLES) k.errorSamples.push(String(err));
  }

  /** Calls of every kind together. */
  get totalCalls(): number {
    return [...this.kinds.values()].reduce((n, k) => n + k.calls, 0);
  }

  /** Errors of every kind together. */
  get totalErrors(): number {
    return [...this.kinds.values()].reduce((n, k) => n + k.errors, 0);
  }

  /** The `q` quantile (0..1) of `kind`'s sampled latencies, in ms rounded to 0.1; NaN with none. */
  quantile(kind: string, q: number): number {
    const sorted = [...(this.kinds.get(kind)?.latencies ?? [])].sort((a, b) => a - b);
    if (sorted.length === 0) return NaN;
    const v = sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)]!;
    return Math.round(v * 10) / 10;
  }
}

/** Runs `call` in a loop until `until()` says stop, timing each call into `stats` under `kind`. */
export async function loop(
  stats: CallStats,
  kind: string,
  until: () => boolean,
  call: (i: number) => Promise<unknown>,
): Promise<void> {
  for (let i = 0; !until(); i++) {
    const started = performance.now();
    try {
      await call(i);
      stats.ok(kind, performance.now() - started);
    } catch (err) {
      stats.error(kind, err);
    }
  }
}
