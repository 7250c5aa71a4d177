/**
 * RecentOutcomes: each backend's attempt outcomes of the last hour in this process, for the operator
 * console's backends table (sent / failed / retried). Fed with every attempt's outcome where the
 * circuit breakers are (`CircuitBreakers.record`), so it sees exactly what the breakers see; kept in
 * one-minute buckets (at most 61 per backend; backends are bounded by the configuration).
 */
import { type Clock, systemClock } from '../../../shared/runtime/clock';
import type { Channel, OutcomeClass } from './driver';

/** The window the counts cover. */
export const RECENT_OUTCOMES_WINDOW_MS = 60 * 60 * 1000;
const BUCKET_MS = 60 * 1000;

/** One backend's counts over the window. */
export interface OutcomeCounts {
  /** Attempts the provider took. */
  sent: number;
  /** Attempts refused for good (`permanent`, `recipient_failure`). */
  failed: number;
  /** Attempts that failed retryably (`retryable`, `rate_limited`): tried again later or elsewhere. */
  retried: number;
}

interface Bucket extends OutcomeCounts {
  /** The bucket's start, epoch ms (a multiple of a minute). */
  start: number;
}

/** The counts of this process, per channel and backend. */
export class RecentOutcomes {
  private readonly buckets = new Map<string, Bucket[]>();

  constructor(private readonly clock: Clock = systemClock) {}

  /** Counts one attempt's outcome now. */
  add(channel: Channel, backend: string, outcome: OutcomeClass): void {
    const now = this.clock.now();
    const start = now - (now % BUCKET_MS);
    const key = `${channel}\n${backend}`;
    const list = this.prune(this.buckets.get(key) ?? [], now);
    let bucket = list[list.length - 1];
    if (!bucket || bucket.start !== start) {
      bucket = { start, sent: 0, failed: 0, retried: 0 };
      list.push(bucket);
    }
    bucket[kindOf(outcome)]++;
    this.buckets.set(key, list);
  }

  /**
   * The backend's counts over the last hour: whole minutes, so at least the last 60 minutes and at
   * most 61 (the current minute's bucket and the 60 before it).
   */
  counts(channel: Channel, backend: string): OutcomeCounts {
    const now = this.clock.now();
    const key = `${channel}\n${backend}`;
    const list = this.prune(this.buckets.get(key) ?? [], now);
    if (list.length === 0) this.buckets.delete(key);
    else this.buckets.set(key, list);
    const total: OutcomeCounts = { sent: 0, failed: 0, retried: 0 };
    for (const b of list) {
      total.sent += b.sent;
      total.failed += b.failed;
      total.retried += b.retried;
    }
    return total;
  }

  private prune(list: Bucket[], now: number): Bucket[] {
    const oldest = now - (now % BUCKET_MS) - RECENT_OUTCOMES_WINDOW_MS;
    const keep = list.findIndex((b) => b.start >= oldest);
    return keep === -1 ? [] : keep === 0 ? list : list.slice(keep);
  }
}

function kindOf(outcome: OutcomeClass): keyof OutcomeCounts {
  switch (outcome) {
    case 'sent':
      return 'sent';
    case 'retryable':
    case 'rate_limited':
      return 'retried';
    default:
      return 'failed';
  }
}
