/**
 * DeliveryRetention: what was sent is personal data. A final delivery loses its payload and full
 * recipient `content_retention_hours` after it ended (the record, masked recipient and attempts stay),
 * and the whole record goes `retention_days` after it ended. Each batch is one short statement.
 *
 * It runs as the shared once-per-interval job (shared/storage/periodic-job.ts): with the database
 * store the composition root passes a DatabaseJobLease, so one replica runs it per interval; the stop
 * flag is checked between batches, so shutdown never waits for a whole pass.
 */
import type { Logger } from '../../../shared/logging/logger';
import { silentLogger } from '../../../shared/logging/logger';
import { InProcessJobLease, type JobLease, PeriodicJob } from '../../../shared/storage/periodic-job';
import type { DeliveryConfig } from './config';
import type { DeliveryStore } from './store';
import { type Clock, dateReader } from '../../../shared/runtime/clock';

const HOUR_MS = 60 * 60 * 1000;

/** The job name under which the retention pass runs (its lock key in the periodic job). */
export const DELIVERY_RETENTION_JOB = 'delivery.retention';

/** Options of DeliveryRetention. */
export interface DeliveryRetentionOptions {
  store: DeliveryStore;
  config: Pick<
    DeliveryConfig,
    'content_retention_hours' | 'retention_days' | 'purge_interval_seconds' | 'purge_batch_size'
  >;
  logger?: Logger;
  clock?: Clock;
  /** Called between batches; defaults to yielding to the event loop. */
  pause?: () => Promise<void>;
  /** Who may run the pass now (one replica per interval); this process alone by default. */
  lease?: JobLease;
}

/** What one retention run did. */
export interface DeliveryRetentionResult {
  erased: number;
  deleted: number;
  batches: number;
}

/** The retention pass of the delivery records. */
export class DeliveryRetention {
  private readonly job: PeriodicJob;
  private readonly log: Logger;
  private readonly clock: () => Date;
  private readonly pause: () => Promise<void>;
  private last: DeliveryRetentionResult = { erased: 0, deleted: 0, batches: 0 };

  constructor(private readonly options: DeliveryRetentionOptions) {
    this.log = (options.logger ?? silentLogger()).child({ component: 'delivery-retention' });
    this.clock = dateReader(options.clock);
    this.pause = options.pause ?? (() => new Promise((resolve) => setImmediate(resolve)));
    this.job = new PeriodicJob({
      name: DELIVERY_RETENTION_JOB,
      intervalMs: options.config.purge_interval_seconds * 1000,
      lease: options.lease ?? new InProcessJobLease(),
      run: (signal) => this.pass(signal),
      logger: options.logger,
      clock: options.clock,
    });
  }

  /**
   * Runs one pass now (batch after batch until nothing is left, or stop() is called) unless it is
   * running, another replica holds the lease, or it ran within the interval (then all counts are 0).
   */
  runOnce = async (): Promise<DeliveryRetentionResult> => {
    this.last = { erased: 0, deleted: 0, batches: 0 };
    const result = this.last;
    await this.job.runOnce();
    return { ...result };
  };

  private async pass(signal: AbortSignal): Promise<void> {
    const { content_retention_hours, retention_days, purge_batch_size } = this.options.config;
    const now = this.clock();
    const request = {
      now,
      eraseBefore: new Date(now.getTime() - content_retention_hours * HOUR_MS),
      deleteBefore: new Date(now.getTime() - retention_days * 24 * HOUR_MS),
      batchSize: purge_batch_size,
    };
    const result = this.last;
    // The stop flag is checked between batches: shutdown waits for one batch, never a whole pass.
    while (!signal.aborted) {
      const batch = await this.options.store.purgeExpired(request);
      result.batches++;
      result.erased += batch.erased;
      result.deleted += batch.deleted;
      if (batch.erased < purge_batch_size && batch.deleted < purge_batch_size) break;
      await this.pause();
    }
    if (result.erased > 0 || result.deleted > 0) {
      this.log.info({ erased: result.erased, deleted: result.deleted }, 'delivery retention pass done');
    }
  }

  /** Runs the pass every purge_interval_seconds (first run after one interval); the timer is unref'd. */
  start(): void {
    this.job.start();
  }

  /** Stops the schedule; a pass in progress stops after its current batch, and stop() waits for it. */
  stop(): Promise<void> {
    return this.job.stop();
  }
}
