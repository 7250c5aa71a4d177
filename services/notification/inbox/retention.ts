/**
 * InboxRetention: the periodic purge of inbox messages (and their events) older than
 * inbox.retention_days. Each batch is its own short statement, so requests are never blocked behind
 * one giant delete, and the store's maintenance lease (an advisory lock plus the time of the last run)
 * makes it run once per interval across replicas.
 */
import type { Logger } from '../../../shared/logging/logger';
import { silentLogger } from '../../../shared/logging/logger';
import type { InboxConfig } from './config';
import type { InboxStoreProtocol } from './store';

/** The maintenance job name of the purge (its lock key and its bookkeeping row). */
export const INBOX_PURGE_JOB = 'inbox.purge';

const DAY_MS = 24 * 60 * 60 * 1000;

/** Options of InboxRetention. */
export interface InboxRetentionOptions {
  store: InboxStoreProtocol;
  config: Pick<InboxConfig, 'retention_days' | 'purge_interval_seconds' | 'purge_batch_size'>;
  logger?: Logger;
  /** Injectable clock for tests. */
  clock?: () => Date;
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
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<PurgeResult> | null = null;
  private readonly log: Logger;
  private readonly clock: () => Date;
  private readonly pause: () => Promise<void>;

  constructor(private readonly options: InboxRetentionOptions) {
    this.log = (options.logger ?? silentLogger()).child({ component: 'inbox-retention' });
    this.clock = options.clock ?? (() => new Date());
    this.pause = options.pause ?? (() => new Promise((resolve) => setImmediate(resolve)));
  }

  /** Schedules the purge every purge_interval_seconds (first run after one interval); the timer is unref'd. */
  start(): void {
    if (this.timer) return;
    const intervalMs = this.options.config.purge_interval_seconds * 1000;
    this.timer = setInterval(() => {
      void this.purgeOnce().catch((err: unknown) => this.log.error({ err }, 'inbox purge failed'));
    }, intervalMs);
    this.timer.unref();
  }

  /** Stops the schedule and waits for a run in progress. */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.running?.catch(() => undefined);
  }

  /** Runs one purge now unless another replica ran it within the interval or is running it. */
  purgeOnce(): Promise<PurgeResult> {
    if (this.running) return Promise.resolve({ ran: false, messages: 0, events: 0, batches: 0 });
    this.running = this.purge().finally(() => (this.running = null));
    return this.running;
  }

  private async purge(): Promise<PurgeResult> {
    const { retention_days, purge_interval_seconds, purge_batch_size } = this.options.config;
    const now = this.clock();
    const cutoff = new Date(now.getTime() - retention_days * DAY_MS);
    const result: PurgeResult = { ran: false, messages: 0, events: 0, batches: 0 };
    // A little slack, so a replica whose timer fires a moment early still takes its turn.
    const minIntervalMs = purge_interval_seconds * 1000 * 0.9;
    result.ran = await this.options.store.runMaintenance(INBOX_PURGE_JOB, now, minIntervalMs, async () => {
      for (;;) {
        const batch = await this.options.store.purgeBatch(cutoff, purge_batch_size);
        result.batches++;
        result.messages += batch.messages;
        result.events += batch.events;
        if (batch.messages < purge_batch_size && batch.events < purge_batch_size) break;
        await this.pause();
      }
    });
    if (result.ran) {
      this.log.info(
        { messages: result.messages, events: result.events, batches: result.batches, cutoff },
        'inbox retention purge done',
      );
    }
    return result;
  }
}
