/**
 * The console's backends section (issue 29): every channel's backends with their health (the check
 * `/health` runs, circuit included), circuit state, queue depth and the last hour's attempt outcomes.
 *
 * Route (under /admin/console/api/): `GET backends` -> `{ items: [...], next_cursor: null }`, one item
 * per configured backend in channel then config order. Nothing of the backend's configuration is
 * shown beyond its name and driver kind: no URL, key, user or password, and of the health check only
 * its status, its short message and its latency (a driver's own details stay out).
 */
import type { Route } from '../../../../../shared/http/routes';
import { withCircuitState } from '../../../delivery';
import { RECENT_OUTCOMES_WINDOW_MS } from '../../../delivery/recent-outcomes';
import { sendJson } from '../../http';
import type { ConsoleApi, ConsoleSection } from '../console-gateway';
import type { ConsoleSectionDeps } from '.';

/** The backends section. */
export function backendsSection(deps: ConsoleSectionDeps): ConsoleSection {
  const breakers = deps.deliveries.breakers;
  return {
    name: 'backends',
    routes(api: ConsoleApi): Route[] {
      return [
        api.route(['GET'], 'backends', async (ctx) => {
          const depths = await deps.deliveries.queueDepths();
          const items = await Promise.all(
            deps.registries.flatMap((registry) =>
              registry.drivers().map(async (driver) => {
                const { channel } = registry;
                const backend = driver.name;
                const health = await withCircuitState(
                  () => driver.checkHealth(),
                  breakers,
                  channel,
                  backend,
                )();
                const circuit = breakers.snapshot(channel, backend);
                const outcomes = breakers.recent.counts(channel, backend);
                return {
                  name: backend,
                  channel,
                  kind: driver.driver,
                  primary: registry.primary === backend,
                  health: {
                    status: health.status,
                    message: health.message ?? null,
                    latency_ms:
                      typeof health.details.latency_ms === 'number' ? health.details.latency_ms : null,
                  },
                  circuit: {
                    state: circuit.state,
                    consecutive_failures: circuit.consecutive_failures,
                    until: circuit.half_open_at,
                  },
                  queue_depth:
                    depths.find((d) => d.channel === channel && d.backend === backend)?.queued ?? 0,
                  outcomes: { window_seconds: RECENT_OUTCOMES_WINDOW_MS / 1000, ...outcomes },
                };
              }),
            ),
          );
          sendJson(ctx.res, 200, { items, next_cursor: null, checked_at: new Date().toISOString() });
        }),
      ];
    },
  };
}
