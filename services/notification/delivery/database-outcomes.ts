/**
 * Recording attempt outcomes on PostgreSQL/PGlite: where a delivery becomes SENT, RETRYING or FAILED.
 * Outcomes are group-committed (shared/storage/group-commit): those of one turn, and those that
 * arrive while earlier batches run, go into one `delivery_complete` UPDATE, each row still
 * conditional on its owner's lease and a non-final status. A batch that fails is retried (transient
 * SQLSTATEs), then split down to the one row that cannot be written. DatabaseDeliveryStore composes it.
 */
import type { Knex } from 'knex';
import type { Logger } from '../../../shared/logging/logger';
import { fulfilled, GroupCommit } from '../../../shared/storage/group-commit';
import { isDatabaseUnavailable } from '../../../shared/storage/unavailable';
import type { AttemptResult } from './store';
import type { DeliveryRecord } from './types';
import { rows } from '../../../shared/storage/database';
import { rowToRecord, type DeliveryRow, type StoredAttempt } from './database-records';

/**
 * SQLSTATEs that say "try again", not "this row is wrong": deadlock (40P01), serialization failure
 * (40001), statement timeout or cancel (57014), too many connections (53300), read-only transaction
 * after a failover (25006), lock not available (55P03). A completion batch that meets one is retried
 * as a whole; any other error splits it (see `settle`).
 */
const TRANSIENT_SQLSTATES: ReadonlySet<string> = new Set([
  '40P01',
  '40001',
  '57014',
  '53300',
  '25006',
  '55P03',
]);

/** Tries of a completion batch that meets transient errors before it is split. */
const TRANSIENT_TRIES = 5;
const TRANSIENT_FIRST_WAIT_MS = 50;

/** `last_error` of an outcome that could not be stored as the worker gave it. */
export const UNSTORABLE_OUTCOME_ERROR = 'the outcome of this attempt could not be stored as reported';

function isTransient(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && TRANSIENT_SQLSTATES.has(code);
}

/** Text jsonb and text columns accept: lone UTF-16 surrogates become U+FFFD, NUL characters go. */
function storable(text: string | undefined): string | undefined {
  return text
    ?.replace(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g, '\uFFFD')
    .replaceAll('\u0000', '');
}

interface PendingCompletion {
  id: string;
  owner: string;
  result: AttemptResult;
}

/** What DatabaseOutcomeRecorder needs from its store. */
export interface DatabaseOutcomeRecorderOptions {
  log: Logger;
  /** The time to bind for a caller's `now` (null: the database's `now()`). */
  at(now: Date): string | null;
  /** Called after a statement changed rows (their events wait to be numbered). */
  onRecorded(): void;
  /** Most outcomes in one UPDATE. */
  maxBatchSize: number;
  /** UPDATEs in flight at once. */
  maxConcurrentBatches: number;
}

/** Records attempt outcomes; see the module comment. */
export class DatabaseOutcomeRecorder {
  private readonly log: Logger;
  private readonly at: (now: Date) => string | null;
  private readonly onRecorded: () => void;
  private readonly batcher: GroupCommit<PendingCompletion, DeliveryRecord | null>;

  constructor(
    private readonly knex: Knex,
    options: DatabaseOutcomeRecorderOptions,
  ) {
    this.log = options.log;
    this.at = options.at;
    this.onRecorded = options.onRecorded;
    // One row per id in a statement (UPDATE ... FROM applies one source row per target row): a
    // second outcome for the same id waits for a later batch, and not one running beside the
    // batch that has the first (the second could commit first), so each is judged in order.
    this.batcher = new GroupCommit({
      flush: (batch) => this.settle(batch),
      maxBatchSize: options.maxBatchSize,
      maxConcurrentFlushes: options.maxConcurrentBatches,
      keyOf: (c) => c.id,
    });
  }

  /** Records one outcome; null when the owner no longer holds the lease or the record is final. */
  record(id: string, owner: string, result: AttemptResult): Promise<DeliveryRecord | null> {
    return this.batcher.add({ id, owner, result });
  }

  /**
   * Writes a batch of outcomes, one answer per caller (the batcher hands them out when the whole batch
   * is settled); one bad row never takes the others with it.
   * The database unreachable: every caller gets the error (the worker retries while it runs).
   * A transient error (TRANSIENT_SQLSTATES): the batch again, a few times with a growing wait. Any
   * other error: the batch is split in halves, each settled the same way, down to the one row that
   * fails alone; that row is written once more with its texts made storable (lone surrogates,
   * NUL), then, failing that, with no texts but UNSTORABLE_OUTCOME_ERROR. Its status is kept in
   * both: a SENT outcome stays SENT (recording it otherwise would invite a resend).
   */
  private async settle(
    batch: readonly PendingCompletion[],
  ): Promise<PromiseSettledResult<DeliveryRecord | null>[]> {
    let failure: unknown;
    for (let tries = 1, wait = TRANSIENT_FIRST_WAIT_MS; ; tries++, wait *= 2) {
      try {
        const results = await this.completeBatch(batch);
        if (results.some((r) => r !== null)) this.onRecorded();
        return fulfilled(results);
      } catch (err) {
        if (isDatabaseUnavailable(err)) return batch.map(() => ({ status: 'rejected', reason: err }));
        failure = err;
        if (!isTransient(err) || tries >= TRANSIENT_TRIES) break;
        this.log.warn(
          { err, rows: batch.length, retryInMs: wait },
          'recording outcomes: transient error, retrying',
        );
        await new Promise((resolve) => setTimeout(resolve, wait));
      }
    }
    if (batch.length > 1) {
      const half = Math.ceil(batch.length / 2);
      const first = await this.settle(batch.slice(0, half));
      return [...first, ...(await this.settle(batch.slice(half)))];
    }
    const [one] = batch as [PendingCompletion];
    this.log.error(
      { err: failure, deliveryId: one.id },
      'an outcome could not be stored; storing it sanitised',
    );
    const { attempt } = one.result;
    const cleaned: AttemptResult = {
      ...one.result,
      lastError: storable(one.result.lastError),
      attempt: attempt && {
        ...attempt,
        error: storable(attempt.error),
        providerReference: storable(attempt.providerReference),
        providerCode: storable(attempt.providerCode),
      },
    };
    const bare: AttemptResult = {
      ...one.result,
      lastError: UNSTORABLE_OUTCOME_ERROR,
      backend: storable(one.result.backend),
      attempt: attempt && {
        number: attempt.number,
        startedAt: attempt.startedAt,
        durationMs: attempt.durationMs,
        outcome: attempt.outcome,
        backend: storable(attempt.backend),
        error: UNSTORABLE_OUTCOME_ERROR,
      },
    };
    for (const result of [cleaned, bare]) {
      try {
        const [record] = await this.completeBatch([{ ...one, result }]);
        if (record) this.onRecorded();
        return [{ status: 'fulfilled', value: record ?? null }];
      } catch (err) {
        failure = err;
        if (isDatabaseUnavailable(err)) break;
      }
    }
    return [{ status: 'rejected', reason: failure }];
  }

  private async completeBatch(batch: readonly PendingCompletion[]): Promise<(DeliveryRecord | null)[]> {
    const input = batch.map(({ id, owner, result }) => {
      const attempts: StoredAttempt[] = result.attempt
        ? [{ ...result.attempt, startedAt: result.attempt.startedAt.toISOString() }]
        : [];
      return {
        id,
        owner,
        status: result.status,
        attempt: JSON.stringify(attempts),
        // A delay after `at`: on the database clock the retry is due `delay` after the database's now.
        next_delay_ms:
          result.nextAttemptAt === null
            ? null
            : Math.max(0, result.nextAttemptAt.getTime() - result.now.getTime()),
        backend: result.backend ?? null,
        failure: result.status === 'failed' ? (result.failure ?? null) : null,
        last_error: (result.attempt ? result.attempt.error : result.lastError) ?? null,
        provider_reference: result.attempt?.providerReference ?? null,
        at: this.at(result.now),
        created_at: result.createdAt?.toISOString() ?? null,
      };
    });
    // `delivery_complete` (migration 20261125000100): one UPDATE ... FROM jsonb_to_recordset(...) of
    // the batch, each row only while its owner holds the lease and it is not final, plus the changed
    // rows' events, with its plan kept per connection. The ids again as an array: the planner cannot
    // see into jsonb_to_recordset (it guesses 100 rows) and, with the queued rows a large part of the
    // table in its statistics, scanned the whole table for every batch; `id = ANY(array)` makes it a
    // primary-key lookup of exactly these rows (README, "Throughput (issue 10)").
    const updated = rows<DeliveryRow>(
      await this.knex.raw('SELECT * FROM delivery_complete(?::jsonb, ?::uuid[])', [
        JSON.stringify(input),
        batch.map((c) => c.id),
      ]),
    );
    const byId = new Map(updated.map((r) => [r.id, rowToRecord(r)]));
    return batch.map((c) => byId.get(c.id) ?? null);
  }
}
