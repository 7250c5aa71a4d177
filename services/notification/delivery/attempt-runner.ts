/**
 * AttemptRunner: one attempt of a claimed delivery. It routes the record (the router's backend, or a
 * wait for an open circuit), calls the driver under the attempt timeout (the driver's `signal`),
 * turns every way the call can end into a `SendOutcome` (a driver that throws or answers nonsense
 * counts as retryable with a generic reason; the cause is logged, never stored), and hands the
 * outcome to the `OutcomeRecorder`. Batch-capable drivers get one `sendBatch` call for many records,
 * each outcome recorded for its own record. Slots, leases and shutdown belong to the worker.
 */
import { performance } from 'node:perf_hooks';
import { context as otelContext, trace } from '@opentelemetry/api';
import type { Logger } from '../../../shared/logging/logger';
import { FAILURE_KINDS, type DeliveryDriver, type SendOutcome } from './driver';
import type { OutcomeRecorder, RecordingEntry } from './outcome-recorder';
import type { BackendRouter, Route } from './routing';
import type { DeliveryStore } from './store';
import { SpanKind, contextFromTraceParent, endDeliverySpan, startDeliverySpan } from './trace-context';
import type { DeliveryRecord } from './types';

// Pre-allocated abort reasons: abort() without one allocates a DOMException per call.
const TIMEOUT = new Error('attempt timeout');
const SHUTDOWN = new Error('shutting down');

/** An attempt in flight, as the runner and the recorder see it. */
export interface InFlightAttempt extends RecordingEntry {
  /** Aborts the driver call (timeout, shutdown); one for every record of a batch call. */
  controller: AbortController;
}

/** Options of AttemptRunner (the worker's, handed on). */
export interface AttemptRunnerOptions {
  store: DeliveryStore;
  router: BackendRouter;
  recorder: OutcomeRecorder;
  /** The worker's lease owner id (a deferred record is deferred under its lease). */
  owner: string;
  clock: () => Date;
  log: Logger;
  /** `delivery.attempt_timeout_ms`. */
  attemptTimeoutMs: number;
}

/**
 * The number of the attempt a claim starts: attempts count when claimed (`attemptsStarted`), so one
 * cut off by a crash leaves a gap in the recorded numbers.
 */
export function attemptNumber(record: DeliveryRecord): number {
  return Math.max(record.attemptsStarted, record.attempts.length + 1);
}

const OUTCOME_CLASSES: ReadonlySet<string> = new Set([
  'sent',
  'retryable',
  'rate_limited',
  'permanent',
  'recipient_failure',
]);

/**
 * A driver bug (no outcome, an unknown class) is a retryable attempt, never a crash of the worker; an
 * unknown failure kind is dropped (the class's default applies).
 */
function checkOutcome(outcome: SendOutcome | undefined): SendOutcome {
  if (typeof outcome === 'object' && outcome !== null && OUTCOME_CLASSES.has(outcome.class)) {
    if (outcome.failure === undefined || FAILURE_KINDS.includes(outcome.failure)) return outcome;
    return { ...outcome, failure: undefined };
  }
  return { class: 'retryable', reason: 'invalid outcome from the delivery driver' };
}

/** Runs the attempts of one worker. */
export class AttemptRunner {
  /** The driver calls racing their timeout, by controller: what ends each when it is aborted. */
  private readonly racing = new Map<AbortController, (reason: Error) => void>();
  private readonly log: Logger;
  private readonly clock: () => Date;

  constructor(private readonly options: AttemptRunnerOptions) {
    this.log = options.log;
    this.clock = options.clock;
  }

  /** The route of `record`'s next attempt (`missing` when its content was erased). */
  route(record: DeliveryRecord): Route {
    return record.payload === null ? { missing: true } : this.options.router.route(record);
  }

  /**
   * One `sendBatch` call for `entries` under one attempt timeout and one signal (shutdown aborts it
   * as a whole); each outcome is then recorded for its own record, as a single attempt's would be.
   * Returns, per entry, the promise of its attempt's end.
   */
  runBatch(entries: InFlightAttempt[], driver: DeliveryDriver): Promise<void>[] {
    const controller = new AbortController();
    for (const e of entries) e.controller = controller;
    const startedAt = this.clock();
    const t0 = performance.now();
    const first = entries[0]!.record;
    // One provider call for many deliveries: a child of the first one's trace, linked to the others.
    const provider = startDeliverySpan(
      'delivery.provider.send_batch',
      contextFromTraceParent(first.traceParent),
      SpanKind.CLIENT,
      {
        'delivery.channel': first.channel,
        'delivery.backend': driver.name,
        'delivery.batch_size': entries.length,
      },
    );
    for (const e of entries.slice(1)) {
      const linked = trace.getSpanContext(contextFromTraceParent(e.record.traceParent));
      if (linked) provider.span.addLink({ context: linked });
    }
    const outcomes = otelContext
      .with(provider.context, () =>
        this.race(controller, driver.name, first.id, () =>
          driver.sendBatch!(
            entries.map((e) => e.record.payload),
            { deliveryId: first.id, attempt: attemptNumber(first), signal: controller.signal },
          ),
        ),
      )
      .then((result) => {
        provider.span.end();
        const durationMs = Math.round((performance.now() - t0) * 1000) / 1000;
        const list: (SendOutcome | undefined)[] = Array.isArray(result) ? result : entries.map(() => result);
        return { list, durationMs };
      });
    return entries.map((entry, i) => {
      const number = attemptNumber(entry.record);
      return outcomes.then(({ list, durationMs }) =>
        // A driver that answers fewer outcomes than payloads: the missing ones are invalid (retried).
        this.options.recorder.record(entry, number, driver, checkOutcome(list[i]), startedAt, durationMs),
      );
    });
  }

  /**
   * One attempt of `entry`'s record through `route`: deferred while every backend's circuit is open,
   * else one driver call under the attempt timeout, its outcome handed to the recorder.
   */
  async run(entry: InFlightAttempt, route: Route): Promise<void> {
    const { record } = entry;
    const { store, owner } = this.options;
    const number = attemptNumber(record);
    if ('waitUntil' in route) {
      // Every backend this record may use has an open circuit: it waits, no attempt, not failed.
      entry.recording = true;
      entry.onRecording?.();
      const deferred = await store.defer(record.id, owner, {
        nextAttemptAt: route.waitUntil,
        now: this.clock(),
        createdAt: record.createdAt,
      });
      if (deferred)
        this.log.info(
          { deliveryId: record.id, backend: record.backend, nextAttemptAt: route.waitUntil },
          'delivery waits for its backend circuit to half-open',
        );
      return;
    }
    const driver = 'driver' in route ? route.driver : undefined;
    const backend = driver?.name ?? record.backend;
    // The attempt continues the trace of the call that submitted the delivery; the provider call
    // is its child, so a tracer shows SendEmail -> attempt -> provider call as one trace.
    const attemptSpan = startDeliverySpan(
      'delivery.attempt',
      contextFromTraceParent(record.traceParent),
      SpanKind.CONSUMER,
      {
        'delivery.id': record.id,
        'delivery.channel': record.channel,
        'delivery.backend': backend,
        'delivery.attempt': number,
      },
    );
    let outcome: SendOutcome = { class: 'retryable' };
    try {
      const startedAt = this.clock();
      const t0 = performance.now();
      const provider = startDeliverySpan('delivery.provider.send', attemptSpan.context, SpanKind.CLIENT, {
        'delivery.channel': record.channel,
        'delivery.backend': backend,
      });
      outcome = checkOutcome(
        await otelContext.with(provider.context, () => this.send(entry, number, driver)),
      );
      endDeliverySpan(provider.span, outcome.class, outcome.reason);
      const durationMs = Math.round((performance.now() - t0) * 1000) / 1000;
      await otelContext.with(attemptSpan.context, () =>
        this.options.recorder.record(entry, number, driver, outcome, startedAt, durationMs),
      );
    } finally {
      endDeliverySpan(attemptSpan.span, outcome.class, outcome.reason);
    }
  }

  /** One driver call under the attempt timeout; every way it can end becomes a SendOutcome. */
  private async send(
    entry: InFlightAttempt,
    number: number,
    driver: DeliveryDriver | undefined,
  ): Promise<SendOutcome> {
    const { record, controller } = entry;
    if (record.payload === null)
      return { class: 'permanent', reason: 'delivery content was erased', failure: 'payload_rejected' };
    if (!driver) return { class: 'permanent', reason: `backend "${record.backend}" is not configured` };
    return this.race(controller, driver.name, record.id, () =>
      driver.send(record.payload, { deliveryId: record.id, attempt: number, signal: controller.signal }),
    );
  }

  /**
   * Runs one driver call under the attempt timeout: its result, or the retryable outcome of a timeout,
   * a shutdown or a throw (a driver that ignores its signal must not hold the slots and leases).
   */
  private async race<T>(
    controller: AbortController,
    backend: string,
    deliveryId: string,
    call: () => Promise<T>,
  ): Promise<T | SendOutcome> {
    const timeoutMs = this.options.attemptTimeoutMs;
    let resolve!: (outcome: SendOutcome) => void;
    const aborted = new Promise<SendOutcome>((r) => (resolve = r));
    // Told by whoever aborts (the timer here, `stop`), not through an abort listener on the signal:
    // adding and removing an EventTarget listener per attempt showed in the profile.
    const onAbort = (reason: Error): void =>
      resolve({
        class: 'retryable',
        reason:
          reason === TIMEOUT
            ? `attempt timed out after ${timeoutMs} ms`
            : 'attempt aborted: the process is shutting down',
      });
    const timer = setTimeout(() => this.abort(controller, TIMEOUT), timeoutMs);
    this.racing.set(controller, onAbort);
    try {
      return await Promise.race([
        call().catch((err: unknown): SendOutcome => {
          this.log.error({ err, deliveryId, backend }, 'delivery driver threw');
          return { class: 'retryable', reason: 'internal error in the delivery driver' };
        }),
        aborted,
      ]);
    } finally {
      clearTimeout(timer);
      this.racing.delete(controller);
    }
  }

  /** Aborts an attempt at shutdown: its driver call ends at once as a retryable outcome. */
  abortForShutdown(controller: AbortController): void {
    this.abort(controller, SHUTDOWN);
  }

  /** Aborts an attempt's signal and ends its race (if it is still running) with `reason`'s outcome. */
  private abort(controller: AbortController, reason: Error): void {
    if (controller.signal.aborted) return;
    controller.abort(reason);
    this.racing.get(controller)?.(reason);
  }
}
