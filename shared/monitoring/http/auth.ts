/**
 * Auth and small response helpers of the health and metrics endpoints.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createTokenMatcher, parseBearer } from '../../auth/bearer';
import { sendJsonError } from '../../http/errors';

/** True when no token is configured or the request carries `Authorization: Bearer <token>`. */
export function isAuthorized(req: IncomingMessage, token: string | null | undefined): boolean {
  if (!token) return true;
  const given = parseBearer(req.headers.authorization);
  return given !== undefined && createTokenMatcher([token])(given) === 0;
}

/** Answers 401 with `WWW-Authenticate: Bearer`. */
export function sendUnauthorized(res: ServerResponse): void {
  sendJsonError(res, 'unauthenticated', 'a valid bearer token is required', {
    headers: { 'WWW-Authenticate': 'Bearer' },
  });
}

/** Answers 405 for methods other than GET and HEAD. */
export function sendMethodNotAllowed(res: ServerResponse): void {
  sendJsonError(res, 'unimplemented', 'method not allowed; use GET, HEAD', {
    status: 405,
    headers: { Allow: 'GET, HEAD' },
  });
}

/** Answers 404. */
export function sendNotFound(res: ServerResponse): void {
  sendJsonError(res, 'not_found', 'no such path');
}

/** The path of a request without its query string. */
export function pathOf(req: IncomingMessage): string {
  const url = req.url ?? '/';
  const q = url.indexOf('?');
  return q < 0 ? url : url.slice(0, q);
}

/**
 * A request handler that answers what `handle` serves and passes everything else to `next` or,
 * without one, answers 404 JSON. A failure of `handle` is logged and answered with a generic 500.
 */
export function chainHandler(
  handle: (req: IncomingMessage, res: ServerResponse) => Promise<boolean>,
  next: ((req: IncomingMessage, res: ServerResponse) => void) | undefined,
  onError: (err: unknown) => void,
): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    handle(req, res).then(
      (handled) => {
        if (handled) return;
        if (next) next(req, res);
        else sendNotFound(res);
      },
      (err: unknown) => {
        onError(err);
        sendJsonError(res, 'internal', 'internal error');
      },
    );
  };
}
