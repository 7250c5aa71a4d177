/**
 * `GET /status/escalations.json` (issue 28, O2b): each open alert's on-call escalation for the
 * status page: policy, current step, when the next is due, who was paged at each step and by which
 * channels, and who acknowledged it and how. Everything is read from the shared stores (the alerts'
 * and the escalation store), so every replica answers the same. Always registered by app.ts; without
 * escalation policies it answers `{enabled: false, escalations: []}` and the page hides its block.
 * Reads need what the page's other data routes need.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { sendJson } from '../../../shared/http/json';
import type { Route } from '../../../shared/http/routes';
import { SECURITY_HEADERS } from '../../../shared/http/security-headers';
import type { Logger } from '../../../shared/logging/logger';
import type { AlertLifecycle } from '../alerts/lifecycle';
import type { EscalationPolicyConfig } from '../oncall/escalation-config';
import type { EscalationState } from '../oncall/escalation-store';
import { toEscalationJson, type EscalationJson } from './status-json';
import { sendRouteError } from '../../../shared/http/errors';

/** The path. */
export const ESCALATIONS_JSON_PATH = '/status/escalations.json';
/** Open alerts looked at (newest first); their escalations are listed. */
export const PAGE_ESCALATIONS = 200;

/** What the route needs. */
export interface EscalationRoutesDeps {
  lifecycle: AlertLifecycle;
  /** The escalation states of these alerts (EscalationEngine.states: the shared store); absent when
   * no escalation policy is configured. */
  states?(alertIds: readonly string[]): Promise<EscalationState[]>;
  policies: readonly EscalationPolicyConfig[];
  /** The page's read check (answers 401 itself and returns false). */
  authorizeRead(req: IncomingMessage, res: ServerResponse): boolean;
  logger: Logger;
}

/** The open alerts' escalations, newest alert first. */
export async function openEscalations(
  deps: Pick<EscalationRoutesDeps, 'lifecycle' | 'policies'> & Required<Pick<EscalationRoutesDeps, 'states'>>,
): Promise<EscalationJson[]> {
  const open = await deps.lifecycle.list(
    { states: ['triggered', 'acknowledged'] },
    undefined,
    PAGE_ESCALATIONS,
  );
  const states = new Map((await deps.states(open.map((e) => e.alert.id))).map((s) => [s.alertId, s]));
  const policies = new Map(deps.policies.map((p) => [p.name, p]));
  const out: EscalationJson[] = [];
  for (const entry of open) {
    const state = states.get(entry.alert.id);
    if (!state) continue;
    let how = '';
    if (entry.acknowledgedBy) {
      const { timeline } = await deps.lifecycle.get(entry.alert.id);
      how = timeline.filter((t) => t.kind === 'acknowledged').at(-1)?.detail ?? '';
    }
    const policy = policies.get(state.policy);
    out.push(
      toEscalationJson({
        alert: entry.alert,
        alertState: entry.state,
        acknowledgedBy: entry.acknowledgedBy,
        acknowledgedHow: how,
        state,
        ...(policy ? { policy } : {}),
      }),
    );
  }
  return out;
}

/** The route (added to the service's table by app.ts). */
export function escalationRoutes(deps: EscalationRoutesDeps): Route[] {
  return [
    {
      methods: ['GET'],
      path: ESCALATIONS_JSON_PATH,
      handler: async (req, res) => {
        req.resume();
        if (!deps.authorizeRead(req, res)) return;
        try {
          const states = deps.states?.bind(deps);
          const body = states
            ? { enabled: true, escalations: await openEscalations({ ...deps, states }) }
            : { enabled: false, escalations: [] };
          sendJson(res, 200, body, { ...SECURITY_HEADERS });
        } catch (err) {
          sendRouteError(res, err, deps.logger, { route: 'escalations' }, { ...SECURITY_HEADERS });
        }
      },
    },
  ];
}
