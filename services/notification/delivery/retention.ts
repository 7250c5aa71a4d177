/**
 * DeliveryRetention: what was sent is personal data. A final delivery loses its payload and full
 * recipient `content_retention_hours` after it ended (the record, masked recipient and attempts stay),
 * and the whole record goes `retention_days` after it ended. Each batch is one short statement.
 *
 * `runOnce` is the function to run once per interval; the composition root plugs it into the shared
 * once-per-interval job (shared/storage/periodic-job.ts, an advisory lock so one replica runs it).
 * Until that lands, `start()` runs it on a plain local timer, which is harmless on several replicas:
 * the statements are idempotent.
 */
import type { Logger } from '../../../shared/logging/logger';
import { silentLogger } from '../../../shared/logging/logger';
import type { DeliveryConfig } from './config';
import type { DeliveryStore } from './store';

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
  clock?: () => Date;
  /** Called between batches; defaults to yielding to the event loop. */
  pause?: () => Promise<void>;
}

/** What one retention run did. */
export interface DeliveryRetentionResult {
  erased: number;
  deleted: number;
  batches: number;
}

/** The retention pass of the delivery records. */
export class DeliveryRetention {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<DeliveryRetentionResult> | null = null;
  private readonly log: Logger;
  private readonly clock: () => Date;
  private readonly pause: () => Promise<void>;

  constructor(private readonly options: DeliveryRetentionOptions) {
    this.log = (options.logger ?? silentLogger()).child({ component: 'delivery-retention' });
    this.clock = options.clock ?? (() => new Date());
    this.pause = options.pause ?? (() => new Promise((resolve) => setImmediate(resolve)));
  }

  /** Runs one full pass (batch after batch until nothing is left); a run in progress is joined. */
  runOnce = (): Promise<DeliveryRetentionResult> => {
    this.running ??= this.pass().finally(() => (this.running = null));
    return this.running;
  };

  private async pass(): Promise<DeliveryRetentionResult> {
    const { content_retention_hours, retention_days, purge_batch_size } = this.options.config;
    const now = this.clock();
    const request = {
      now,
      eraseBefore: new Date(now.getTime() - content_retention_hours * HOUR_MS),
      deleteBefore: new Date(now.getTime() - retention_days * 24 * HOUR_MS),
      batchSize: purge_batch_size,
    };
    const result: DeliveryRetentionResult = { erased: 0, deleted: 0, batches: 0 };
    for (;;) {
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
    return result;
  }

  /** Runs the pass every purge_interval_seconds on a local, unref'd timer. */
  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => {
      void this.runOnce().catch((err: unknown) => this.log.error({ err }, 'delivery retention failed'));
    }, this.options.config.purge_interval_seconds * 1000);
    this.timer.unref();
  }

  /** Stops the timer and waits for a pass in progress. */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.running?.catch(() => undefined);
  }
}
