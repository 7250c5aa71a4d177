/**
 * "Run this job on one replica only, at most once per interval": the lease every periodic job of a
 * service uses (the inbox retention purge, the delivery purge), and the timer around it.
 *
 * The lease on PostgreSQL is a session advisory lock, taken with `pg_try_advisory_lock` on a
 * dedicated short-lived connection (a pooled one would deadlock a pool of one while the job uses the
 * pool), plus the time of the last run in a bookkeeping table, so replicas whose timers fire at
 * different moments still run the job once per interval between them. On PGlite (one process, one
 * connection) and in memory, an in-process guard is the whole story.
 *
 * A job is stoppable: PeriodicJob.stop() aborts the signal the job receives, and a job that works in
 * batches checks it between batches, so shutdown never waits for a whole large run.
 */
import type { Knex } from 'knex';
import { Client } from 'pg';
import type { Logger } from '../logging/logger';
import { silentLogger } from '../logging/logger';
import { databaseEngine, rows } from './database';
import { type Clock, dateReader } from '../runtime/clock';
import { sessionConnection } from './session';

/** Decides whether a job runs now, and records that it did. */
export interface JobLease {
  /**
   * Runs `fn` unless another holder (any replica) is running job `job`, or it last ran less than
   * `minIntervalMs` before `now`. Returns whether `fn` ran.
   */
  runIfDue(job: string, now: Date, minIntervalMs: number, fn: () => Promise<void>): Promise<boolean>;
}

/** The lease of one process (memory stores, tests): nothing is shared with other processes. */
export class InProcessJobLease implements JobLease {
  private readonly lastRun = new Map<string, number>();
  private readonly running = new Set<string>();

  async runIfDue(job: string, now: Date, minIntervalMs: number, fn: () => Promise<void>): Promise<boolean> {
    if (this.running.has(job)) return false;
    const last = this.lastRun.get(job);
    if (last !== undefined && now.getTime() - last < minIntervalMs) return false;
    this.running.add(job);
    try {
      await fn();
      this.lastRun.set(job, now.getTime());
      return true;
    } finally {
      this.running.delete(job);
    }
  }
}

/** SQL of a bookkeeping table for DatabaseJobLease; run it in the owning service's migration. */
export async function createJobTable(knex: Knex, table: string): Promise<void> {
  await knex.raw('CREATE TABLE ?? (job text PRIMARY KEY, last_run_at timestamptz NOT NULL)', [table]);
}

/** Options of DatabaseJobLease. */
export interface DatabaseJobLeaseOptions {
  /** The bookkeeping table (columns `job`, `last_run_at`; see createJobTable). */
  table: string;
  /**
   * Whose clock measures the interval: `caller` (default) takes the `now` passed to runIfDue;
   * `database` ignores it and uses the database's `now()`, so replicas whose clocks differ still
   * run the job once per interval between them.
   */
  clock?: 'caller' | 'database';
  logger?: Logger;
}

/** The cross-replica lease on PostgreSQL (in-process only on PGlite, which is one process). */
export class DatabaseJobLease implements JobLease {
  private readonly running = new Set<string>();
  private readonly isPglite: boolean;
  private readonly log: Logger;

  constructor(
    private readonly knex: Knex,
    private readonly options: DatabaseJobLeaseOptions,
  ) {
    this.isPglite = databaseEngine(knex) === 'pglite';
    this.log = (options.logger ?? silentLogger()).child({ component: 'periodic-job' });
  }

  async runIfDue(job: string, now: Date, minIntervalMs: number, fn: () => Promise<void>): Promise<boolean> {
    if (this.running.has(job)) return false;
    this.running.add(job);
    try {
      if (this.isPglite) return await this.runIfDueNow(job, now, minIntervalMs, fn);
      return await this.withSessionLock(job, () => this.runIfDueNow(job, now, minIntervalMs, fn));
    } finally {
      this.running.delete(job);
    }
  }

  private async withSessionLock(job: string, fn: () => Promise<boolean>): Promise<boolean> {
    const client = new Client(sessionConnection(this.knex));
    client.on('error', (err) => this.log.warn({ err, job }, 'job lock connection failed'));
    await client.connect();
    try {
      const { rows: locked } = await client.query<{ ok: boolean }>(
        'SELECT pg_try_advisory_lock(hashtext($1::text), 0) AS ok',
        [job],
      );
      if (!locked[0]?.ok) return false;
      try {
        return await fn();
      } finally {
        await client.query('SELECT pg_advisory_unlock(hashtext($1::text), 0)', [job]);
      }
    } finally {
      await client.end().catch(() => undefined);
    }
  }

  private async runIfDueNow(
    job: string,
    now: Date,
    minIntervalMs: number,
    fn: () => Promise<void>,
  ): Promise<boolean> {
    const { table } = this.options;
    const [row] = rows<{ last_run_at: Date | string | null; db_now: Date | string }>(
      await this.knex.raw(
        'SELECT now() AS db_now, (SELECT last_run_at FROM ?? WHERE job = ?) AS last_run_at',
        [table, job],
      ),
    );
    if (this.options.clock === 'database') now = new Date(row!.db_now);
    if (row?.last_run_at && now.getTime() - new Date(row.last_run_at).getTime() < minIntervalMs) return false;
    await fn();
    await this.knex.raw(
      `INSERT INTO ?? (job, last_run_at) VALUES (?, ?)
       ON CONFLICT (job) DO UPDATE SET last_run_at = EXCLUDED.last_run_at`,
      [table, job, now.toISOString()],
    );
    return true;
  }
}

/** Options of PeriodicJob. */
export interface PeriodicJobOptions {
  /** The job's name: its lock key and its bookkeeping row. */
  name: string;
  intervalMs: number;
  lease: JobLease;
  /** The work; it checks `signal.aborted` between batches and returns early once it is set. */
  run(signal: AbortSignal): Promise<void>;
  logger?: Logger;
  /** Injectable clock for tests. */
  clock?: Clock;
}

// Pre-allocated: abort() without a reason allocates a DOMException.
const STOPPING = new Error('periodic job stopping');

/** A job run every interval (first run after one interval) on one replica at a time. */
export class PeriodicJob {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<boolean> | null = null;
  private stopping = new AbortController();
  private readonly log: Logger;
  private readonly clock: () => Date;

  constructor(private readonly options: PeriodicJobOptions) {
    this.log = (options.logger ?? silentLogger()).child({ component: 'periodic-job', job: options.name });
    this.clock = dateReader(options.clock);
  }

  /** Schedules the job; the timer is unref'd, so it never keeps the process alive. */
  start(): void {
    if (this.timer) return;
    if (this.stopping.signal.aborted) this.stopping = new AbortController();
    this.timer = setInterval(() => {
      void this.runOnce().catch((err: unknown) => this.log.error({ err }, 'periodic job failed'));
    }, this.options.intervalMs);
    this.timer.unref();
  }

  /** Stops the schedule, tells a run in progress to stop at its next batch, and waits for it. */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    this.stopping.abort(STOPPING);
    await this.running?.catch(() => undefined);
  }

  /** True once stop() was called (until the next start()). */
  get stopped(): boolean {
    return this.stopping.signal.aborted;
  }

  /**
   * Runs the job now unless it is running here, another replica holds it, or it ran within the
   * interval; resolves whether it ran.
   */
  runOnce(): Promise<boolean> {
    if (this.running) return Promise.resolve(false);
    const signal = this.stopping.signal;
    if (signal.aborted) return Promise.resolve(false);
    // A little slack, so a replica whose timer fires a moment early still takes its turn.
    const minIntervalMs = this.options.intervalMs * 0.9;
    this.running = this.options.lease
      .runIfDue(this.options.name, this.clock(), minIntervalMs, () => this.options.run(signal))
      .finally(() => (this.running = null));
    return this.running;
  }
}
