/**
 * The delivery event log on PostgreSQL/PGlite: the rows the store's statements append
 * (`eventInsert`, in the change's own statement), their reads after a cursor, the horizon, and the
 * sequencer that numbers committed rows gap-free and announces them (NOTIFY and local listeners).
 * DatabaseDeliveryStore composes it.
 */
import { performance } from 'node:perf_hooks';
import type { Knex } from 'knex';
import type { Logger } from '../../../shared/logging/logger';
import { rows, toDate, toNumber } from '../../../shared/storage/database';
import type { DeliveryEvent, DeliveryEventQuery } from './events';
import type { DeliveryRecord } from './types';

/** The PostgreSQL NOTIFY channel the sequencer announces new events on (payload: the latest seq). */
export const DELIVERY_EVENTS_CHANNEL = 'delivery_events';

/** The events a statement's changed rows (`src`, delivery rows) produce; `reason` is an expression. */
export function eventInsert(src: string, reason = 'last_error'): string {
  return `INSERT INTO delivery_events (delivery_id, scope, channel, backend, status, failure, reason,
      provider_reference, occurred_at)
    SELECT id, scope, channel, backend, status, failure, ${reason}, provider_reference, updated_at FROM ${src}`;
}

interface EventRow {
  seq: string | number;
  delivery_id: string;
  scope: string;
  channel: DeliveryRecord['channel'];
  backend: string;
  status: DeliveryRecord['status'];
  failure: DeliveryRecord['failure'];
  reason: string | null;
  provider_reference: string | null;
  occurred_at: Date | string;
}

function rowToEvent(row: EventRow): DeliveryEvent {
  return {
    seq: toNumber(row.seq),
    deliveryId: row.delivery_id,
    scope: row.scope,
    channel: row.channel,
    backend: row.backend,
    status: row.status,
    failure: row.failure,
    reason: row.reason,
    providerReference: row.provider_reference,
    occurredAt: toDate(row.occurred_at),
  };
}

/** Tuning of DatabaseDeliveryEventLog (the store's `sequencer*` options). */
export interface DatabaseDeliveryEventLogOptions {
  log: Logger;
  /** Events numbered per transaction (default 1000). */
  sequencerBatchSize?: number | undefined;
  /** Least time between the starts of two sequencer passes, in ms (default 25). */
  sequencerIntervalMs?: number | undefined;
}

/** Reads and numbers the delivery event log; see the module comment. */
export class DatabaseDeliveryEventLog {
  private readonly log: Logger;
  private readonly sequencerBatchSize: number;
  private readonly sequencerIntervalMs: number;
  private sequencing: Promise<void> | null = null;
  private sequenceAgain = false;
  /** When the last pass started (performance.now()); -Infinity before the first. */
  private lastPassAt = Number.NEGATIVE_INFINITY;
  private readonly sequencedListeners = new Set<(latestSeq: number) => void>();

  constructor(
    private readonly knex: Knex,
    options: DatabaseDeliveryEventLogOptions,
  ) {
    this.log = options.log;
    this.sequencerBatchSize = Math.max(1, options.sequencerBatchSize ?? 1000);
    this.sequencerIntervalMs = Math.max(0, options.sequencerIntervalMs ?? 25);
  }

  async eventsAfter(query: DeliveryEventQuery): Promise<DeliveryEvent[]> {
    if (query.scopes !== null && query.scopes.length === 0) return [];
    const where = ['seq > ?'];
    const bindings: Knex.RawBinding[] = [query.after];
    if (query.scopes !== null) {
      where.push('scope = ANY(?::text[])');
      bindings.push(query.scopes as string[]);
    }
    const { channels, backends, statuses } = query.filter ?? {};
    for (const [column, values] of [
      ['channel', channels],
      ['backend', backends],
      ['status', statuses],
    ] as const) {
      if (values?.length) {
        where.push(`${column} = ANY(?::text[])`);
        bindings.push([...values]);
      }
    }
    bindings.push(query.limit);
    return rows<EventRow>(
      await this.knex.raw(
        `SELECT seq, delivery_id, scope, channel, backend, status, failure, reason, provider_reference,
           occurred_at
         FROM delivery_events WHERE ${where.join(' AND ')} ORDER BY seq LIMIT ?`,
        bindings,
      ),
    ).map(rowToEvent);
  }

  async latestEventSeq(): Promise<number> {
    const [row] = rows<{ last_seq: string | number }>(
      await this.knex.raw('SELECT last_seq FROM delivery_event_counter WHERE id = 1'),
    );
    return row ? toNumber(row.last_seq) : 0;
  }

  async eventHorizon(scope: string): Promise<number> {
    const [row] = rows<{ purged_through: string | number }>(
      await this.knex.raw('SELECT purged_through FROM delivery_event_horizon WHERE scope = ?', [scope]),
    );
    return row ? toNumber(row.purged_through) : 0;
  }

  onEventsSequenced(listener: (latestSeq: number) => void): () => void {
    this.sequencedListeners.add(listener);
    return () => this.sequencedListeners.delete(listener);
  }

  /** After a local commit that wrote events: number them soon (failures wait for the next trigger). */
  kick(): void {
    this.sequenceEvents().catch((err: unknown) =>
      this.log.warn({ err }, 'sequencing delivery events failed; the next commit or sweep retries'),
    );
  }

  /**
   * The sequencer. One pass per process at a time (a call during a pass asks for one more pass and
   * shares its promise), one transaction per batch, and across replicas one transaction at a time
   * (a transaction advisory lock; a replica waiting for it then sees every row committed meanwhile,
   * since each statement under READ COMMITTED takes a fresh snapshot). It numbers committed rows that
   * have no seq yet, in id order, from the counter row: gap-free, and a batch becomes visible at
   * once, so a reader never sees seq N+1 before N. Then it NOTIFYs the other replicas and tells the
   * local listeners. Writers never wait for it: no per-caller lock on the send path.
   */
  sequenceEvents(): Promise<void> {
    this.sequenceAgain = true;
    if (!this.sequencing) {
      this.sequencing = this.runSequencer().finally(() => {
        this.sequencing = null;
      });
    }
    return this.sequencing;
  }

  private async runSequencer(): Promise<void> {
    while (this.sequenceAgain) {
      // Under load, wait out the interval since the last pass began: the commits meanwhile join this
      // pass (each pass has a fixed cost of about 0.2 ms of PostgreSQL CPU plus a round trip, and
      // numbered one or two events when every commit started its own). A watcher may see an event up
      // to the interval later; a quiet spell's first commit does not wait.
      const wait = this.lastPassAt + this.sequencerIntervalMs - performance.now();
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
      this.sequenceAgain = false;
      this.lastPassAt = performance.now();
      let numbered: number;
      do {
        const { count, latest } = await this.sequenceBatch();
        numbered = count;
        if (count > 0) for (const listener of this.sequencedListeners) listener(latest);
      } while (numbered === this.sequencerBatchSize);
    }
  }

  /**
   * One pass: one statement, `delivery_events_sequence` (migrations 20261125000000, 20261130210000): the advisory lock,
   * the numbering from the counter row and the NOTIFY, in the statement's own transaction.
   */
  private async sequenceBatch(): Promise<{ count: number; latest: number }> {
    const [row] = rows<{ sequenced: string | number | null; latest_seq: string | number | null }>(
      await this.knex.raw('SELECT sequenced, latest_seq FROM delivery_events_sequence(?, ?)', [
        this.sequencerBatchSize,
        DELIVERY_EVENTS_CHANNEL,
      ]),
    );
    const count = row?.sequenced == null ? 0 : toNumber(row.sequenced);
    const latest = row?.latest_seq == null ? 0 : toNumber(row.latest_seq);
    return { count, latest };
  }
}
