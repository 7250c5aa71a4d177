/**
 * Target history (issue 29): every finished probe of a target is added to its one-minute bucket (up
 * and down counts, latency sum and max, the bucket's last error text and time), so the status page
 * can draw an uptime bar and a latency line over 24 hours and 30 days. Buckets are upserted (replicas
 * probing in turn add to the same row), kept {@link HISTORY_RETENTION_DAYS} days (purged hourly under
 * the monitor's job lease, like the SLO events) and read aggregated to at most
 * {@link MAX_HISTORY_POINTS} points, so a read never returns 43,200 minutes.
 *
 * The port, its memory implementation (bounded per target by the retention) and the database one
 * (`monitor_target_history`, migration 20261129100000_target_history).
 */
import type { Knex } from 'knex';
import { type DeleteBatches, deleteInBatches } from '../../../shared/storage/batched-delete';
import { cutText } from '../../../shared/text/cut';

/** Width of one stored bucket. */
export const HISTORY_BUCKET_MS = 60_000;
/** How long buckets are kept. */
export const HISTORY_RETENTION_DAYS = 30;
export const HISTORY_RETENTION_MS = HISTORY_RETENTION_DAYS * 86_400_000;
/** Longest error text kept per bucket, in code points. */
export const MAX_HISTORY_ERROR_CHARS = 256;
/** Most points a history read answers. */
export const MAX_HISTORY_POINTS = 100;

/** The ranges the page reads: the span and the width of one point. */
export const HISTORY_RANGES = {
  /** 24 hours in 15-minute points: 96. */
  '24h': { spanMs: 86_400_000, stepMs: 15 * 60_000 },
  /** 30 days in 8-hour points: 90. */
  '30d': { spanMs: 30 * 86_400_000, stepMs: 8 * 3_600_000 },
} as const;
export type HistoryRange = keyof typeof HISTORY_RANGES;

/** One probe's result as recorded. */
export interface ProbeRecord {
  atMs: number;
  ok: boolean;
  latencyMs: number;
  /** The reason of a failed probe. */
  error?: string;
}

/** The sums of one span (a stored bucket or an aggregated point). */
export interface HistorySums {
  /** Start of the span (epoch ms). */
  startMs: number;
  up: number;
  down: number;
  latencySumMs: number;
  latencyMaxMs: number;
  lastError: string | null;
  lastErrorAtMs: number | null;
}

/** Where probe results are kept, by target name. */
export interface TargetHistoryStore {
  /** Adds one probe result to its minute bucket. */
  record(target: string, probe: ProbeRecord): Promise<void>;
  /**
   * The sums of `target` over [fromMs, fromMs + steps * stepMs), one per step that holds a probe,
   * oldest first (steps without probes are absent). `steps` is at most {@link MAX_HISTORY_POINTS}.
   */
  read(target: string, fromMs: number, stepMs: number, steps: number): Promise<HistorySums[]>;
  /** Deletes the buckets that start before `beforeMs`; returns how many. */
  purge(beforeMs: number): Promise<number>;
}

const bucketOf = (ms: number) => Math.floor(ms / HISTORY_BUCKET_MS) * HISTORY_BUCKET_MS;
const cutError = (s: string) => cutText(s, MAX_HISTORY_ERROR_CHARS, { unit: 'code_point', ellipsis: '…' });

function checkSteps(steps: number): void {
  if (!Number.isInteger(steps) || steps < 0 || steps > MAX_HISTORY_POINTS)
    throw new RangeError(`steps must be an integer in 0..${MAX_HISTORY_POINTS}`);
}

function add(into: HistorySums, b: HistorySums): void {
  into.up += b.up;
  into.down += b.down;
  into.latencySumMs += b.latencySumMs;
  into.latencyMaxMs = Math.max(into.latencyMaxMs, b.latencyMaxMs);
  if (b.lastErrorAtMs !== null && (into.lastErrorAtMs === null || b.lastErrorAtMs >= into.lastErrorAtMs)) {
    into.lastError = b.lastError;
    into.lastErrorAtMs = b.lastErrorAtMs;
  }
}

const empty = (startMs: number): HistorySums => ({
  startMs,
  up: 0,
  down: 0,
  latencySumMs: 0,
  latencyMaxMs: 0,
  lastError: null,
  lastErrorAtMs: null,
});

function sumsOf(probe: ProbeRecord): HistorySums {
  return {
    startMs: bucketOf(probe.atMs),
    up: probe.ok ? 1 : 0,
    down: probe.ok ? 0 : 1,
    latencySumMs: probe.latencyMs,
    latencyMaxMs: probe.latencyMs,
    lastError: probe.ok ? null : cutError(probe.error ?? 'failed'),
    lastErrorAtMs: probe.ok ? null : probe.atMs,
  };
}

/** The memory store: per target, its minute buckets of the retention (older ones dropped on write). */
export class MemoryTargetHistoryStore implements TargetHistoryStore {
  private readonly targets = new Map<string, Map<number, HistorySums>>();

  async record(target: string, probe: ProbeRecord): Promise<void> {
    let buckets = this.targets.get(target);
    if (!buckets) this.targets.set(target, (buckets = new Map()));
    const s = sumsOf(probe);
    const kept = buckets.get(s.startMs);
    if (kept) add(kept, s);
    else {
      buckets.set(s.startMs, s);
      // Bounded: at most one retention's minutes per target, whatever the purge does.
      const oldest = s.startMs - HISTORY_RETENTION_MS;
      if (buckets.size > HISTORY_RETENTION_MS / HISTORY_BUCKET_MS)
        for (const at of buckets.keys()) if (at < oldest) buckets.delete(at);
    }
  }

  async read(target: string, fromMs: number, stepMs: number, steps: number): Promise<HistorySums[]> {
    checkSteps(steps);
    const points = new Map<number, HistorySums>();
    const toMs = fromMs + steps * stepMs;
    for (const b of this.targets.get(target)?.values() ?? []) {
      if (b.startMs < fromMs || b.startMs >= toMs) continue;
      const start = fromMs + Math.floor((b.startMs - fromMs) / stepMs) * stepMs;
      let p = points.get(start);
      if (!p) points.set(start, (p = empty(start)));
      add(p, b);
    }
    return [...points.values()].sort((a, b) => a.startMs - b.startMs);
  }

  async purge(beforeMs: number): Promise<number> {
    let deleted = 0;
    for (const buckets of this.targets.values())
      for (const at of buckets.keys())
        if (at < beforeMs) {
          buckets.delete(at);
          deleted++;
        }
    return deleted;
  }
}

interface Row {
  step: number | string;
  up: number | string;
  down: number | string;
  latency_sum: number | string;
  latency_max: number | string;
  last_error: string | null;
  last_error_at: number | string | null;
}

/** Batches of the history purge per pass (see DatabaseTargetHistoryStore). */
export const HISTORY_PURGE_MAX_BATCHES = 1_000;

/** The database store (PostgreSQL and PGlite through knex): one row per target and minute. */
export class DatabaseTargetHistoryStore implements TargetHistoryStore {
  /**
   * `purgeBatches`: the purge's batch size and per-pass cap (shared/storage/batched-delete). The cap
   * defaults to 1,000 batches (a million buckets a pass), not the helper's 100: the purge is a job of
   * its own once an hour (it holds up nothing else), and each target adds 60 buckets an hour, so a
   * pass keeps up with some 16,000 targets.
   */
  constructor(
    private readonly knex: Knex,
    private readonly purgeBatches: DeleteBatches = { maxBatches: HISTORY_PURGE_MAX_BATCHES },
  ) {}

  async record(target: string, probe: ProbeRecord): Promise<void> {
    const s = sumsOf(probe);
    await this.knex.raw(
      `INSERT INTO monitor_target_history
         (target, bucket, up, down, latency_sum, latency_max, last_error, last_error_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (target, bucket) DO UPDATE SET
         up = monitor_target_history.up + EXCLUDED.up,
         down = monitor_target_history.down + EXCLUDED.down,
         latency_sum = monitor_target_history.latency_sum + EXCLUDED.latency_sum,
         latency_max = GREATEST(monitor_target_history.latency_max, EXCLUDED.latency_max),
         last_error = CASE WHEN EXCLUDED.last_error_at IS NOT NULL
             AND (monitor_target_history.last_error_at IS NULL
                  OR EXCLUDED.last_error_at >= monitor_target_history.last_error_at)
           THEN EXCLUDED.last_error ELSE monitor_target_history.last_error END,
         last_error_at = CASE WHEN EXCLUDED.last_error_at IS NOT NULL
             AND (monitor_target_history.last_error_at IS NULL
                  OR EXCLUDED.last_error_at >= monitor_target_history.last_error_at)
           THEN EXCLUDED.last_error_at ELSE monitor_target_history.last_error_at END`,
      [target, s.startMs, s.up, s.down, s.latencySumMs, s.latencyMaxMs, s.lastError, s.lastErrorAtMs],
    );
  }

  async read(target: string, fromMs: number, stepMs: number, steps: number): Promise<HistorySums[]> {
    checkSteps(steps);
    if (steps === 0) return [];
    // Aggregated in the database: at most `steps` rows come back, whatever the range holds.
    const result = await this.knex.raw(
      `SELECT (bucket - ?) / ? AS step, SUM(up) AS up, SUM(down) AS down,
              SUM(latency_sum) AS latency_sum, MAX(latency_max) AS latency_max,
              (ARRAY_AGG(last_error ORDER BY last_error_at DESC NULLS LAST))[1] AS last_error,
              MAX(last_error_at) AS last_error_at
         FROM monitor_target_history
        WHERE target = ? AND bucket >= ? AND bucket < ?
        GROUP BY 1 ORDER BY 1`,
      [fromMs, stepMs, target, fromMs, fromMs + steps * stepMs],
    );
    return (result as { rows: Row[] }).rows.map((r) => ({
      startMs: fromMs + Number(r.step) * stepMs,
      up: Number(r.up),
      down: Number(r.down),
      latencySumMs: Number(r.latency_sum),
      latencyMaxMs: Number(r.latency_max),
      lastError: r.last_error_at === null ? null : r.last_error,
      lastErrorAtMs: r.last_error_at === null ? null : Number(r.last_error_at),
    }));
  }

  async purge(beforeMs: number): Promise<number> {
    return deleteInBatches(this.knex, 'monitor_target_history', 'bucket < ?', [beforeMs], this.purgeBatches);
  }
}

/** One point of a history answer. */
export interface HistoryPointJson {
  start: string;
  end: string;
  probes: number;
  /** up / probes; null when no probe fell in the point. */
  up_ratio: number | null;
  latency_avg_ms: number | null;
  latency_max_ms: number | null;
  last_error: string | null;
  last_error_at: string | null;
}

/** Every point of `range` ending at the step that holds `nowMs` (missing steps as null points). */
export async function readHistory(
  store: TargetHistoryStore,
  target: string,
  range: HistoryRange,
  nowMs: number,
): Promise<{ range: HistoryRange; step_seconds: number; points: HistoryPointJson[] }> {
  const { spanMs, stepMs } = HISTORY_RANGES[range];
  const steps = spanMs / stepMs;
  const fromMs = Math.floor(nowMs / stepMs) * stepMs + stepMs - spanMs;
  const sums = new Map((await store.read(target, fromMs, stepMs, steps)).map((s) => [s.startMs, s]));
  const points: HistoryPointJson[] = [];
  for (let i = 0; i < steps; i++) {
    const start = fromMs + i * stepMs;
    const s = sums.get(start);
    const probes = s ? s.up + s.down : 0;
    points.push({
      start: new Date(start).toISOString(),
      end: new Date(start + stepMs).toISOString(),
      probes,
      up_ratio: probes > 0 ? s!.up / probes : null,
      latency_avg_ms: probes > 0 ? round(s!.latencySumMs / probes) : null,
      latency_max_ms: probes > 0 ? round(s!.latencyMaxMs) : null,
      last_error: s?.lastError ?? null,
      last_error_at: s?.lastErrorAtMs != null ? new Date(s.lastErrorAtMs).toISOString() : null,
    });
  }
  return { range, step_seconds: stepMs / 1000, points };
}

const round = (n: number) => Math.round(n * 1000) / 1000;

/** Job name of the hourly purge under the monitor's job lease. */
export const HISTORY_PURGE_JOB = 'target-history-purge';
/** How often the purge runs (once across the replicas). */
export const HISTORY_PURGE_INTERVAL_MS = 3_600_000;

/**
 * Deletes history older than the retention once an hour across the replicas (the job lease, on the
 * database's clock when shared), as the SLO events are purged after each evaluation.
 */
export class TargetHistoryPurger {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;

  constructor(
    private readonly options: {
      store: TargetHistoryStore;
      lease: {
        runIfDue(job: string, now: Date, minIntervalMs: number, fn: () => Promise<void>): Promise<boolean>;
      };
      logger: { warn(obj: object, msg: string): void };
      now?: () => number;
      intervalMs?: number;
    },
  ) {}

  /** One purge if due; returns how many buckets went (0 when not due). */
  async runOnce(): Promise<number> {
    const now = this.options.now?.() ?? Date.now();
    let deleted = 0;
    await this.options.lease.runIfDue(
      HISTORY_PURGE_JOB,
      new Date(now),
      HISTORY_PURGE_INTERVAL_MS * 0.9,
      async () => {
        deleted = await this.options.store.purge(now - HISTORY_RETENTION_MS);
      },
    );
    return deleted;
  }

  start(): void {
    const tick = () => {
      this.running = this.runOnce()
        .then(() => undefined)
        .catch((err: unknown) => this.options.logger.warn({ err }, 'target history purge failed'));
    };
    tick();
    this.timer = setInterval(tick, this.options.intervalMs ?? HISTORY_PURGE_INTERVAL_MS);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.running;
  }
}
