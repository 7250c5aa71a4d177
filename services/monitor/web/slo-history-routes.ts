/**
 * The status page's SLO chart route (issue 29), behind the page's read check (the bearer token of
 * `/status.json`):
 * - `GET /status/slos/<name>/budget`: the error-budget burn-down of a ratio SLO (or a latency SLO
 *   with a period) over its current period (slo/budget-history.ts).
 * Unknown SLO: 404; a latency SLO without a period: 400 (`failed_precondition`); a store that
 * cannot be read: 503.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { describeDomainError, sendJsonError } from '../../../shared/http/errors';
import { sendJson } from '../../../shared/http/json';
import type { Route, RouteContext } from '../../../shared/http/routes';
import { SECURITY_HEADERS } from '../../../shared/http/security-headers';
import type { Logger } from '../../../shared/logging/logger';
import type { BudgetBurnDown } from '../slo/budget-history';

/** What the route needs. */
export interface SloHistoryRoutesDeps {
  /** The burn-down of an SLO by name; null when no SLO has the name (SloArea.budgetHistory). */
  budget(name: string): Promise<BudgetBurnDown | null>;
  authorizeRead(req: IncomingMessage, res: ServerResponse): boolean;
  logger: Logger;
}

export const SLO_BUDGET_PATH = '/status/slos/:name/budget';

/** The route (added to the service's table by StatusPage). */
export function sloHistoryRoutes(deps: SloHistoryRoutesDeps): Route[] {
  const headers = { ...SECURITY_HEADERS };
  return [
    {
      methods: ['GET'],
      path: SLO_BUDGET_PATH,
      handler: async (req: IncomingMessage, res: ServerResponse, ctx: RouteContext) => {
        req.resume();
        if (!deps.authorizeRead(req, res)) return;
        const name = ctx.params.name ?? '';
        try {
          const body = await deps.budget(name);
          if (!body) {
            sendJsonError(res, 'not_found', 'no such SLO', { headers });
            return;
          }
          sendJson(res, 200, body, headers);
        } catch (err) {
          const known = describeDomainError(err);
          if (known && known.code === 'failed_precondition') {
            sendJsonError(res, known.code, known.message, { headers });
            return;
          }
          deps.logger.error({ err }, 'SLO budget read failed');
          sendJsonError(res, 'unavailable', 'SLO budget not available', { headers });
        }
      },
    },
  ];
}
