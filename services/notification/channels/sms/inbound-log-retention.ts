/**
 * InboundSmsRetention: the purge of inbound messages older than
 * `notification.webhooks.inbound_sms_retention_hours`, every ten minutes, in batches of 1,000, on one
 * replica per interval (shared/storage's PeriodicJob over a DatabaseJobLease on the database's clock,
 * or in-process with the memory store). The log's cap is kept at every append, not here.
 */
import type { Logger } from '../../../../shared/logging/logger';
import { silentLogger } from '../../../../shared/logging/logger';
import type { Clock } from '../../../../shared/runtime/clock';
import { type JobLease, PeriodicJob } from '../../../../shared/storage/periodic-job';
import type { InboundSmsLog } from './inbound-log';

/** The purge's job name (its lock key and bookkeeping row). */
export const INBOUND_SMS_PURGE_JOB = 'inbound_sms.purge';
/** How often the purge runs. */
export const INBOUND_SMS_PURGE_INTERVAL_MS = 10 * 60 * 1000;
/** Rows per purge statement. */
export const INBOUND_SMS_PURGE_BATCH = 1000;

/** Options of InboundSmsRetention. */
export interface InboundSmsRetentionOptions {
  log: InboundSmsLog;
  retentionHours: number;
  lease: JobLease;
  intervalMs?: number;
  clock?: Clock;
  logger?: Logger;
}

/** The periodic retention purge of the inbound SMS log. */
export class InboundSmsRetention {
  private readonly job: PeriodicJob;
  private readonly log: Logger;

  constructor(private readonly options: InboundSmsRetentionOptions) {
    this.log = (options.logger ?? silentLogger()).child({ component: 'inbound-sms-retention' });
    this.job = new PeriodicJob({
      name: INBOUND_SMS_PURGE_JOB,
      intervalMs: options.intervalMs ?? INBOUND_SMS_PURGE_INTERVAL_MS,
      lease: options.lease,
      run: (signal) => this.purge(signal).then(() => undefined),
      logger: options.logger,
      clock: options.clock,
    });
  }

  /** Deletes the messages past retention, a batch at a time; returns how many. */
  async purge(signal?: AbortSignal): Promise<number> {
    const deleted = await this.options.log.purgeExpired(
      this.options.retentionHours,
      INBOUND_SMS_PURGE_BATCH,
      signal,
    );
    if (deleted > 0) this.log.info({ deleted }, 'inbound SMS past retention deleted');
    return deleted;
  }

  /** Runs the purge now unless it ran within the interval (on any replica); resolves whether it ran. */
  runOnce(): Promise<boolean> {
    return this.job.runOnce();
  }

  start(): void {
    this.job.start();
  }

  stop(): Promise<void> {
    return this.job.stop();
  }
}
