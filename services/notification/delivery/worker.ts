/**
 * DeliveryWorker: the scheduler. It takes due deliveries from the store and starts their attempts;
 * the attempt itself is `AttemptRunner`'s (`attempt-runner.ts`: route, driver call, timeout, outcome
 * classification) and writing its outcome is `OutcomeRecorder`'s (`outcome-recorder.ts`: where a
 * delivery becomes SENT, FAILED or retrying).
 *
 * Each poll asks which backends have due work and claims, per backend it serves, only as many records as that
 * backend has free slots (`delivery.concurrency`, or its `backend_concurrency` override), so a claimed
 * record starts at once and never waits under a lease. A slot is a provider call: it is given back when
 * the call ends, while its outcome is still being written, so the next claim and its sends overlap
 * the (group-committed) write of the last outcomes. Outcomes being written are bounded too, at the
 * same number per backend: past it a slot is kept until its outcome is written. A full poll runs at least every
 * `poll_interval_ms` (fairness); wake-ups (a submit, a freed slot, a failover) claim for their backend
 * only. Claims whose worker died during every allowed attempt are ended by the recorder, claims whose
 * recipients were suppressed meanwhile are screened (`claim-screen.ts`), the rest start.
 *
 * Shutdown: stop claiming, let attempts in flight finish until the deadline, then abort the rest and
 * release their leases (status kept, never failed) so another process takes them at once.
 */
import { newId } from '../../../shared/runtime/ids';
import { hostname } from 'node:os';
import type { Logger } from '../../../shared/logging/logger';
import { silentLogger } from '../../../shared/logging/logger';
import type { DeliveryConfig } from './config';
import type { CircuitBreakers } from './circuit-breaker';
import type { DeliveryDriver } from './driver';
import type { DeliveryMetrics } from './metrics';
import type { DeliveryObserver } from './observer';
import { OutcomeRecorder } from './outcome-recorder';
import { AttemptRunner, type InFlightAttempt } from './attempt-runner';
import type { RetryPolicy } from './retry-policy';
import type { BackendRouter } from './routing';
import type { DeliveryStore, DueBackend } from './store';
import { screenClaimed } from './claim-screen';
import type { SuppressionChecker, SuppressionList, WithoutRecipients } from './suppression';
import type { DeliveryRecord } from './types';
import { type Clock, dateReader } from '../../../shared/runtime/clock';

/** Finds the driver of a stored delivery's backend; undefined when it is no longer configured. */
export type DriverResolver = (
  record: Pick<DeliveryRecord, 'channel' | 'backend'>,
) => DeliveryDriver | undefined;

/** The settings the worker reads. */
export type WorkerSettings = Pick<
  DeliveryConfig,
  | 'lease_seconds'
  | 'poll_interval_ms'
  | 'concurrency'
  | 'backend_concurrency'
  | 'attempt_timeout_ms'
  | 'max_attempts'
>;

/** Options of DeliveryWorker. */
export interface DeliveryWorkerOptions {
  store: DeliveryStore;
  resolveDriver: DriverResolver;
  /** Which backend each attempt goes through (routing mode, failover, pinned backends). */
  router: BackendRouter;
  /** The per-backend circuit breakers the router consults; the worker feeds them every outcome. */
  breakers: CircuitBreakers;
  policy: RetryPolicy;
  config: WorkerSettings;
  metrics?: DeliveryMetrics;
  logger?: Logger;
  /** Injectable clock: leases, due times and attempt times all read it. */
  clock?: Clock;
  /** This worker's lease owner id; unique per process by default. */
  owner?: string;
  /** Told about every delivery this worker brings to a final status. */
  observer?: DeliveryObserver;
  /**
   * The suppression list: a failure whose outcome says `suppress` adds its recipient, and claimed
   * records whose recipients were suppressed meanwhile are stopped before their attempt.
   */
  suppression?: SuppressionList & Pick<SuppressionChecker, 'findSuppressed' | 'countStopped'>;
  /** Per channel, how suppressed recipients are left out of a payload (the submit's rule, at claim). */
  withoutRecipients?: Partial<Record<DeliveryRecord['channel'], WithoutRecipients>>;
}

// The outcome recorder's exports, where existing tests import them from.
export { MAX_REASON_LENGTH, WORKER_DIED_ERROR, failureOf, sanitizeReason } from './outcome-recorder';

/** An attempt in flight and the promise of its end (its slot is freed then, if not before). */
interface InFlight extends InFlightAttempt {
  done: Promise<void>;
  /** What the attempt holds now: a provider slot (`busy`), a place among the outcomes being written, none once ended. */
  holds: 'send' | 'record' | null;
}

/** The delivery worker of one process. */
export class DeliveryWorker {
  /** This worker's lease owner id. */
  readonly owner: string;
  private readonly log: Logger;
  private readonly clock: () => Date;
  /** Where each attempt's outcome is written (where a delivery becomes SENT). */
  private readonly recorder: OutcomeRecorder;
  /** What runs each attempt (route, driver call, timeout, outcome classification). */
  private readonly runner: AttemptRunner;
  private readonly inFlight = new Map<string, InFlight>();
  /** Provider calls in flight per `channel/backend` (the slots `capacity` bounds). */
  private readonly busy = new Map<string, number>();
  /** Per `channel/backend`, attempts whose call has ended and whose outcome is being written. */
  private readonly writing = new Map<string, number>();
  /** Backends whose last claim filled every free slot: more may be due when a slot frees. */
  private readonly saturated = new Set<string>();
  private timer: NodeJS.Timeout | null = null;
  private polling: Promise<void> | null = null;
  private pollAgain = false;
  /** A poll is scheduled for this event-loop turn. */
  private scheduled = false;
  /** The next poll asks the store which backends have due work. */
  private fullPoll = false;
  /** Backends the next poll claims for, by `channel/backend` (when it is not a full poll). */
  private readonly targets = new Map<string, DueBackend>();
  private running = false;
  private stopping = false;

  constructor(private readonly options: DeliveryWorkerOptions) {
    this.owner = options.owner ?? `${hostname()}/${process.pid}/${newId().slice(0, 8)}`;
    this.clock = dateReader(options.clock);
    this.log = (options.logger ?? silentLogger()).child({ component: 'delivery-worker' });
    this.recorder = new OutcomeRecorder({
      store: options.store,
      router: options.router,
      breakers: options.breakers,
      policy: options.policy,
      maxAttempts: options.config.max_attempts,
      owner: this.owner,
      clock: this.clock,
      log: this.log,
      metrics: options.metrics,
      observer: options.observer,
      suppression: options.suppression,
      stopping: () => this.stopping,
      wake: (target) => this.wake(target),
    });
    this.runner = new AttemptRunner({
      store: options.store,
      router: options.router,
      recorder: this.recorder,
      owner: this.owner,
      clock: this.clock,
      log: this.log,
      attemptTimeoutMs: options.config.attempt_timeout_ms,
    });
  }

  /** Attempts in flight now. */
  get activeAttempts(): number {
    return this.inFlight.size;
  }

  /** Starts polling (the first poll at once). */
  start(): void {
    if (this.running || this.stopping) return;
    this.running = true;
    this.wake();
  }

  /**
   * Polls soon (a local submit, a freed slot, a failover calls this). With `target`, only that
   * backend is claimed for (no `dueBackends` query: the caller knows it has work); without, every
   * backend with due work. Wake-ups are coalesced: at most one poll per event-loop turn, and one more
   * after a poll in progress, claiming for every backend woken meanwhile (a batch of its free slots).
   */
  wake(target?: DueBackend): void {
    if (!this.running || this.stopping) return;
    if (target) this.targets.set(`${target.channel}/${target.backend}`, target);
    else this.fullPoll = true;
    if (this.polling) {
      this.pollAgain = true;
      return;
    }
    if (this.scheduled) return;
    this.scheduled = true;
    // setImmediate, not a microtask: every submit and finished attempt of this I/O turn joins one poll.
    setImmediate(() => {
      this.scheduled = false;
      this.runPoll();
    });
  }

  private runPoll(): void {
    if (!this.running || this.stopping || this.polling) return;
    const full = this.fullPoll;
    // Fairness: only a full poll restarts the poll interval. A targeted one (a submit, a freed slot,
    // a failover) leaves the timer running, so under steady traffic on one backend the others' due
    // work (retries, deferred and released records, leases of dead replicas) is still found at least
    // every poll_interval_ms.
    if (full && this.timer) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    const targets = full ? undefined : [...this.targets.values()];
    this.fullPoll = false;
    this.targets.clear();
    this.polling = this.pollOnce(targets)
      .then(() => undefined)
      .catch((err: unknown) => this.log.error({ err }, 'delivery poll failed'))
      .finally(() => {
        this.polling = null;
        if (!this.running || this.stopping) return;
        if (this.pollAgain) {
          this.pollAgain = false;
          this.runPoll();
          return;
        }
        if (this.timer) return;
        this.timer = setTimeout(() => {
          this.timer = null;
          this.wake();
        }, this.options.config.poll_interval_ms);
        this.timer.unref();
      });
  }

  private capacity(backend: string): number {
    return this.options.config.backend_concurrency[backend] ?? this.options.config.concurrency;
  }

  /**
   * Claims what is due now (within free slots) and starts those attempts; returns how many started.
   * `targets`: claim only for these backends, skipping the `dueBackends` query.
   */
  async pollOnce(targets?: readonly DueBackend[]): Promise<number> {
    if (this.stopping) return 0;
    const { store } = this.options;
    const now = this.clock();
    let started = 0;
    for (const due of targets ?? (await store.dueBackends(now))) {
      // A backend this process does not serve (a replica with an older or newer config) is left to
      // the replicas that do: never failed here.
      if (!this.options.resolveDriver(due)) continue;
      const { channel, backend } = due;
      const { router, breakers } = this.options;
      // Without fallback an open circuit's records just wait (claimed again once it half-opens, then
      // one at a time for the trial); with fallback they are claimed and routed around it.
      const routesAround = router.mode(channel) === 'fallback';
      if (!routesAround && !breakers.available(channel, backend)) continue;
      const slot = `${channel}/${backend}`;
      let free = this.capacity(backend) - (this.busy.get(slot) ?? 0);
      if (!routesAround && breakers.state(channel, backend) === 'half_open') free = Math.min(free, 1);
      if (free <= 0) {
        this.saturated.add(slot);
        continue;
      }
      const claimed = await store.claim({
        channel,
        backend,
        owner: this.owner,
        now,
        leaseMs: this.options.config.lease_seconds * 1000,
        limit: free,
      });
      if (this.stopping) {
        // stop() began while we were claiming: hand these straight back. Not a record whose attempt
        // this process is still running (the claim only renewed its lease, counting nothing): stop()
        // waits for that attempt or releases it; releasing it here would give back a count that this
        // claim never took and drop the lease under the running attempt (another process would take
        // it and send it a second time).
        await store.release(
          claimed.filter((r) => !this.inFlight.has(r.id)).map((r) => r.id),
          this.owner,
          this.clock(),
        );
        return started;
      }
      if (claimed.length >= free) this.saturated.add(slot);
      else this.saturated.delete(slot);
      const fresh: DeliveryRecord[] = [];
      for (const record of claimed) {
        // Our own lease ran out while this process's attempt was still sending or waiting to record
        // its outcome (PGlite's one connection under load): the claim only renewed the lease, and
        // the running attempt records the outcome. Starting another would send the message twice.
        if (!this.inFlight.has(record.id)) fresh.push(record);
      }
      started += this.beginAll(await this.screen(channel, await this.recorder.endAbandoned(fresh)));
    }
    return started;
  }

  /**
   * The suppression rule again before the attempt (`screenClaimed`): stops or narrows the claimed
   * records whose recipients were suppressed after acceptance, and defers them all while the list
   * cannot be read. Returns the records to send.
   */
  private async screen(
    channel: DeliveryRecord['channel'],
    records: DeliveryRecord[],
  ): Promise<DeliveryRecord[]> {
    const { suppression, store, config, policy, metrics, withoutRecipients } = this.options;
    if (!suppression || records.length === 0) return records;
    return screenClaimed(
      {
        store,
        owner: this.owner,
        clock: this.clock,
        suppression,
        withoutRecipients,
        // No attempt counted: wait a poll at least, the retry backoff when that is longer.
        deferMs: (r) => Math.max(config.poll_interval_ms, policy.delayMs(r.attempts.length + 1)),
        metrics,
        log: this.log,
      },
      channel,
      records,
    );
  }

  /** Resolves when no attempt is in flight (tests and shutdown). */
  async idle(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.all([...this.inFlight.values()].map((f) => f.done));
  }

  /**
   * Starts attempts for `records` (claimed together for one backend). Those a batch-capable driver
   * serves (the router sends them all through the same driver) go out in one `sendBatch` call; the
   * rest one by one. Each record still has its own slot, lease, outcome and recording.
   */
  private beginAll(records: DeliveryRecord[]): number {
    const batch: { entry: InFlight; driver: DeliveryDriver }[] = [];
    for (const record of records) {
      const route = this.runner.route(record);
      const driver = 'driver' in route ? route.driver : undefined;
      if (records.length > 1 && driver?.sendBatch && (batch.length === 0 || batch[0]!.driver === driver)) {
        batch.push({ entry: this.track(record), driver });
      } else {
        const entry = this.track(record);
        this.settle(entry, this.runner.run(entry, route));
      }
    }
    if (batch.length === 1) {
      const [{ entry, driver }] = batch;
      this.settle(entry!, this.runner.run(entry!, { driver: driver! }));
    } else if (batch.length > 1) {
      const entries = batch.map((b) => b.entry);
      const ends = this.runner.runBatch(entries, batch[0]!.driver);
      for (const [i, entry] of entries.entries()) this.settle(entry, ends[i]!);
    }
    return records.length;
  }

  /** Takes a slot for `record` and registers its attempt as in flight. */
  private track(record: DeliveryRecord, controller = new AbortController()): InFlight {
    const slot = `${record.channel}/${record.backend}`;
    count(this.busy, slot, 1);
    const entry: InFlight = {
      record,
      controller,
      recording: false,
      released: false,
      done: Promise.resolve(),
      holds: 'send',
      onRecording: () => this.callEnded(entry),
    };
    this.inFlight.set(record.id, entry);
    return entry;
  }

  /**
   * The provider call of `entry` has ended and its outcome is being written: its slot goes back (a
   * saturated backend claims again at once) unless `capacity` outcomes of that backend are already
   * being written (the database is behind: the slot is kept until this outcome is written). The
   * record stays in `inFlight` until then, so a claim that renews its lease never starts it again.
   */
  private callEnded(entry: InFlight): void {
    const { record } = entry;
    const slot = `${record.channel}/${record.backend}`;
    if (entry.holds !== 'send' || (this.writing.get(slot) ?? 0) >= this.capacity(record.backend)) return;
    entry.holds = 'record';
    count(this.busy, slot, -1);
    count(this.writing, slot, 1);
    if (this.saturated.has(slot)) this.wake({ channel: record.channel, backend: record.backend });
  }

  /** Frees the entry's slot once `work` ends (and wakes a saturated backend for the next claim). */
  private settle(entry: InFlight, work: Promise<void>): void {
    const { record } = entry;
    const slot = `${record.channel}/${record.backend}`;
    entry.done = work
      .catch((err: unknown) =>
        // The lease expires and another poll retries the record; nothing is lost.
        this.log.error({ err, deliveryId: record.id }, 'recording a delivery attempt failed'),
      )
      .finally(() => {
        this.inFlight.delete(record.id);
        const held = entry.holds;
        entry.holds = null;
        if (held === 'record') count(this.writing, slot, -1);
        else if (held === 'send') {
          count(this.busy, slot, -1);
          if (this.saturated.has(slot)) this.wake({ channel: record.channel, backend: record.backend });
        }
      });
  }

  /**
   * Stops claiming, waits for attempts in flight until `deadline`, then aborts the rest and releases
   * their leases (status kept). Attempts already writing their outcome are waited for.
   */
  async stop(deadline: Date): Promise<{ finished: number; released: number }> {
    this.stopping = true;
    this.running = false;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.polling;
    const before = this.inFlight.size;
    const waitMs = Math.max(0, deadline.getTime() - Date.now());
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      this.idle(),
      new Promise<void>((resolve) => {
        timer = setTimeout(resolve, waitMs);
      }),
    ]);
    clearTimeout(timer);
    const rest = [...this.inFlight.values()].filter((f) => !f.recording);
    for (const f of rest) {
      f.released = true;
      this.runner.abortForShutdown(f.controller);
    }
    const released = await this.options.store.release(
      rest.map((f) => f.record.id),
      this.owner,
      this.clock(),
    );
    if (released > 0) this.log.info({ released }, 'released unfinished deliveries for another process');
    await this.idle();
    return { finished: before - rest.length, released };
  }
}

/** Adds `by` to `key`'s count, dropping the key at zero. */
function count(counts: Map<string, number>, key: string, by: number): void {
  const n = (counts.get(key) ?? 0) + by;
  if (n > 0) counts.set(key, n);
  else counts.delete(key);
}
