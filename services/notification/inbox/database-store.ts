/**
 * DatabaseInboxStore: inbox messages and their per-user event log in PostgreSQL (pg) or the embedded
 * PGlite, through knex.
 *
 * Every mutation writes its rows and its event in one transaction that first takes the user's
 * transaction-scoped advisory lock, so a user's event seqs are allocated and committed in order: a
 * reader that saw seq N and later reads "after N" can never miss an event that commits later with a
 * smaller seq. The same transaction sends NOTIFY `inbox_events` with `{userId, seq}`, which hubs on
 * other replicas LISTEN to.
 *
 * Concurrent sends are group-committed: whatever arrives while earlier batches are in flight goes in
 * one transaction (a handful of statements for the whole batch instead of per message).
 */
import type { Knex } from 'knex';
import { timePartitions } from '../delivery/database-retention';
import { databaseEngine, jsonColumn, rows, toDate, toNumber } from '../../../shared/storage/database';
import { DatabaseJobLease } from '../../../shared/storage/periodic-job';
import { fulfilled, GroupCommit } from '../../../shared/storage/group-commit';
import type { Logger } from '../../../shared/logging/logger';
import { silentLogger } from '../../../shared/logging/logger';
import {
  CommitNotifier,
  type CommittedListener,
  type InboxStoreProtocol,
  type MessageMutationResult,
  type MessagePage,
  type MessagePageQuery,
  type NewInboxMessage,
  type StoredInboxEvent,
} from './store';
import type { InboxEventType, InboxMessage } from './types';

/** The PostgreSQL channel every inbox mutation notifies, with payload `{"userId": ..., "seq": ...}`. */
export const INBOX_EVENTS_CHANNEL = 'inbox_events';

/** Tuning of DatabaseInboxStore. */
export interface DatabaseInboxStoreOptions {
  logger?: Logger;
  /** Most sends committed in one transaction (default 256). */
  maxBatchSize?: number;
  /** Send transactions in flight at once (default 2; always 1 on PGlite, which has one connection). */
  maxConcurrentBatches?: number;
}

interface MessageRow {
  id: string;
  user_id: string;
  title: string;
  body: string;
  metadata: Record<string, unknown> | string;
  read_at: Date | string | null;
  created_at: Date | string;
  created_key?: string;
}

interface EventRow {
  seq: number | string;
  user_id: string;
  type: InboxEventType;
  message_id: string | null;
  unread_count: number | string;
  payload: SentPayload | string | null;
  created_at: Date | string;
}

/** What a `sent` event row carries, so a replay can show the message even after it changed. */
interface SentPayload {
  id: string;
  userId: string;
  title: string;
  body: string;
  metadata: Record<string, unknown>;
  createdAt: string;
}

const DEADLOCK = '40P01';
const MESSAGE_COLUMNS = `id, user_id, title, body, metadata, read_at, created_at,
  to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS created_key`;

function rowToMessage(row: MessageRow): InboxMessage {
  return {
    id: row.id,
    userId: row.user_id,
    title: row.title,
    body: row.body,
    metadata: jsonColumn(row.metadata),
    readAt: row.read_at === null ? null : toDate(row.read_at),
    createdAt: toDate(row.created_at),
  };
}

function rowToEvent(row: EventRow): StoredInboxEvent {
  const payload = row.payload === null ? null : jsonColumn(row.payload);
  return {
    seq: toNumber(row.seq),
    type: row.type,
    userId: row.user_id,
    messageId: row.message_id,
    message:
      row.type === 'sent' && payload
        ? {
            id: payload.id,
            userId: payload.userId,
            title: payload.title,
            body: payload.body,
            metadata: payload.metadata,
            readAt: null,
            createdAt: new Date(payload.createdAt),
          }
        : null,
    unreadCount: toNumber(row.unread_count),
    occurredAt: toDate(row.created_at),
  };
}

/** The knex-backed InboxStoreProtocol (PostgreSQL or PGlite). Run the notification migrations first. */
export class DatabaseInboxStore implements InboxStoreProtocol {
  readonly backend = 'database' as const;
  private readonly log: Logger;
  private readonly notifier: CommitNotifier;
  private readonly isPglite: boolean;
  private readonly lease: DatabaseJobLease;
  private readonly sends: GroupCommit<NewInboxMessage, { message: InboxMessage; event: StoredInboxEvent }>;

  constructor(
    private readonly knex: Knex,
    options: DatabaseInboxStoreOptions = {},
  ) {
    this.log = (options.logger ?? silentLogger()).child({ component: 'inbox-store', backend: 'database' });
    this.notifier = new CommitNotifier((err) => this.log.error({ err }, 'commit listener failed'));
    this.isPglite = databaseEngine(knex) === 'pglite';
    this.sends = new GroupCommit({
      flush: (batch) => this.flush(batch),
      maxBatchSize: Math.max(1, options.maxBatchSize ?? 256),
      maxConcurrentFlushes: this.isPglite ? 1 : Math.max(1, options.maxConcurrentBatches ?? 2),
    });
    this.lease = new DatabaseJobLease(knex, { table: 'inbox_maintenance', logger: options.logger });
  }

  /** Group-committed (shared/storage/group-commit): the sends of one turn share a transaction. */
  send(message: NewInboxMessage): Promise<{ message: InboxMessage; event: StoredInboxEvent }> {
    return this.sends.add(message);
  }

  /** One transaction for a batch of sends; an error fails the whole batch (the batcher answers every caller). */
  private async flush(
    batch: readonly NewInboxMessage[],
  ): Promise<PromiseSettledResult<{ message: InboxMessage; event: StoredInboxEvent }>[]> {
    const results = await this.retryOnDeadlock(() =>
      this.knex.transaction((trx) => this.sendBatch(trx, batch)),
    );
    for (const r of results) this.notifier.emit(r.event.userId, r.event.seq);
    return fulfilled(results);
  }

  private async sendBatch(
    trx: Knex.Transaction,
    messages: readonly NewInboxMessage[],
  ): Promise<{ message: InboxMessage; event: StoredInboxEvent }[]> {
    const userIds = [...new Set(messages.map((m) => m.userId))];
    await this.lockUsers(trx, userIds);
    const insert = messages.map((m) => ({
      id: m.id,
      user_id: m.userId,
      title: m.title,
      body: m.body,
      metadata: m.metadata,
      created_at: m.createdAt.toISOString(),
    }));
    // The SELECT sees the snapshot from before the CTE's insert: these are the counts before the batch.
    const before = rows<{ user_id: string; unread: number | string }>(
      await trx.raw(
        `WITH ins AS (
           INSERT INTO inbox_messages (id, user_id, title, body, metadata, created_at)
           SELECT r.id, r.user_id, r.title, r.body, r.metadata, r.created_at
           FROM jsonb_to_recordset(?::jsonb)
             AS r(id uuid, user_id text, title text, body text, metadata jsonb, created_at timestamptz)
           RETURNING 1)
         SELECT user_id, count(*) AS unread FROM inbox_messages
         WHERE user_id IN (SELECT jsonb_array_elements_text(?::jsonb)) AND read_at IS NULL
         GROUP BY user_id`,
        [JSON.stringify(insert), JSON.stringify(userIds)],
      ),
    );
    const unread = new Map<string, number>(userIds.map((u) => [u, 0]));
    for (const r of before) unread.set(r.user_id, toNumber(r.unread));
    const events = messages.map((m, i) => {
      const count = unread.get(m.userId)! + 1;
      unread.set(m.userId, count);
      const payload: SentPayload = {
        id: m.id,
        userId: m.userId,
        title: m.title,
        body: m.body,
        metadata: m.metadata,
        createdAt: m.createdAt.toISOString(),
      };
      return {
        i,
        user_id: m.userId,
        message_id: m.id,
        unread_count: count,
        payload,
        created_at: m.createdAt.toISOString(),
      };
    });
    const inserted = rows<EventRow>(
      await trx.raw(
        `WITH ev AS (
           INSERT INTO inbox_events (user_id, type, message_id, unread_count, payload, created_at)
           SELECT r.user_id, 'sent', r.message_id, r.unread_count, r.payload, r.created_at
           FROM jsonb_to_recordset(?::jsonb)
             AS r(i int, user_id text, message_id uuid, unread_count int, payload jsonb, created_at timestamptz)
           ORDER BY r.i
           RETURNING seq, user_id, type, message_id, unread_count, payload, created_at)
         SELECT ev.*, pg_notify(?, json_build_object('userId', ev.user_id, 'seq', ev.seq)::text) AS notified
         FROM ev`,
        [JSON.stringify(events), INBOX_EVENTS_CHANNEL],
      ),
    );
    const byMessage = new Map(inserted.map((r) => [r.message_id, rowToEvent(r)]));
    return messages.map((m) => ({
      message: { ...m, metadata: m.metadata, readAt: null },
      event: byMessage.get(m.id)!,
    }));
  }

  /** Takes the users' advisory locks in one fixed order, so two batches never wait on each other in a cycle. */
  private async lockUsers(trx: Knex.Transaction, userIds: string[]): Promise<void> {
    if (userIds.length === 1) {
      await trx.raw('SELECT pg_advisory_xact_lock(hashtext(?::text))', [userIds[0]!]);
      return;
    }
    await trx.raw(
      `SELECT pg_advisory_xact_lock(k) FROM (
         SELECT DISTINCT hashtext(u) AS k FROM jsonb_array_elements_text(?::jsonb) AS u ORDER BY k
       ) AS keys`,
      [JSON.stringify(userIds)],
    );
  }

  private async retryOnDeadlock<T>(work: () => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await work();
      } catch (err) {
        // The ordered locking makes this unlikely; a retry is the standard answer when it happens.
        if ((err as { code?: string }).code !== DEADLOCK || attempt >= 3) throw err;
        this.log.warn({ attempt }, 'inbox batch hit a deadlock; retrying');
      }
    }
  }

  /** Runs one user's mutation in a transaction holding that user's advisory lock; emits its event. */
  private async mutate<T extends { event: StoredInboxEvent | null }>(
    userId: string,
    work: (trx: Knex.Transaction) => Promise<T>,
  ): Promise<T> {
    const result = await this.knex.transaction(async (trx) => {
      await trx.raw('SELECT pg_advisory_xact_lock(hashtext(?::text))', [userId]);
      return work(trx);
    });
    if (result.event) this.notifier.emit(userId, result.event.seq);
    return result;
  }

  /** Appends an event whose unread count is the user's count as of this statement, and notifies. */
  private async appendEvent(
    trx: Knex.Transaction,
    userId: string,
    type: InboxEventType,
    messageId: string | null,
    at: Date,
  ): Promise<StoredInboxEvent> {
    const [row] = rows<EventRow>(
      await trx.raw(
        `WITH ev AS (
           INSERT INTO inbox_events (user_id, type, message_id, unread_count, payload, created_at)
           VALUES (?, ?, ?,
             (SELECT count(*) FROM inbox_messages WHERE user_id = ? AND read_at IS NULL), NULL, ?)
           RETURNING seq, user_id, type, message_id, unread_count, payload, created_at)
         SELECT ev.*, pg_notify(?, json_build_object('userId', ev.user_id, 'seq', ev.seq)::text) AS notified
         FROM ev`,
        [userId, type, messageId, userId, at.toISOString(), INBOX_EVENTS_CHANNEL],
      ),
    );
    return rowToEvent(row!);
  }

  private async unreadIn(db: Knex | Knex.Transaction, userId: string): Promise<number> {
    const [row] = rows<{ n: number | string }>(
      await db.raw('SELECT count(*) AS n FROM inbox_messages WHERE user_id = ? AND read_at IS NULL', [
        userId,
      ]),
    );
    return toNumber(row?.n);
  }

  async listMessages(query: MessagePageQuery): Promise<MessagePage> {
    const bindings: unknown[] = [query.userId];
    let sql = `SELECT ${MESSAGE_COLUMNS} FROM inbox_messages WHERE user_id = ?`;
    if (query.unreadOnly) sql += ' AND read_at IS NULL';
    if (query.after) {
      sql += ' AND (created_at, id) < (?::timestamptz, ?::uuid)';
      bindings.push(query.after.createdAt, query.after.id);
    }
    sql += ' ORDER BY created_at DESC, id DESC LIMIT ?';
    bindings.push(query.limit + 1);
    const found = rows<MessageRow>(await this.knex.raw(sql, bindings as Knex.RawBinding[]));
    const page = found.slice(0, query.limit);
    const last = page[page.length - 1];
    return {
      messages: page.map(rowToMessage),
      nextKey: found.length > query.limit && last ? { createdAt: last.created_key!, id: last.id } : null,
    };
  }

  countUnread(userId: string): Promise<number> {
    return this.unreadIn(this.knex, userId);
  }

  async markRead(userId: string, messageId: string, at: Date): Promise<MessageMutationResult> {
    const { result } = await this.mutate(userId, async (trx) => {
      const updated = rows<{ id: string }>(
        await trx.raw(
          `UPDATE inbox_messages SET read_at = ? WHERE id = ? AND user_id = ? AND read_at IS NULL RETURNING id`,
          [at.toISOString(), messageId, userId],
        ),
      );
      if (updated.length > 0) {
        const event = await this.appendEvent(trx, userId, 'read', messageId, at);
        return { event, result: { found: true, unreadCount: event.unreadCount } };
      }
      const [row] = rows<{ found: boolean; n: number | string }>(
        await trx.raw(
          `SELECT EXISTS (SELECT 1 FROM inbox_messages WHERE id = ? AND user_id = ?) AS found,
             (SELECT count(*) FROM inbox_messages WHERE user_id = ? AND read_at IS NULL) AS n`,
          [messageId, userId, userId],
        ),
      );
      return { event: null, result: { found: Boolean(row?.found), unreadCount: toNumber(row?.n) } };
    });
    return result;
  }

  async markAllRead(userId: string, at: Date): Promise<{ updated: number; unreadCount: number }> {
    const { result } = await this.mutate(userId, async (trx) => {
      const updated = rows<{ id: string }>(
        await trx.raw(
          'UPDATE inbox_messages SET read_at = ? WHERE user_id = ? AND read_at IS NULL RETURNING id',
          [at.toISOString(), userId],
        ),
      ).length;
      const event = updated > 0 ? await this.appendEvent(trx, userId, 'all_read', null, at) : null;
      return { event, result: { updated, unreadCount: 0 } };
    });
    return result;
  }

  async deleteMessage(userId: string, messageId: string, at: Date): Promise<MessageMutationResult> {
    const { result } = await this.mutate(userId, async (trx) => {
      const deleted = rows<{ id: string }>(
        await trx.raw('DELETE FROM inbox_messages WHERE id = ? AND user_id = ? RETURNING id', [
          messageId,
          userId,
        ]),
      );
      if (deleted.length === 0) {
        return { event: null, result: { found: false, unreadCount: await this.unreadIn(trx, userId) } };
      }
      // Erasure: the `sent` event keeps its ids and type, not the content.
      await trx.raw(
        'UPDATE inbox_events SET payload = NULL WHERE message_id = ? AND user_id = ? AND payload IS NOT NULL',
        [messageId, userId],
      );
      const event = await this.appendEvent(trx, userId, 'deleted', messageId, at);
      return { event, result: { found: true, unreadCount: event.unreadCount } };
    });
    return result;
  }

  async clearAll(userId: string, at: Date): Promise<{ deleted: number }> {
    const { result } = await this.mutate(userId, async (trx) => {
      const deleted = rows<{ id: string }>(
        await trx.raw('DELETE FROM inbox_messages WHERE user_id = ? RETURNING id', [userId]),
      ).length;
      if (deleted > 0) {
        await trx.raw('UPDATE inbox_events SET payload = NULL WHERE user_id = ? AND payload IS NOT NULL', [
          userId,
        ]);
      }
      const event = deleted > 0 ? await this.appendEvent(trx, userId, 'cleared', null, at) : null;
      return { event, result: { deleted } };
    });
    return result;
  }

  async eventsAfter(userId: string, afterSeq: number, limit: number): Promise<StoredInboxEvent[]> {
    const found = rows<EventRow>(
      await this.knex.raw(
        `SELECT seq, user_id, type, message_id, unread_count, payload, created_at FROM inbox_events
         WHERE user_id = ? AND seq > ? ORDER BY seq LIMIT ?`,
        [userId, afterSeq, limit],
      ),
    );
    return found.map(rowToEvent);
  }

  async latestSeq(userId: string): Promise<number> {
    const [row] = rows<{ seq: number | string | null }>(
      // GREATEST skips NULLs: the newest kept event, or the purge horizon when everything is purged.
      await this.knex.raw(
        `SELECT GREATEST(
           (SELECT max(seq) FROM inbox_events WHERE user_id = ?),
           (SELECT purged_through FROM inbox_event_horizon WHERE user_id = ?)) AS seq`,
        [userId, userId],
      ),
    );
    return toNumber(row?.seq ?? 0);
  }

  async purgedThrough(userId: string): Promise<number> {
    const [row] = rows<{ seq: number | string }>(
      await this.knex.raw('SELECT purged_through AS seq FROM inbox_event_horizon WHERE user_id = ?', [
        userId,
      ]),
    );
    return toNumber(row?.seq ?? 0);
  }

  async purgeBatch(cutoff: Date, limit: number): Promise<{ messages: number; events: number }> {
    const iso = cutoff.toISOString();
    const messages = rows<{ id: string }>(
      await this.knex.raw(
        `DELETE FROM inbox_messages WHERE id IN (
           SELECT id FROM inbox_messages WHERE created_at < ? ORDER BY created_at LIMIT ?) RETURNING id`,
        [iso, limit],
      ),
    ).length;
    // inbox_events is partitioned by UTC week (migration 20261129100000): whole weeks before the
    // cutoff are dropped; row by row only the DEFAULT partition's rows (a week without a partition).
    // The rows of the cutoff's own week stay until the week is over (at most a week past retention).
    const dropped = await this.dropEventPartitions(cutoff);
    // The horizon moves in the same statement as the delete, so a watcher never sees the gap
    // without the horizon that explains it.
    const [counted] = rows<{ n: number | string }>(
      await this.knex.raw(
        `WITH del AS (
           DELETE FROM inbox_events WHERE (seq, created_at) IN (
             SELECT seq, created_at FROM inbox_events_default WHERE created_at < ? ORDER BY created_at LIMIT ?)
           RETURNING user_id, seq),
         horizon AS (
           INSERT INTO inbox_event_horizon (user_id, purged_through)
           SELECT user_id, max(seq) FROM del GROUP BY user_id
           ON CONFLICT (user_id) DO UPDATE
             SET purged_through = GREATEST(inbox_event_horizon.purged_through, EXCLUDED.purged_through)
           RETURNING 1)
         SELECT (SELECT count(*) FROM del) AS n, (SELECT count(*) FROM horizon) AS h`,
        [iso, limit],
      ),
    );
    return { messages, events: dropped + toNumber(counted?.n ?? 0) };
  }

  /**
   * Drops the week partitions of inbox_events that end at or before `cutoff` (oldest first), each
   * user's horizon moved to the highest seq dropped in the same transaction; returns the events gone.
   * The partitions of the days ahead are made by the delivery retention job (ensurePartitions).
   */
  private async dropEventPartitions(cutoff: Date): Promise<number> {
    let dropped = 0;
    for (const part of await timePartitions(this.knex, 'inbox_events')) {
      if (part.to > cutoff) break;
      dropped += await this.knex.transaction(async (trx) => {
        await trx.raw("SET LOCAL lock_timeout = '2s'");
        await trx.raw('LOCK TABLE inbox_events IN ACCESS EXCLUSIVE MODE');
        const [counted] = rows<{ n: number | string }>(
          await trx.raw(
            `WITH horizon AS (
               INSERT INTO inbox_event_horizon (user_id, purged_through)
               SELECT user_id, max(seq) FROM ${part.name} GROUP BY user_id
               ON CONFLICT (user_id) DO UPDATE
                 SET purged_through = GREATEST(inbox_event_horizon.purged_through, EXCLUDED.purged_through))
             SELECT count(*) AS n FROM ${part.name}`,
          ),
        );
        await trx.raw(`DROP TABLE ${part.name}`);
        return toNumber(counted?.n ?? 0);
      });
    }
    return dropped;
  }

  runMaintenance(job: string, now: Date, minIntervalMs: number, fn: () => Promise<void>): Promise<boolean> {
    return this.lease.runIfDue(job, now, minIntervalMs, fn);
  }

  async ping(): Promise<void> {
    await this.knex.raw('SELECT 1');
  }

  onCommitted(listener: CommittedListener): () => void {
    return this.notifier.add(listener);
  }
}
