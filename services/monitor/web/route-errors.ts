/**
 * The answer of a status-page route whose work failed: a domain error with its code, a database
 * that cannot be reached `unavailable` (503, retry later: what the RPCs answer, shared/rpc/errors.ts),
 * anything else a generic `internal` whose cause goes to the log only. Earlier a stopped PostgreSQL
 * made `/status/alerts.json` answer 500 `internal`, as if the monitor had a bug (a black-box probe).
 * shared/http has no such mapping of its own; when it gains one, this file gives way to it.
 */
import type { ServerResponse } from 'node:http';
import { describeDomainError, sendJsonError } from '../../../shared/http/errors';
import type { Logger } from '../../../shared/logging/logger';
import { DATABASE_UNAVAILABLE_MESSAGE } from '../../../shared/rpc/errors';
import { isDatabaseUnavailable } from '../../../shared/storage/unavailable';

/** Answers `err` on `res` (see the file comment); `what` names the route in the log. */
export function sendRouteError(
  res: ServerResponse,
  err: unknown,
  logger: Logger,
  what: Record<string, unknown>,
  headers: Record<string, string>,
): void {
  const known = describeDomainError(err);
  if (known) {
    sendJsonError(res, known.code, known.message, { headers });
  } else if (isDatabaseUnavailable(err)) {
    logger.warn({ err, ...what }, 'status page: database unavailable');
    sendJsonError(res, 'unavailable', DATABASE_UNAVAILABLE_MESSAGE, { headers });
  } else {
    logger.error({ err, ...what }, 'status page route failed');
    sendJsonError(res, 'internal', 'internal error', { headers });
  }
}
