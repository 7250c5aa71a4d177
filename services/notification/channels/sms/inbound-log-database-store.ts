/**
 * DatabaseInboundSmsLog: the inbound SMS log (inbound-log.ts) in PostgreSQL or PGlite through knex
 * (migration 20261128800000_inbound_sms), shared by every replica.
 *
 * An append is one transaction: it takes the next id from the `inbound_sms_state` row (an UPDATE, so
 * the row stays locked until commit: appends commit one after another, in id order, and a reader of
 * "after id N" never misses one committed later with a smaller id), inserts the message (a provider id
 * this backend logged before adds nothing and gives the id back), deletes what is beyond the cap
 * (the horizon moves with it) and sends `NOTIFY inbound_sms, '<id>'` for the other replicas' streams.
 * Inbound SMS are few (people's replies), so appends queueing on one row costs nothing that matters.
 * Time is the database's (`now()`): the retention never depends on a replica's clock.
 */
import type { Knex } from 'knex';
import { toNumber, rows } from '../../../../shared/storage/database';
import {
  DEFAULT_INBOUND_SMS_MAX_MESSAGES,
  INBOUND_SMS_CHANNEL,
  type InboundSms,
  type InboundSmsLog,
  type NewInboundSms,
  inboundSmsBody,
  inboundSmsTo,
} from './inbound-log';

/** What the database store is built from. */
export interface DatabaseInboundSmsLogOptions {
  maxMessages?: number;
}

interface Row {
  id: string | number;
  backend: string;
  from_number: string;
  to_number: string;
  body: string;
  received_at: Date | string;
}

function toMessage(row: Row): InboundSms {
  return {
    id: toNumber(row.id),
    backend: row.backend,
    from: row.from_number,
    to: row.to_number,
    body: row.body,
    receivedAt: new Date(row.received_at),
  };
}

/** Thrown inside an append's transaction to roll back the id it took (the provider id was logged). */
const ALREADY_LOGGED = Symbol('already logged');

/** The knex-backed InboundSmsLog. Run the notification migrations first. */
export class DatabaseInboundSmsLog implements InboundSmsLog {
  readonly backend = 'database' as const;
  private readonly maxMessages: number;
  private readonly listeners = new Set<(id: number) => void>();

  constructor(
    private readonly knex: Knex,
    options: DatabaseInboundSmsLogOptions = {},
  ) {
    this.maxMessages = options.maxMessages ?? DEFAULT_INBOUND_SMS_MAX_MESSAGES;
    if (!(this.maxMessages >= 1)) throw new RangeError('maxMessages must be at least 1');
  }

  async append(message: NewInboundSms): Promise<InboundSms | null> {
    let logged: InboundSms;
    try {
      logged = await this.knex.transaction(async (trx) => {
        const [state] = rows<{ last_id: string | number }>(
          await trx.raw('UPDATE inbound_sms_state SET last_id = last_id + 1 WHERE id = 1 RETURNING last_id'),
        );
        const id = toNumber(state!.last_id);
        const [row] = rows<Row>(
          await trx.raw(
            `INSERT INTO inbound_sms (id, backend, provider_id, from_number, to_number, body, received_at)
             VALUES (?, ?, ?, ?, ?, ?, now())
             ON CONFLICT (backend, provider_id) DO NOTHING
             RETURNING id, backend, from_number, to_number, body, received_at`,
            [
              id,
              message.backend,
              message.providerId,
              message.from,
              inboundSmsTo(message.to),
              inboundSmsBody(message.body),
            ],
          ),
        );
        if (!row) throw ALREADY_LOGGED;
        const through = id - this.maxMessages;
        if (through > 0) {
          await trx.raw('DELETE FROM inbound_sms WHERE id <= ?', [through]);
          await trx.raw(
            'UPDATE inbound_sms_state SET purged_through = GREATEST(purged_through, ?) WHERE id = 1',
            [through],
          );
        }
        await trx.raw('SELECT pg_notify(?, ?)', [INBOUND_SMS_CHANNEL, String(id)]);
        return toMessage(row);
      });
    } catch (err) {
      if (err === ALREADY_LOGGED) return null;
      throw err;
    }
    for (const listener of this.listeners) listener(logged.id);
    return logged;
  }

  async after(afterId: number, limit: number): Promise<InboundSms[]> {
    return rows<Row>(
      await this.knex.raw(
        `SELECT id, backend, from_number, to_number, body, received_at FROM inbound_sms
         WHERE id > ? ORDER BY id LIMIT ?`,
        [afterId, Math.max(0, limit)],
      ),
    ).map(toMessage);
  }

  async latestId(): Promise<number> {
    const [row] = rows<{ last_id: string | number }>(
      await this.knex.raw('SELECT last_id FROM inbound_sms_state WHERE id = 1'),
    );
    return row ? toNumber(row.last_id) : 0;
  }

  async horizon(): Promise<number> {
    const [row] = rows<{ purged_through: string | number }>(
      await this.knex.raw('SELECT purged_through FROM inbound_sms_state WHERE id = 1'),
    );
    return row ? toNumber(row.purged_through) : 0;
  }

  /**
   * Everything up to the newest expired message goes (a prefix of the ids, so the horizon says
   * exactly what is gone): the horizon first, then the rows in batches.
   */
  async purgeExpired(retentionHours: number, batch: number, signal?: AbortSignal): Promise<number> {
    const [found] = rows<{ through: string | number | null }>(
      await this.knex.raw(
        `SELECT max(id) AS through FROM inbound_sms WHERE received_at < now() - make_interval(hours => ?)`,
        [retentionHours],
      ),
    );
    if (found?.through == null) return 0;
    const through = toNumber(found.through);
    await this.knex.raw(
      'UPDATE inbound_sms_state SET purged_through = GREATEST(purged_through, ?) WHERE id = 1',
      [through],
    );
    let total = 0;
    for (;;) {
      const deleted = rows<{ id: string | number }>(
        await this.knex.raw(
          `DELETE FROM inbound_sms WHERE id IN (
             SELECT id FROM inbound_sms WHERE id <= ? ORDER BY id LIMIT ?)
           RETURNING id`,
          [through, batch],
        ),
      ).length;
      total += deleted;
      if (deleted < batch || signal?.aborted) return total;
    }
  }

  async eraseSenders(numbers: readonly string[]): Promise<number> {
    if (numbers.length === 0) return 0;
    return rows<{ id: string | number }>(
      await this.knex.raw('DELETE FROM inbound_sms WHERE from_number = ANY(?::text[]) RETURNING id', [
        [...numbers],
      ]),
    ).length;
  }

  onAppended(listener: (id: number) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}
