/**
 * Connections that must keep one server session: a session advisory lock (job leases, the migration
 * lock) lives as long as the connection that took it, and LISTEN hears only on its own connection. A
 * pooler in transaction mode (pgbouncer) hands each transaction to any server connection, so those
 * clients connect to `database.session_url` when it is set (the pool's `url` goes through the pooler).
 */
import type { Knex } from 'knex';
import type { ClientConfig } from 'pg';

const sessionUrls = new WeakMap<Knex, string>();

/** Records the pool's `database.session_url` (openDatabase does it). */
export function rememberSessionUrl(knex: Knex, url: string): void {
  sessionUrls.set(knex, url);
}

/**
 * The settings of a client that keeps one session: `database.session_url` when set, else the pool's,
 * without the pool's `statement_timeout` and `idle_in_transaction_session_timeout`: a session client
 * may wait on purpose (the migration lock waits for another replica's migrations, however long they
 * take) and never runs a request's query.
 */
export function sessionConnection(knex: Knex): ClientConfig | string {
  const connection = knex.client.config.connection as ClientConfig | string;
  const url = sessionUrls.get(knex);
  if (typeof connection !== 'object') return url ?? connection;
  return {
    ...connection,
    statement_timeout: undefined,
    idle_in_transaction_session_timeout: undefined,
    ...(url ? { connectionString: url } : {}),
  };
}

/**
 * True when the pool goes through a pooler (`database.session_url` is set). There a server process
 * id the pool's connections report is the pooler's own (`pg_cancel_backend` of it cancels nothing,
 * or another session's statement), so a statement is bounded by dropping its connection instead.
 */
export function behindPooler(knex: Knex): boolean {
  return sessionUrls.has(knex);
}
