/**
 * NotificationRetention: the hourly purge of notifications older than `notify.retention_days`, in
 * batches of 1,000 (each its own statement), on one replica per interval (shared/storage's
 * PeriodicJob over a DatabaseJobLease, or in-process with the memory store).
 */
import type { Logger } from '../../../shared/logging/logger';
import { silentLogger } from '../../../shared/logging/logger';
import { type Clock, dateReader } from '../../../shared/runtime/clock';
import { type JobLease, PeriodicJob } from '../../../shared/storage/periodic-job';
import type { NotificationStore } from './store';
import type { DigestStore } from './digest/store';

/** The purge's job name (its lock key and bookkeeping row). */
export const NOTIFY_PURGE_JOB = 'notify.purge';
/** How often the purge runs. */
export const NOTIFY_PURGE_INTERVAL_MS = 60 * 60 * 1000;
/** Rows per purge statement. */
export const NOTIFY_PURGE_BATCH = 1000;

const DAY_MS = 24 * 60 * 60 * 1000;

/** Options of NotificationRetention. */
export interface NotificationRetentionOptions {
  store: NotificationStore;
  /**
   * Sent and cancelled digests keep their events (so a fan-out redone never digests a notification
   * twice); they go with the same retention as the notifications they came from.
   */
  digests?: Pick<DigestStore, 'purgeFinished'>;
  retentionDays: number;
  lease: JobLease;
  intervalMs?: number;
  clock?: Clock;
  logger?: Logger;
}

/** The periodic retention purge of notifications. */
export class NotificationRetention {
  private readonly job: PeriodicJob;
  private readonly now: () => Date;
  private readonly log: Logger;

  constructor(private readonly options: NotificationRetentionOptions) {
    this.now = dateReader(options.clock);
    this.log = (options.logger ?? silentLogger()).child({ component: 'notify-retention' });
    this.job = new PeriodicJob({
      name: NOTIFY_PURGE_JOB,
      intervalMs: options.intervalMs ?? NOTIFY_PURGE_INTERVAL_MS,
      lease: options.lease,
      run: (signal) => this.purge(signal).then(() => undefined),
      logger: options.logger,
      clock: options.clock,
    });
  }

  /** Deletes what is past retention, a batch at a time until none is left or `signal` aborts; returns how many. */
  async purge(signal?: AbortSignal): Promise<number> {
    const before = new Date(this.now().getTime() - this.options.retentionDays * DAY_MS);
    let total = 0;
    for (;;) {
      const n = await this.options.store.purgeBefore(before, NOTIFY_PURGE_BATCH);
      total += n;
      if (n < NOTIFY_PURGE_BATCH || signal?.aborted) break;
    }
    if (total > 0) this.log.info({ deleted: total }, 'notifications past retention deleted');
    let digests = 0;
    while (this.options.digests && !signal?.aborted) {
      const n = await this.options.digests.purgeFinished(before, NOTIFY_PURGE_BATCH);
      digests += n;
      if (n < NOTIFY_PURGE_BATCH) break;
    }
    if (digests > 0) this.log.info({ deleted: digests }, 'finished digests past retention deleted');
    return total;
  }

  start(): void {
    this.job.start();
  }

  stop(): Promise<void> {
    return this.job.stop();
  }
}
