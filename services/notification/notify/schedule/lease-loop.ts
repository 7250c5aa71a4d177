/**
 * `LeaseLoop`: the one wake-and-poll loop of the notify area's leased background work (the topic
 * fan-out and the runner of due work). A pass calls `step` until it reports nothing claimed; the
 * next pass starts after `pollMs`, or at once on `wake`. `stop` lets the pass in hand finish (what
 * it claimed is done or its lease given up by the step's owner) and starts no other.
 */
import type { Logger } from '../../../../shared/logging/logger';
import { systemTimers, type Timers } from '../../../../shared/runtime/clock';

/** Options of a LeaseLoop. */
export interface LeaseLoopOptions {
  /** Claims and works one unit (or batch); false when there was nothing to claim. */
  step: () => Promise<boolean>;
  /** How often an idle loop looks again (ms). */
  pollMs: number;
  timers?: Timers;
  logger: Logger;
  /** What a failed pass logs. */
  name: string;
}

/** A wake-and-poll loop. */
export class LeaseLoop {
  private running = false;
  private stoppingFlag = false;
  private timer: unknown;
  private pass: Promise<void> | undefined;
  private again = false;
  private readonly timers: Timers;

  constructor(private readonly options: LeaseLoopOptions) {
    this.timers = options.timers ?? systemTimers;
  }

  /** True once `stop` was called: a step in hand should finish and give its lease up. */
  get stopping(): boolean {
    return this.stoppingFlag;
  }

  /** Starts polling (work an earlier process left resumes now). */
  start(): void {
    this.running = true;
    this.stoppingFlag = false;
    this.wake();
  }

  /** Runs a pass now (or right after the one in hand). */
  wake(): void {
    if (!this.running) return;
    if (this.pass) {
      this.again = true;
      return;
    }
    if (this.timer !== undefined) this.timers.clearTimeout(this.timer);
    this.timer = undefined;
    this.pass = this.runPass().finally(() => {
      this.pass = undefined;
      if (!this.running) return;
      if (this.again) {
        this.again = false;
        this.wake();
      } else {
        this.timer = this.timers.setTimeout(() => {
          this.timer = undefined;
          this.wake();
        }, this.options.pollMs);
      }
    });
  }

  /** Stops: the pass in hand finishes, no other starts. */
  async stop(): Promise<void> {
    this.running = false;
    this.stoppingFlag = true;
    if (this.timer !== undefined) this.timers.clearTimeout(this.timer);
    this.timer = undefined;
    await this.pass;
  }

  private async runPass(): Promise<void> {
    try {
      while (this.running && (await this.options.step())) {
        // one claim after another while there is work
      }
    } catch (err) {
      this.options.logger.error({ err }, `${this.options.name} pass failed; retried at the next poll`);
    }
  }
}
