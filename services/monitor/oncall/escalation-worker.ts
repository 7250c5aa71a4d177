/**
 * Runs the escalation engine every `tick_seconds` under the monitor's job lease (DatabaseJobLease with
 * `clock: 'database'`: one replica ticks per interval; the engine's claims keep each page once even
 * when two do).
 */
import type { Logger } from '../../../shared/logging/logger';
import type { JobLease } from '../../../shared/storage/periodic-job';
import type { EscalationEngine } from './escalation';

/** The job's name in the lease table. */
export const ESCALATION_JOB = 'oncall-escalation';

/** See the file comment. */
export class EscalationWorker {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;

  constructor(
    private readonly engine: EscalationEngine,
    private readonly lease: JobLease,
    private readonly tickMs: number,
    private readonly logger: Logger,
  ) {}

  /** One run, unless another replica ran it within half an interval. */
  async runOnce(): Promise<void> {
    await this.lease.runIfDue(ESCALATION_JOB, new Date(), Math.floor(this.tickMs / 2), () =>
      this.engine.tick(),
    );
  }

  async start(): Promise<void> {
    this.timer = setInterval(() => {
      if (this.running) return;
      this.running = this.runOnce()
        .catch((err: unknown) => this.logger.error({ err }, 'escalation tick failed'))
        .finally(() => {
          this.running = undefined;
        });
    }, this.tickMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await this.running;
  }
}
