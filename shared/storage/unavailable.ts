/**
 * Telling a database outage from a failed query: the one rule the RPC layer uses to answer
 * UNAVAILABLE (retry later) instead of INTERNAL while PostgreSQL is down or restarting. No imports,
 * so the RPC kit can use it without loading a database driver.
 */
// SQLSTATE classes and codes that say the server is gone or not accepting work, not that the query
// was wrong: 08 connection exception, 57P01-57P03 admin/crash shutdown and "cannot connect now", and
// 57014 query cancelled: past `database.statement_timeout_ms` (a lock held elsewhere, an overloaded
// server) or cancelled by an operator; 25P03: a transaction idle past
// `database.idle_in_transaction_timeout_ms` was ended with its session (rolled back). The same work
// may well pass on a retry.
const UNAVAILABLE_SQLSTATE = /^(?:08...|57P0[123]|57014|25P03)$/;
// Socket errors of a server that is down or went away while a query ran.
const UNAVAILABLE_SOCKET = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH']);

/** What a caller is told while the database cannot be reached (UNAVAILABLE / 503): retry later. */
export const DATABASE_UNAVAILABLE_MESSAGE = 'the database is unavailable; retry later';

/**
 * True when `err` (from knex / pg) means the database cannot be reached right now: the server is
 * down, restarting, or cut the session. Callers answer UNAVAILABLE (retry later) instead of INTERNAL.
 */
export function isDatabaseUnavailable(err: unknown): boolean {
  // Duck-typed, not `instanceof Error`: errors made in another realm (a vm context) are errors too.
  for (let e: unknown = err, depth = 0; typeof e === 'object' && e !== null && depth < 5; depth++) {
    const { code, name, message } = e as { code?: unknown; name?: unknown; message?: unknown };
    if (typeof code === 'string' && (UNAVAILABLE_SQLSTATE.test(code) || UNAVAILABLE_SOCKET.has(code))) {
      return true;
    }
    // knex gives up waiting for a pool connection; pg reports a session that ended under it (knex
    // puts the SQL in front: "COMMIT; - Client has encountered a connection error ...").
    if (name === 'KnexTimeoutError') return true;
    if (
      typeof message === 'string' &&
      /Connection terminated|Client has encountered a connection error/.test(message)
    ) {
      return true;
    }
    // AggregateError (connect to every address failed) and wrapped causes.
    const inner = (e as AggregateError).errors?.[0] ?? (e as { cause?: unknown }).cause;
    e = inner;
  }
  return false;
}
