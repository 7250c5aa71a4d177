/**
 * The SLO area's background worker: every `slo.evaluation_interval_seconds`, evaluate every SLO and
 * dispatch the violations (suppression as for EvaluateSlos). A failing evaluation is logged and
 * counted, and the next interval tries again: it never reaches the process.
 */
import { type Logger, silentLogger } from '../../../shared/logging/logger';
import type { Counter } from '../../../shared/monitoring/instruments';
import type { MetricsCollector } from '../../../shared/monitoring/collector';
import { InProcessJobLease, type JobLease, PeriodicJob } from '../../../shared/storage/periodic-job';

/** What SloEvaluationWorker runs and how often. */
export interface SloEvaluationWorkerOptions {
  /** One evaluation with dispatch (SloArea.evaluate(true)). */
  evaluate: () => Promise<unknown>;
  intervalSeconds: number;
  /**
   * Who runs it per interval: a DatabaseJobLease (the database's clock) when replicas share the
   * monitor's database, so each interval's evaluation runs once across them; this process by default.
   */
  lease?: JobLease;
  /** Where `slo_evaluation_failures_total` goes. */
  collector?: MetricsCollector;
  logger?: Logger;
}

/** Runs SLO evaluations on a timer; start/stop with the lifecycle's worker role. */
export class SloEvaluationWorker {
  private readonly job: PeriodicJob;
  private readonly failures: Counter | undefined;
  private readonly logger: Logger;

  constructor(private readonly options: SloEvaluationWorkerOptions) {
    this.logger = (options.logger ?? silentLogger()).child({ area: 'slo', component: 'slo-evaluator' });
    this.failures = options.collector?.createCounter(
      'slo_evaluation_failures',
      'Background SLO evaluations that failed (logged)',
      undefined,
      { labelNames: [] },
    );
    this.job = new PeriodicJob({
      name: 'slo-evaluation',
      intervalMs: options.intervalSeconds * 1000,
      lease: options.lease ?? new InProcessJobLease(),
      logger: this.logger,
      run: () => this.runGuarded(),
    });
  }

  /** Starts the timer (first run after one interval; the timer does not keep the process alive). */
  start(): void {
    this.job.start();
  }

  /** Stops the timer and waits for a run in progress. */
  stop(): Promise<void> {
    return this.job.stop();
  }

  /** Runs one evaluation now unless one is running; resolves whether it ran. */
  runOnce(): Promise<boolean> {
    return this.job.runOnce();
  }

  private async runGuarded(): Promise<void> {
    try {
      await this.options.evaluate();
    } catch (err) {
      this.failures?.increment();
      this.logger.error({ err }, 'SLO evaluation failed');
    }
  }
}
