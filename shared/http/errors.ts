/**
 * The one JSON error body of every gateway route on the HTTP port, `{"error":{"code","message"}}`,
 * and the one table from an error code to its HTTP status.
 *
 * Codes are the Connect protocol's names (`invalid_argument`, `not_found`, ...), so a client reads the
 * same vocabulary from a gateway route as from an RPC. HTTP-only answers use the nearest Connect
 * code: 404 for an unknown path is `not_found`, 405 for a known path with the wrong method is
 * `unimplemented` (the resource does not implement that method; `Allow` lists those it does), 429 is
 * `resource_exhausted`, 500 `internal`. Connect protocol responses (RPCs on the HTTP port) keep
 * Connect's own error format, as the protocol requires.
 */
import { STATUS_CODES, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { isDomainError, type DomainErrorCode } from '../errors';
import type { Logger } from '../logging/logger';
import { DATABASE_UNAVAILABLE_MESSAGE, isDatabaseUnavailable } from '../storage/unavailable';
import { sendJson } from './json';

/** Connect error code names, indexed by their numeric code (which equals the gRPC status code). */
const CODE_NAMES = [
  'ok',
  'canceled',
  'unknown',
  'invalid_argument',
  'deadline_exceeded',
  'not_found',
  'already_exists',
  'permission_denied',
  'resource_exhausted',
  'failed_precondition',
  'aborted',
  'out_of_range',
  'unimplemented',
  'internal',
  'unavailable',
  'data_loss',
  'unauthenticated',
] as const;

/** A Connect error code name (`ok` included, for metrics). */
export type ErrorCodeName = (typeof CODE_NAMES)[number];

/** HTTP status of each code, as the Connect protocol maps them. */
const STATUS: Readonly<Record<ErrorCodeName, number>> = {
  ok: 200,
  canceled: 499,
  unknown: 500,
  invalid_argument: 400,
  deadline_exceeded: 504,
  not_found: 404,
  already_exists: 409,
  permission_denied: 403,
  resource_exhausted: 429,
  failed_precondition: 400,
  aborted: 409,
  out_of_range: 400,
  unimplemented: 501,
  internal: 500,
  unavailable: 503,
  data_loss: 500,
  unauthenticated: 401,
};

/** The name of a numeric code (a Connect `Code` or a gRPC status code). */
export function connectCodeName(code: number): ErrorCodeName {
  return CODE_NAMES[code] ?? 'unknown';
}

/** The numeric code of a code name: the gRPC status number (google.rpc.Status.code), = Connect `Code`. */
export function grpcCodeOf(name: ErrorCodeName): number {
  return CODE_NAMES.indexOf(name);
}

/** HTTP status for a numeric code (a Connect `Code` or a gRPC status code). */
export function httpStatusForCode(code: number): number {
  return STATUS[connectCodeName(code)];
}

/** HTTP status of a code name. */
export function httpStatusOf(code: ErrorCodeName): number {
  return STATUS[code];
}

/** The code name of a domain error code (`NOT_FOUND` -> `not_found`). */
export function codeOfDomainError(code: DomainErrorCode): ErrorCodeName {
  return code.toLowerCase() as ErrorCodeName;
}

/**
 * The HTTP answer of an error of the ladder (shared/errors): status, code name and its caller-safe
 * message; undefined for anything else (the caller answers a generic 500 and logs the cause).
 */
export function describeDomainError(
  err: unknown,
): { status: number; code: ErrorCodeName; message: string } | undefined {
  if (!isDomainError(err)) return undefined;
  const code = codeOfDomainError(err.code);
  return { status: STATUS[code], code, message: err.message };
}

/**
 * What a gateway route answers for an error its work threw, as an RPC would (shared/rpc/errors.ts):
 * a domain error its code and message; a database that cannot be reached `unavailable` (503: retry
 * later; before, a stopped PostgreSQL made the pages answer 500 as if they had a bug); anything else
 * `internal` with a generic message, the cause for the log only. `log` says how the route logs it:
 * `error` for a bug, `warn` for a dependency outage (a domain error of status 5xx included), nothing
 * for a caller's mistake.
 */
export function describeRouteError(err: unknown): {
  status: number;
  code: ErrorCodeName;
  message: string;
  log?: 'warn' | 'error';
} {
  const known = describeDomainError(err);
  if (known) return known.status >= 500 ? { ...known, log: 'warn' } : known;
  if (isDatabaseUnavailable(err))
    return {
      status: STATUS.unavailable,
      code: 'unavailable',
      message: DATABASE_UNAVAILABLE_MESSAGE,
      log: 'warn',
    };
  return { status: STATUS.internal, code: 'internal', message: 'internal error', log: 'error' };
}

/**
 * Answers `err` on a gateway route with `describeRouteError`'s code and message (JSON error body),
 * logged as it says with `context` (which route, which request).
 */
export function sendRouteError(
  res: ServerResponse,
  err: unknown,
  logger: Logger,
  context: Record<string, unknown>,
  headers?: Record<string, string>,
): void {
  const described = describeRouteError(err);
  if (described.log === 'error') logger.error({ err, ...context }, 'route failed');
  else if (described.log === 'warn') logger.warn({ err, ...context }, 'route failed on a dependency');
  sendJsonError(res, described.code, described.message, { headers });
}

/** The JSON error body. */
export interface ErrorBody {
  error: { code: ErrorCodeName; message: string };
}

/**
 * Writes `{"error":{"code","message"}}`, with the code's HTTP status unless `status` says otherwise
 * (405 `unimplemented`). When the response has begun already, the connection is cut instead: a
 * second head would corrupt it.
 */
export function sendJsonError(
  res: ServerResponse,
  code: ErrorCodeName,
  message: string,
  options: { status?: number; headers?: Record<string, string> } = {},
): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const body: ErrorBody = { error: { code, message } };
  sendJson(res, options.status ?? STATUS[code], body, options.headers);
}

/**
 * The answer to a request Node's HTTP parser refused before any handler saw it (a method token it
 * does not know, headers over the size limit, a broken request line, a request not received in
 * time): the same JSON error body as every other answer, where Node would send a bare status line.
 * For the server's `clientError` event; the connection closes after it.
 */
export function answerClientError(err: Error & { code?: string }, socket: Duplex): void {
  const inFlight = (socket as Duplex & { _httpMessage?: ServerResponse })._httpMessage;
  if (err.code === 'ECONNRESET' || !socket.writable || inFlight?.headersSent) {
    socket.destroy();
    return;
  }
  const [status, code, message]: [number, ErrorCodeName, string] =
    err.code === 'HPE_HEADER_OVERFLOW'
      ? [431, 'resource_exhausted', 'request headers too large']
      : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? [408, 'deadline_exceeded', 'the request was not received in time']
        : [400, 'invalid_argument', 'malformed HTTP request'];
  const body = JSON.stringify({ error: { code, message } } satisfies ErrorBody);
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}
