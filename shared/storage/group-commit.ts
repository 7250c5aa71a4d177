/**
 * The one group-commit batcher of the stores (the inbox's sends, the delivery queue's submits and
 * outcomes, and reads too: the suppression list's lookups, where "commit" is a misnomer kept for the
 * one name; a flush is any statement many callers can share): callers add items one at a time; the items of one event-loop turn, and whatever arrives
 * while earlier flushes run, are written by one `flush` call, so many writers share a statement or a
 * transaction instead of one each.
 *
 * What it keeps: the order items were added (a batch is taken from the front of the queue); a bound
 * on flushes running at once (one unless configured); batches cut by count and, optionally, by size;
 * an optional bound on pending items (queued or in a running flush), beyond which `add` is refused at
 * once; optionally one item per key in a batch and in the flushes running side by side. What it
 * leaves to the caller's `flush`: the write itself and its retry and split rules. A flush that
 * throws answers every caller of its batch with that error; a flush answers per item otherwise.
 */

/** Tuning and the write of one GroupCommit. */
export interface GroupCommitOptions<T, R> {
  /**
   * Writes one batch. Answers one outcome per item, in the batch's order (an item may fail alone);
   * a throw fails every item of the batch with that error.
   */
  flush(batch: readonly T[]): Promise<readonly PromiseSettledResult<R>[]>;
  /** Most items in one flush (at least 1). */
  maxBatchSize: number;
  /** Most total `sizeOf` in one flush (a batch always takes at least one item); default unbounded. */
  maxBatchBytes?: number;
  /** The size an item counts against maxBatchBytes. */
  sizeOf?(item: T): number;
  /** Flushes running at once (default 1). */
  maxConcurrentFlushes?: number;
  /** Most items queued or in a running flush; one more is refused with `overloaded()`. Default unbounded. */
  maxPending?: number;
  /** The error an item beyond maxPending is refused with. */
  overloaded?(): Error;
  /**
   * Items with the same key never share a batch, nor run in flushes side by side: a later one waits
   * for the flush holding the earlier one, so the two are written in the order they were added.
   */
  keyOf?(item: T): string;
}

interface Pending<T, R> {
  item: T;
  resolve(value: R): void;
  reject(err: unknown): void;
}

/** Settled outcomes for a flush whose every item succeeded. */
export function fulfilled<R>(values: readonly R[]): PromiseSettledResult<R>[] {
  return values.map((value) => ({ status: 'fulfilled', value }));
}

/** Batches items into flushes; see the module comment. */
export class GroupCommit<T, R> {
  private queue: Pending<T, R>[] = [];
  private running = 0;
  private scheduled = false;
  private pendingCount = 0;
  /** Keys in the flushes running now (with `keyOf`). */
  private readonly flushingKeys = new Set<string>();
  private readonly maxBatchSize: number;
  private readonly maxBatchBytes: number;
  private readonly maxConcurrentFlushes: number;
  private readonly maxPending: number;

  constructor(private readonly options: GroupCommitOptions<T, R>) {
    this.maxBatchSize = Math.max(1, options.maxBatchSize);
    this.maxBatchBytes = options.maxBatchBytes ?? Number.POSITIVE_INFINITY;
    this.maxConcurrentFlushes = Math.max(1, options.maxConcurrentFlushes ?? 1);
    this.maxPending = options.maxPending ?? Number.POSITIVE_INFINITY;
  }

  /** Items queued or in a running flush. */
  get pending(): number {
    return this.pendingCount;
  }

  /** Queues an item; answers with its outcome once the flush that holds it has ended. */
  add(item: T): Promise<R> {
    if (this.pendingCount >= this.maxPending) {
      return Promise.reject(this.options.overloaded?.() ?? new Error('too many items waiting to be written'));
    }
    this.pendingCount++;
    return new Promise<R>((resolve, reject) => {
      this.queue.push({
        item,
        resolve: (value) => {
          this.pendingCount--;
          resolve(value);
        },
        reject: (err) => {
          this.pendingCount--;
          reject(err);
        },
      });
      if (!this.scheduled) {
        this.scheduled = true;
        // Let the items of this turn join one flush.
        setImmediate(() => {
          this.scheduled = false;
          this.pump();
        });
      }
    });
  }

  private pump(): void {
    while (this.running < this.maxConcurrentFlushes && this.queue.length > 0) {
      const { batch, keys } = this.options.keyOf ? this.takeKeyed(this.options.keyOf) : this.take();
      if (batch.length === 0) return;
      this.running++;
      for (const key of keys) this.flushingKeys.add(key);
      void this.run(batch).finally(() => {
        for (const key of keys) this.flushingKeys.delete(key);
        this.running--;
        this.pump();
      });
    }
  }

  /** The front of the queue, bounded by count and size (always at least one item). */
  private take(): { batch: Pending<T, R>[]; keys: readonly string[] } {
    const { sizeOf } = this.options;
    let n = 0;
    if (sizeOf && Number.isFinite(this.maxBatchBytes)) {
      let bytes = 0;
      while (n < this.queue.length && n < this.maxBatchSize) {
        bytes += sizeOf(this.queue[n]!.item);
        if (n > 0 && bytes > this.maxBatchBytes) break;
        n++;
      }
    } else n = Math.min(this.queue.length, this.maxBatchSize);
    return { batch: this.queue.splice(0, n), keys: [] };
  }

  /** Like `take`, skipping (and keeping queued, in order) items whose key is taken. */
  private takeKeyed(keyOf: (item: T) => string): { batch: Pending<T, R>[]; keys: readonly string[] } {
    const { sizeOf } = this.options;
    const batch: Pending<T, R>[] = [];
    const keys = new Set<string>();
    const rest: Pending<T, R>[] = [];
    let bytes = 0;
    let full = false;
    for (const p of this.queue) {
      if (!full) {
        const key = keyOf(p.item);
        if (!keys.has(key) && !this.flushingKeys.has(key)) {
          const size = sizeOf ? sizeOf(p.item) : 0;
          if (batch.length > 0 && bytes + size > this.maxBatchBytes) full = true;
          else {
            keys.add(key);
            batch.push(p);
            bytes += size;
            if (batch.length >= this.maxBatchSize) full = true;
            continue;
          }
        }
      }
      rest.push(p);
    }
    this.queue = rest;
    return { batch, keys: [...keys] };
  }

  private async run(batch: Pending<T, R>[]): Promise<void> {
    let outcomes: readonly PromiseSettledResult<R>[];
    try {
      outcomes = await this.options.flush(batch.map((p) => p.item));
    } catch (err) {
      for (const p of batch) p.reject(err);
      return;
    }
    if (outcomes.length !== batch.length) {
      const err = new Error(
        `group commit: a flush of ${batch.length} items answered ${outcomes.length} results`,
      );
      for (const p of batch) p.reject(err);
      return;
    }
    batch.forEach((p, i) => {
      const outcome = outcomes[i]!;
      if (outcome.status === 'fulfilled') p.resolve(outcome.value);
      else p.reject(outcome.reason);
    });
  }
}
