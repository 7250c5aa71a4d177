/**
 * InboxRetention: the periodic purge of inbox messages (and their events) older than
 * inbox.retention_days. Each batch is its own short statement, so requests are never blocked behind
 * one giant delete; shared/storage's PeriodicJob, over the store's lease (an advisory lock plus the
 * time of the last run), makes it run once per interval across replicas and stop between batches.
 */
import type { Logger } from '../../../shared/logging/logger';
import { silentLogger } from '../../../shared/logging/logger';
import { PeriodicJob } from '../../../shared/storage/periodic-job';
import type { InboxConfig } from './config';
import type { InboxStoreProtocol } from './store';
import { type Clock, dateReader } from '../../../shared/runtime/clock';

/** The maintenance job name of the purge (its lock key and its bookkeeping row). */
export const INBOX_PURGE_JOB = 'inbox.purge';

const DAY_MS = 24 * 60 * 60 * 1000;

/** Options of InboxRetention. */
export interface InboxRetentionOptions {
  store: InboxStoreProtocol;
  config: Pick<InboxConfig, 'retention_days' | 'purge_interval_seconds' | 'purge_batch_size'>;
  logger?: Logger;
  /** Injectable clock for tests. */
  clock?: Clock;
  /** Called between batches; defaults to yielding to the event loop. */
  pause?: () => Promise<void>;
}

/** What one purge run did. */
export interface PurgeResult {
  /** False when another replica holds the lease or the interval has not elapsed. */
  ran: boolean;
  messages: number;
  events: number;
  batches: number;
}

/** The periodic retention purge. */
export class InboxRetention {
  private readonly job: PeriodicJob;
  private readonly log: Logger;
  private readonly clock: () => Date;
  private readonly pause: () => Promise<void>;
  private last: PurgeResult = { ran: false, messages: 0, events: 0, batches: 0 };

  constructor(private readonly options: InboxRetentionOptions) {
    this.log = (options.logger ?? silentLogger()).child({ component: 'inbox-retention' });
    this.clock = dateReader(options.clock);
    this.pause = options.pause ?? (() => new Promise((resolve) => setImmediate(resolve)));
    const store = options.store;
    this.job = new PeriodicJob({
      name: INBOX_PURGE_JOB,
      intervalMs: options.config.purge_interval_seconds * 1000,
      lease: { runIfDue: (job, now, minIntervalMs, fn) => store.runMaintenance(job, now, minIntervalMs, fn) },
      run: (signal) => this.purge(signal),
      logger: options.logger,
      clock: options.clock,
    });
  }

  /** Schedules the purge every purge_interval_seconds (first run after one interval); the timer is unref'd. */
  start(): void {
    this.job.start();
  }

  /** Stops the schedule; a run in progress stops after its current batch, and stop() waits for that. */
  stop(): Promise<void> {
    return this.job.stop();
  }

  /** Runs one purge now unless another replica ran it within the interval or is running it. */
  async purgeOnce(): Promise<PurgeResult> {
    this.last = { ran: false, messages: 0, events: 0, batches: 0 };
    const result = this.last;
    result.ran = await this.job.runOnce();
    if (result.ran) {
      this.log.info(
        {
          messages: result.messages,
          events: result.events,
          batches: result.batches,
          stopped: this.job.stopped,
        },
        'inbox retention purge done',
      );
    }
    return { ...result };
  }

  private async purge(signal: AbortSignal): Promise<void> {
    const { retention_days, purge_batch_size } = this.options.config;
    const cutoff = new Date(this.clock().getTime() - retention_days * DAY_MS);
    const result = this.last;
    // The stop flag is checked between batches: shutdown waits for one batch, never a whole purge.
    while (!signal.aborted) {
      const batch = await this.options.store.purgeBatch(cutoff, purge_batch_size);
      result.batches++;
      result.messages += batch.messages;
      result.events += batch.events;
      if (batch.messages < purge_batch_size && batch.events < purge_batch_size) break;
      await this.pause();
    }
  }
}
