/**
 * The status page's chart routes (issue 29), behind the page's read check (the bearer token of
 * `/status.json`):
 * - `GET /status/targets/<name>/history?range=24h|30d`: the target's probe history as points
 *   (targets/history.ts: 24 h in 96 points of 15 minutes, 30 d in 90 points of 8 hours).
 * Unknown target: 404; a range other than `24h` / `30d`: 400 (`invalid_argument`).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { sendJsonError } from '../../../shared/http/errors';
import { sendJson } from '../../../shared/http/json';
import type { Route, RouteContext } from '../../../shared/http/routes';
import { SECURITY_HEADERS } from '../../../shared/http/security-headers';
import type { Logger } from '../../../shared/logging/logger';
import { HISTORY_RANGES, type HistoryRange, readHistory, type TargetHistoryStore } from '../targets/history';

/** What the routes need. */
export interface HistoryRoutesDeps {
  history: TargetHistoryStore;
  /** The configured target names (a name not among them is 404). */
  targetNames: () => readonly string[];
  authorizeRead(req: IncomingMessage, res: ServerResponse): boolean;
  logger: Logger;
  now?: () => number;
}

export const TARGET_HISTORY_PATH = '/status/targets/:name/history';

/** Parses `range`; null when it is not one of the ranges. */
export function parseRange(value: string | null): HistoryRange | null {
  const r = value ?? '24h';
  return Object.prototype.hasOwnProperty.call(HISTORY_RANGES, r) ? (r as HistoryRange) : null;
}

/** The routes (added to the service's table by StatusPage). */
export function historyRoutes(deps: HistoryRoutesDeps): Route[] {
  const now = deps.now ?? Date.now;
  const headers = { ...SECURITY_HEADERS };
  return [
    {
      methods: ['GET'],
      path: TARGET_HISTORY_PATH,
      handler: async (req: IncomingMessage, res: ServerResponse, ctx: RouteContext) => {
        req.resume();
        if (!deps.authorizeRead(req, res)) return;
        const range = parseRange(ctx.query.get('range'));
        if (!range) {
          sendJsonError(res, 'invalid_argument', 'range must be 24h or 30d', { headers });
          return;
        }
        const name = ctx.params.name ?? '';
        if (!deps.targetNames().includes(name)) {
          sendJsonError(res, 'not_found', 'no such target', { headers });
          return;
        }
        try {
          sendJson(
            res,
            200,
            { target: name, ...(await readHistory(deps.history, name, range, now())) },
            headers,
          );
        } catch (err) {
          deps.logger.error({ err }, 'target history read failed');
          sendJsonError(res, 'unavailable', 'history not available', { headers });
        }
      },
    },
  ];
}
