/**
 * OutcomeRecorder: where a delivery becomes SENT (or FAILED, or retrying). The one place an attempt's
 * outcome is turned into the record's next status and written: the circuit breakers are fed, the
 * retry policy decides (failover picks the next backend), the attempt is sanitised and stored while
 * this worker holds the lease (again and again while the database cannot be reached), and a final
 * status is counted, told to the observer, logged, and a refused recipient suppressed. A claim whose
 * worker died during every allowed attempt is ended FAILED (`worker_died`) here as well.
 */
import type { Logger } from '../../../shared/logging/logger';
import { UnavailableError } from '../../../shared/errors';
import { isDatabaseUnavailable } from '../../../shared/storage/unavailable';
import { Backoff, sleepMs } from '../../../shared/runtime/backoff';
import { cutText } from '../../../shared/text/cut';
import { storableLine } from '../../../shared/text/check';
import type { CircuitBreakers } from './circuit-breaker';
import type { DeliveryDriver, FailureKind, SendOutcome } from './driver';
import { maskRecipient } from './mask';
import type { DeliveryMetrics } from './metrics';
import type { DeliveryObserver, DeliveryOutcome } from './observer';
import type { RetryPolicy } from './retry-policy';
import type { BackendRouter } from './routing';
import type { DeliveryStore, DueBackend } from './store';
import type { SuppressionList } from './suppression';
import type { DeliveryAttempt, DeliveryRecord } from './types';

/** The wait between writes of an attempt's outcome while the database cannot be reached. */
const RECORD_RETRY = new Backoff({ baseMs: 100, maxMs: 2000 });

/** Longest reason stored with an attempt. */
export const MAX_REASON_LENGTH = 500;
/** Most refused recipients an attempt keeps (an email has at most `mailer.max_recipients`). */
const MAX_REFUSED_RECIPIENTS = 1000;

/** `last_error` of a record whose started attempts passed `max_attempts` with no outcome recorded. */
export const WORKER_DIED_ERROR =
  'worker died during the attempt: every allowed attempt started and none recorded an outcome';

/**
 * Makes a provider's reason safe to store: one line, no control characters, no lone surrogate (jsonb
 * refuses `\ud83d`), bounded (cut on whole characters).
 */
export function sanitizeReason(reason: string | undefined, fallback: string): string {
  const text = storableLine(reason ?? '');
  if (!text) return fallback;
  return cutText(text, MAX_REASON_LENGTH, { ellipsis: '…' });
}

/** The failure kind of an outcome that ended a delivery FAILED. */
export function failureOf(outcome: SendOutcome): FailureKind {
  switch (outcome.class) {
    case 'recipient_failure':
      return outcome.failure ?? 'recipient_invalid';
    case 'permanent':
      return outcome.failure ?? 'provider_rejected';
    default:
      // Only a retryable outcome on the last allowed attempt ends a delivery this way.
      return 'retries_exhausted';
  }
}

/** What the recorder reads and sets on an attempt in flight. */
export interface RecordingEntry {
  readonly record: DeliveryRecord;
  /** Set once the outcome is being written: such an attempt is waited for, not released. */
  recording: boolean;
  /** Set when shutdown released the lease: the outcome must not be written. */
  released: boolean;
  /**
   * Called once the provider call has ended and the outcome is about to be written (`recording`
   * just became true): the worker gives the provider slot back then (worker.ts, `settle`).
   */
  onRecording?(): void;
}

/** Options of OutcomeRecorder (the worker's, handed on). */
export interface OutcomeRecorderOptions {
  store: DeliveryStore;
  router: BackendRouter;
  breakers: CircuitBreakers;
  policy: RetryPolicy;
  /** `delivery.max_attempts`: a claim with more started attempts ends `worker_died`. */
  maxAttempts: number;
  /** The worker's lease owner id: outcomes are written only under its lease. */
  owner: string;
  clock: () => Date;
  log: Logger;
  metrics?: DeliveryMetrics;
  observer?: DeliveryObserver;
  suppression?: SuppressionList;
  /** True once the worker stops: an unreachable database is then no longer waited for. */
  stopping: () => boolean;
  /** The wait between retries of a write or a suppression add (default `sleepMs`; tests skip it). */
  sleep?: (ms: number) => Promise<void>;
  /** Polls for a backend now (a failover retries at once on the next backend). */
  wake: (target: DueBackend) => void;
}

/** The outcome's `recipient`: the record's full recipient unless it is an email (a list) or erased. */
function singleRecipient(record: DeliveryRecord): { recipient?: string } {
  return record.channel === 'email' || record.recipient === null ? {} : { recipient: record.recipient };
}

/** Records attempt outcomes for one worker. */
export class OutcomeRecorder {
  constructor(private readonly options: OutcomeRecorderOptions) {}

  /** Records one attempt's outcome (breakers, retry policy, failover, metrics, store, logs). */
  async record(
    entry: RecordingEntry,
    number: number,
    driver: DeliveryDriver | undefined,
    outcome: SendOutcome,
    startedAt: Date,
    durationMs: number,
  ): Promise<void> {
    const { record } = entry;
    const { router, breakers, store, owner, log: logger } = this.options;
    const used = driver?.name ?? record.backend;
    if (entry.released) {
      if (driver) breakers.cancel(record.channel, used);
      return;
    }
    entry.recording = true;
    entry.onRecording?.();
    if (driver) breakers.record(record.channel, used, outcome.class);
    const now = this.options.clock();
    let decision = this.options.policy.decide(outcome, number, now);
    let nextBackend = used;
    let immediate = false;
    if (decision.status === 'retrying') {
      const next = router.next(record, used);
      nextBackend = next.backend;
      immediate = next.immediate;
      if (immediate) decision = { status: 'retrying', nextAttemptAt: now };
    }
    const failure = decision.status === 'failed' ? failureOf(outcome) : null;
    const attempt: DeliveryAttempt = {
      number,
      startedAt,
      durationMs,
      outcome: outcome.class,
      backend: used,
    };
    if (outcome.class !== 'sent') attempt.error = sanitizeReason(outcome.reason, `attempt ${outcome.class}`);
    else if (outcome.refusedRecipients?.length) {
      // Sent to some, refused for others: the record says so (README, "Attempts and records").
      attempt.error = sanitizeReason(outcome.reason, 'some recipients were refused');
      attempt.refusedRecipients = outcome.refusedRecipients
        .slice(0, MAX_REFUSED_RECIPIENTS)
        .map((r) => maskRecipient(record.channel, r));
    }
    if (outcome.providerReference) attempt.providerReference = sanitizeReason(outcome.providerReference, '');
    if (outcome.providerCode) attempt.providerCode = sanitizeReason(outcome.providerCode, '');
    const labels = { channel: record.channel, backend: used };
    this.options.metrics?.attempts.inc({ ...labels, outcome: outcome.class });
    this.options.metrics?.attemptSeconds.observe(labels, durationMs / 1000);
    const updated = await this.write(record.id, () =>
      store.completeAttempt(record.id, owner, {
        attempt,
        status: decision.status,
        nextAttemptAt: decision.nextAttemptAt,
        failure,
        backend: nextBackend,
        now,
        createdAt: record.createdAt,
      }),
    );
    const log = {
      deliveryId: record.id,
      backend: used,
      recipient: record.maskedRecipient,
      attempt: number,
    };
    if (!updated) {
      logger.warn({ ...log, outcome: outcome.class }, 'delivery lease lost before the attempt was recorded');
      return;
    }
    if (decision.status === 'sent' || decision.status === 'failed') {
      this.options.metrics?.deliveries.inc({ ...labels, outcome: decision.status });
      this.notify({
        deliveryId: record.id,
        channel: record.channel,
        backend: used,
        status: decision.status,
        failure,
        attempts: number,
        acceptedAt: record.createdAt,
        finishedAt: now,
        latencyMs: Math.max(0, now.getTime() - record.createdAt.getTime()),
        ...singleRecipient(record),
      });
    }
    if (decision.status === 'failed' && outcome.suppress) await this.suppress(record, used, outcome.suppress);
    // Failover retries at once on the next backend: poll for it now, not at the next interval.
    if (immediate) this.options.wake({ channel: record.channel, backend: nextBackend });
    if (decision.status === 'failed')
      logger.warn({ ...log, reason: attempt.error, failure }, 'delivery failed');
    else if (decision.status === 'retrying')
      logger.info(
        { ...log, reason: attempt.error, nextAttemptAt: decision.nextAttemptAt, nextBackend },
        'delivery will be retried',
      );
    else logger.debug(log, 'delivery sent');
  }

  /**
   * Ends FAILED (`worker_died`), without another attempt, the claimed records whose started attempts
   * passed `max_attempts`: each of the last ones was claimed and never recorded an outcome, so the
   * process sending it died (a payload that crashes its worker would otherwise loop forever, and
   * each crash would resend what the process held). Returns the rest.
   */
  async endAbandoned(records: DeliveryRecord[]): Promise<DeliveryRecord[]> {
    const max = this.options.maxAttempts;
    const rest: DeliveryRecord[] = [];
    for (const r of records) {
      if (r.attemptsStarted <= max) {
        rest.push(r);
        continue;
      }
      const now = this.options.clock();
      const updated = await this.write(r.id, () =>
        this.options.store.completeAttempt(r.id, this.options.owner, {
          attempt: null,
          lastError: WORKER_DIED_ERROR,
          status: 'failed',
          failure: 'worker_died',
          nextAttemptAt: null,
          now,
          createdAt: r.createdAt,
        }),
      );
      if (!updated) continue;
      this.options.metrics?.deliveries.inc({ channel: r.channel, backend: r.backend, outcome: 'failed' });
      this.notify({
        deliveryId: r.id,
        channel: r.channel,
        backend: r.backend,
        status: 'failed',
        failure: 'worker_died',
        attempts: r.attemptsStarted - 1,
        acceptedAt: r.createdAt,
        finishedAt: now,
        latencyMs: Math.max(0, now.getTime() - r.createdAt.getTime()),
      });
      this.options.log.error(
        {
          deliveryId: r.id,
          backend: r.backend,
          recipient: r.maskedRecipient,
          started: r.attemptsStarted - 1,
        },
        'delivery failed: its worker died during every allowed attempt',
      );
    }
    return rest;
  }

  /**
   * Records an attempt's outcome, again and again while the database cannot be reached (until the
   * worker stops). The provider has already answered: an outcome dropped here leaves the record
   * leased, and once the lease runs out the message is sent a second time. Found by the faults suite:
   * PostgreSQL halted under load made the peer receive emails twice.
   */
  private async write<T>(deliveryId: string, write: () => Promise<T>): Promise<T> {
    return this.retried(
      deliveryId,
      write,
      isDatabaseUnavailable,
      'database unavailable: recording the attempt later',
    );
  }

  /**
   * THE retry loop of the recorder: runs `call` again (RECORD_RETRY backoff) while it fails with an
   * error `retryable` accepts and the worker is not stopping; any other error, or any error once
   * stopping, is thrown.
   */
  private async retried<T>(
    deliveryId: string,
    call: () => Promise<T>,
    retryable: (err: unknown) => boolean,
    message: string,
  ): Promise<T> {
    const sleep = this.options.sleep ?? sleepMs;
    for (let retry = 1; ; retry++) {
      try {
        return await call();
      } catch (err) {
        if (this.options.stopping() || !retryable(err)) throw err;
        const wait = RECORD_RETRY.delayMs(retry);
        this.options.log.warn({ err, deliveryId, retryInMs: wait }, message);
        await sleep(wait);
      }
    }
  }

  /**
   * Adds the recipient of a delivery the provider refused for good (unsubscribed, dead token) to the
   * suppression list. Only a single recipient: an email's list says nothing about which address the
   * answer was about. The provider will not say it again, so a list that is unavailable (its bound
   * passed: SuppressionLookupError `timeout`; the database unreachable) is retried like an outcome
   * write (`retried`), until the worker stops; `add` is idempotent. Anything else, or a worker
   * stopping, is logged (the entry is then lost: the next refused attempt to the recipient adds it);
   * the delivery's outcome is already recorded.
   */
  private async suppress(
    record: DeliveryRecord,
    backend: string,
    reason: NonNullable<SendOutcome['suppress']>,
  ): Promise<void> {
    const list = this.options.suppression;
    if (!list || record.recipient === null || record.channel === 'email') return;
    const recipient = record.recipient;
    const channel = record.channel;
    try {
      await this.retried(
        record.id,
        () => list.add({ channel, recipient, reason, source: `provider_error:${backend}` }),
        (err) => err instanceof UnavailableError || isDatabaseUnavailable(err),
        'suppression list unavailable: adding the entry from a provider error later',
      );
    } catch (err) {
      this.options.log.error(
        { err, deliveryId: record.id, recipient: record.maskedRecipient },
        'adding a suppression entry from a provider error failed',
      );
    }
  }

  /** Tells the observer; one that throws is logged, never a failure of the delivery. */
  private notify(outcome: DeliveryOutcome): void {
    try {
      this.options.observer?.onOutcome(outcome);
    } catch (err) {
      this.options.log.warn({ err, deliveryId: outcome.deliveryId }, 'delivery observer threw');
    }
  }
}
