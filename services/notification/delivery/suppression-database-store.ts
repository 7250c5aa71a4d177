/**
 * DatabaseSuppressionStore: the suppression list in PostgreSQL (pg) or the embedded PGlite, through
 * knex (table `suppressions`, migration 20261123100000_suppressions). One row per (channel,
 * recipient); adding an existing one is a no-op (`ON CONFLICT DO NOTHING`), so concurrent adds from
 * several replicas and receipts agree on one entry.
 */
import type { Knex } from 'knex';
import { databaseEngine, rows } from '../../../shared/storage/database';
import { behindPooler } from '../../../shared/storage/session';
import type { Channel } from './driver';
import {
  DEFAULT_SUPPRESSION_LOOKUP_TIMEOUT_MS,
  SuppressionLookupError,
  type SuppressionEntry,
  type SuppressionPage,
  type SuppressionPageQuery,
  type SuppressionReason,
  type SuppressionStore,
} from './suppression';

/** Options of DatabaseSuppressionStore. */
export interface DatabaseSuppressionStoreOptions {
  /**
   * On PostgreSQL, a statement of this store (every one: lookups, inserts, deletes, reasons, pages)
   * still running after this long is cancelled in the server (knex `.timeout(ms, { cancel: true })`:
   * `pg_cancel_backend` from a separate connection) and answers SuppressionLookupError `timeout`.
   * Default DEFAULT_SUPPRESSION_LOOKUP_TIMEOUT_MS. Not on PGlite (see the constructor).
   */
  lookupTimeoutMs?: number;
}

interface SuppressionRow {
  id: string;
  channel: Channel;
  recipient: string;
  reason: SuppressionReason;
  source: string;
  created_at: Date | string;
}

function toEntry(row: SuppressionRow): SuppressionEntry {
  return {
    id: row.id,
    channel: row.channel,
    recipient: row.recipient,
    reason: row.reason,
    source: row.source,
    createdAt: row.created_at instanceof Date ? row.created_at : new Date(row.created_at),
  };
}

/** The knex-backed SuppressionStore. Run the notification migrations first. */
export class DatabaseSuppressionStore implements SuppressionStore {
  readonly backend = 'database' as const;

  private readonly lookupTimeoutMs: number | undefined;
  private readonly cancelOnTimeout: boolean;

  constructor(
    private readonly knex: Knex,
    options: DatabaseSuppressionStoreOptions = {},
  ) {
    // PGlite cannot cancel a statement: knex's cancel opens "another connection", which on PGlite is
    // the one database, and closes it afterwards; without cancel, knex disposes of the timed-out
    // connection, which closes PGlite as well. There the caller's wait is bounded instead
    // (Suppressions `lookupTimeoutMs`) and the query ends when the one connection is free.
    this.lookupTimeoutMs =
      databaseEngine(knex) === 'postgres'
        ? (options.lookupTimeoutMs ?? DEFAULT_SUPPRESSION_LOOKUP_TIMEOUT_MS)
        : undefined;
    // Behind a transaction pooler knex's cancel (`pg_cancel_backend` of the pooler's made-up process
    // id) cancels nothing and hands the connection back with the blocked statement still on it: every
    // later statement on it would wait behind the lock. Without cancel, knex drops the timed-out
    // connection instead (the pooler then ends the server's side).
    this.cancelOnTimeout = !behindPooler(knex);
  }

  async add(entry: SuppressionEntry): Promise<{ entry: SuppressionEntry; created: boolean }> {
    const [inserted] = rows<SuppressionRow>(
      await this.bounded(
        `INSERT INTO suppressions (id, channel, recipient, reason, source, created_at)
         VALUES (?, ?, ?, ?, ?, ?)
         ON CONFLICT (channel, recipient) DO NOTHING
         RETURNING *`,
        [entry.id, entry.channel, entry.recipient, entry.reason, entry.source, entry.createdAt.toISOString()],
      ),
    );
    if (inserted) return { entry: toEntry(inserted), created: true };
    // ON CONFLICT waited for the competing insert to commit: the winner is visible now. It may also
    // have been removed in between; then this add simply lost to that removal.
    const [existing] = rows<SuppressionRow>(
      await this.bounded('SELECT * FROM suppressions WHERE channel = ? AND recipient = ?', [
        entry.channel,
        entry.recipient,
      ]),
    );
    return { entry: existing ? toEntry(existing) : entry, created: false };
  }

  async remove(
    channel: Channel,
    recipient: string,
    keepReasons: readonly SuppressionReason[] = [],
  ): Promise<boolean> {
    const removed = rows<{ id: string }>(
      await this.bounded(
        `DELETE FROM suppressions
         WHERE channel = ? AND recipient = ? AND reason <> ALL(SELECT jsonb_array_elements_text(?::jsonb))
         RETURNING id`,
        [channel, recipient, JSON.stringify(keepReasons)],
      ),
    );
    return removed.length > 0;
  }

  async findSuppressed(channel: Channel, recipients: readonly string[]): Promise<Set<string>> {
    if (recipients.length === 0) return new Set();
    // `= ANY(array)`, not `IN (SELECT jsonb_array_elements_text(...))`: the same lookup by the unique
    // (channel, recipient) index, but a semi-join over a set-returning function took PostgreSQL 0.2 ms
    // to plan on every call (pg_stat_statements.track_planning on the email bench), ten times the
    // execution; the array form plans in a fraction of that.
    const result = await this.bounded(
      'SELECT recipient FROM suppressions WHERE channel = ? AND recipient = ANY(?::text[])',
      [channel, [...recipients]],
    );
    return new Set(rows<{ recipient: string }>(result).map((r) => r.recipient));
  }

  /**
   * THE statement bound of this store: runs `sql` and, on PostgreSQL, cancels it after
   * `lookupTimeoutMs` (behind a pooler: drops its connection instead, see the constructor), answering
   * SuppressionLookupError `timeout`. A cancelled INSERT or DELETE is rolled back (each statement is
   * its own transaction), so a timed-out add or removal did not happen unless it had committed
   * already; both are idempotent, so the caller's retry agrees either way.
   */
  private async bounded(sql: string, bindings: readonly Knex.RawBinding[]): Promise<unknown> {
    const query = this.knex.raw(sql, bindings as Knex.RawBinding[]);
    const ms = this.lookupTimeoutMs;
    try {
      return await (ms === undefined ? query : query.timeout(ms, { cancel: this.cancelOnTimeout }));
    } catch (err) {
      // knex's timeout error (or its failed cancel) carries `timeout`, and the SQL with its bindings:
      // the recipients. Answer a clean one.
      if (ms !== undefined && typeof (err as { timeout?: unknown } | null)?.timeout === 'number') {
        throw new SuppressionLookupError('timeout', `suppression list statement cancelled after ${ms} ms`);
      }
      throw err;
    }
  }

  async reasonsOf(channel: Channel, recipients: readonly string[]): Promise<Map<string, SuppressionReason>> {
    if (recipients.length === 0) return new Map();
    const found = rows<{ recipient: string; reason: SuppressionReason }>(
      await this.bounded(
        'SELECT recipient, reason FROM suppressions WHERE channel = ? AND recipient = ANY(?::text[])',
        [channel, [...recipients]],
      ),
    );
    return new Map(found.map((r) => [r.recipient, r.reason]));
  }

  async list(query: SuppressionPageQuery): Promise<SuppressionPage> {
    const where: string[] = [];
    const bindings: Knex.RawBinding[] = [];
    if (query.channel !== undefined) {
      where.push('channel = ?');
      bindings.push(query.channel);
    }
    if (query.after) {
      where.push('(created_at, id) < (?::timestamptz, ?::uuid)');
      bindings.push(query.after.createdAt, query.after.id);
    }
    bindings.push(query.limit + 1);
    const found = rows<SuppressionRow>(
      await this.bounded(
        `SELECT * FROM suppressions ${where.length ? `WHERE ${where.join(' AND ')}` : ''}
         ORDER BY created_at DESC, id DESC LIMIT ?`,
        bindings,
      ),
    ).map(toEntry);
    const page = found.slice(0, query.limit);
    const last = page[page.length - 1];
    return {
      entries: page,
      nextKey:
        found.length > query.limit && last ? { createdAt: last.createdAt.toISOString(), id: last.id } : null,
    };
  }
}
