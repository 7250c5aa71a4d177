/**
 * The HTTP port's gateway routes (admin endpoints, /health, /metrics, pages) are plain Node handlers
 * tried in order after Connect's own routes; each answers `true` when it handled the request.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from '../logging/logger';
import { sendJson } from '../http/json';

export type HttpRoute = (req: IncomingMessage, res: ServerResponse) => boolean | Promise<boolean>;

/** Writes a JSON error body `{error: {code, message}}` with the given status. */
export function sendJsonError(res: ServerResponse, status: number, code: string, message: string): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  sendJson(res, status, { error: { code, message } });
}

/** Runs the routes in order; 404 when none answers; 500 (generic, cause logged) when one throws. */
export function createFallback(routes: readonly HttpRoute[], logger: Logger) {
  return (req: IncomingMessage, res: ServerResponse): void => {
    void (async () => {
      try {
        for (const route of routes) {
          if (await route(req, res)) return;
        }
        sendJsonError(res, 404, 'not_found', 'no such path');
      } catch (err) {
        logger.error({ err, path: req.url }, 'unhandled error in HTTP route');
        sendJsonError(res, 500, 'internal', 'internal error');
      }
    })();
  };
}
