/**
 * RetryPolicy: what happens after an attempt. The shared Backoff with full jitter (a uniform delay
 * in [0, min(max, base * 2^(n-1))]); a provider's Retry-After replaces the backoff, capped
 * at max_delay_ms; permanent and recipient failures end at once; the last allowed failure ends FAILED.
 */
import { Backoff } from '../../../shared/runtime/backoff';
import type { DeliveryConfig } from './config';
import type { DeliveryStatus, SendOutcome } from './driver';

/** What the pipeline does after one attempt. */
export interface RetryDecision {
  status: Extract<DeliveryStatus, 'sent' | 'retrying' | 'failed'>;
  /** When to try again; null when the delivery is final. */
  nextAttemptAt: Date | null;
}

/** The retry settings the policy reads. */
export type RetrySettings = Pick<DeliveryConfig, 'max_attempts' | 'base_delay_ms' | 'max_delay_ms'>;

/** The retry policy; `random` (in [0, 1)) is injectable so tests can pin the jitter. */
export class RetryPolicy {
  private readonly backoff: Backoff;

  constructor(
    private readonly settings: RetrySettings,
    random: () => number = Math.random,
  ) {
    this.backoff = new Backoff({
      baseMs: settings.base_delay_ms,
      maxMs: settings.max_delay_ms,
      jitter: 'full',
      random,
    });
  }

  /** The backoff before the next attempt after `attemptsMade` failures, in ms. */
  backoffMs(attemptsMade: number): number {
    return this.backoff.delayMs(attemptsMade);
  }

  /** The delay before the next attempt: Retry-After when the provider gave one (capped), else backoff. */
  delayMs(attemptsMade: number, retryAfterMs?: number): number {
    return this.backoff.delayMs(attemptsMade, retryAfterMs);
  }

  /** Decides the status after attempt number `attemptsMade` ended with `outcome` at `now`. */
  decide(outcome: SendOutcome, attemptsMade: number, now: Date): RetryDecision {
    switch (outcome.class) {
      case 'sent':
        return { status: 'sent', nextAttemptAt: null };
      case 'permanent':
      case 'recipient_failure':
        return { status: 'failed', nextAttemptAt: null };
      case 'retryable':
      case 'rate_limited':
        if (attemptsMade >= this.settings.max_attempts) return { status: 'failed', nextAttemptAt: null };
        return {
          status: 'retrying',
          nextAttemptAt: new Date(now.getTime() + this.delayMs(attemptsMade, outcome.retryAfterMs)),
        };
    }
  }
}
