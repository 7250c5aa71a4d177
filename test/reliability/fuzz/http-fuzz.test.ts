/**
 * Bad input, HTTP routes (issue 16): random requests to every route of both services' HTTP ports,
 * enumerated from their route tables (admin API and page, provider webhooks, /health and its probes,
 * /metrics, OTLP/HTTP, the status page) plus every Connect RPC path: random methods, %-encodings,
 * queries, headers, content types, bad and oversized bodies, bad JWTs and tokens.
 *
 * Expected: the server always answers; no 5xx (a 503 from /health and its probes is the only one
 * allowed: it is a health answer, not a failure); every 4xx carries a reason in its body (HEAD has
 * none by definition) and no stack trace. A connection reset is accepted only after a body or a head
 * over the server's limits (it answers 413 or 431 and closes while the client may still be writing). Seeded: the seed is printed;
 * `FUZZ_SEED=<n>` replays. `npm test` sends 400 requests per service, `npm run soak` 6000.
 */
import { Agent, maxHeaderSize } from 'node:http';
import fc from 'fast-check';
import { loadJose } from '../../../shared/auth/jose';
import { MONITOR_SERVICES, NOTIFICATION_SERVICES } from '../surfaces';
import { recordFigures, SOAK } from '../results';
import {
  describeRequest,
  authorizationValues,
  requestArb,
  send,
  type HttpAnswer,
  type HttpInput,
  type RouteTarget,
} from './http-requests';
import { fuzzSeed, Tally } from './tally';
import {
  ADMIN_JWT_SECRET,
  API_TOKEN,
  MAX_REQUEST_BYTES,
  startMonitorTarget,
  startNotificationTarget,
} from './targets';
import type { DescService } from '@bufbuild/protobuf';
import type { HttpRouteTable } from '../../../shared/http/routes';

const RUNS = SOAK ? 6000 : 400;

/** Health probes answer 503 when not ready: a health answer, not a server failure. */
const HEALTH_PATH = /^\/health(\/(live|ready|startup))?$/;

/** A body that leaks internals: a stack frame, a driver or parser message. */
const LEAK = /\n\s+at |node:internal|TypeError|ReferenceError|\bSQL\b|knex/;

/** Every route of `table` and the Connect path (POST) of every method of `services`. */
function routesOf(table: HttpRouteTable, services: readonly DescService[]): RouteTarget[] {
  return [
    ...table.list().map((r) => ({ path: r.path, methods: r.methods })),
    ...services.flatMap((s) =>
      s.methods.map((m) => ({ path: `/${s.typeName}/${m.name}`, methods: ['POST'] })),
    ),
  ];
}

/** The reason in a 4xx body: `{"error":{"message"}}` (gateway), `{"message"}` (Connect), or text. */
function reasonOf(answer: HttpAnswer): string {
  try {
    const parsed = JSON.parse(answer.body) as { error?: { message?: unknown }; message?: unknown };
    const message = parsed.error?.message ?? parsed.message;
    return typeof message === 'string' ? message : '';
  } catch {
    return answer.body.trim();
  }
}

/** The size of a request's head: request line and headers. */
function headBytes(input: HttpInput): number {
  let n = input.method.length + input.target.length + 12;
  for (const [k, v] of Object.entries(input.headers)) n += k.length + v.length + 4;
  return n;
}

function judge(tally: Tally, input: HttpInput, answer: HttpAnswer, maxBodyBytes: number): void {
  const path = input.target.split('?')[0]!;
  tally.count('http', answer.status === 0 ? 'no answer' : String(answer.status));
  const violate = (why: string) =>
    tally.violate(
      {
        where: `http ${input.method} ${path.slice(0, 80)}`,
        answer: `${answer.status} ${answer.error ?? answer.body.slice(0, 160)} (${why})`,
        input: describeRequest(input),
      },
      `${answer.status} ${why}`,
    );
  if (answer.status === 0) {
    // Over a limit, the server answers (413, 431) and closes while the client may still be writing:
    // the client can see the reset before the answer. Anything else must be answered.
    const overLimit = input.body.length > maxBodyBytes || headBytes(input) > maxHeaderSize;
    if (overLimit && answer.error !== 'no answer before the deadline') return;
    tally.crashes++;
    violate('no answer');
    return;
  }
  if (answer.status >= 500) {
    if (answer.status === 503 && HEALTH_PATH.test(path)) return;
    tally.internal++;
    violate('server error for bad input');
    return;
  }
  if (answer.status >= 400 && input.method !== 'HEAD' && reasonOf(answer) === '') {
    tally.silent++;
    violate('no reason');
    return;
  }
  if (LEAK.test(answer.body)) violate('body leaks internals');
}

async function fuzzRoutes(baseUrl: string, routes: RouteTarget[], seed: number, tally: Tally): Promise<void> {
  const jose = await loadJose();
  const authorizations = await authorizationValues(jose, {
    apiToken: API_TOKEN,
    jwtSecret: ADMIN_JWT_SECRET,
  });
  const agent = new Agent({ keepAlive: true, maxSockets: 4 });
  try {
    await fc.assert(
      fc.asyncProperty(requestArb(routes, authorizations, MAX_REQUEST_BYTES), async (input) => {
        let answer = await send(baseUrl, input, agent);
        if (answer.status === 0 && answer.error !== 'no answer before the deadline') {
          // A reset on a pooled connection: the server closed it (after answering early, with a body
          // unread, or after a `Connection: close` answer) as the agent reused it. Sent again alone
          // on a fresh connection, the request must be answered.
          tally.retried++;
          const fresh = new Agent({ keepAlive: false });
          answer = await send(baseUrl, input, fresh).finally(() => fresh.destroy());
        }
        judge(tally, input, answer, MAX_REQUEST_BYTES);
      }),
      { numRuns: RUNS, seed, endOnFailure: true },
    );
  } finally {
    agent.destroy();
  }
}

/** GET /health/live answers: the process still serves after the fuzzing. */
async function stillServing(baseUrl: string): Promise<number> {
  const res = await fetch(`${baseUrl}/health/live`, { signal: AbortSignal.timeout(15_000) });
  await res.arrayBuffer();
  return res.status;
}

describe('fuzzing every HTTP route with random requests', () => {
  const seed = fuzzSeed();
  beforeAll(() => {
    console.log(`http fuzz seed ${seed} (replay with FUZZ_SEED=${seed})`);
  });

  test(
    'the notification service: no 5xx, no crash, every 4xx with a reason',
    async () => {
      const target = await startNotificationTarget();
      const { n } = target;
      try {
        const routes = routesOf(n.app.server.routes, NOTIFICATION_SERVICES);
        const patterns = routes.map((r) => r.path);
        const tally = new Tally();
        await fuzzRoutes(n.baseUrl, routes, seed, tally);
        const live = await stillServing(n.baseUrl);
        recordFigures({
          section: 'fuzz-http-notification',
          title: `Bad input: every notification HTTP route (${patterns.length} routes and RPC paths)`,
          kind: 'inputs',
          figures: tally.figures(),
        });
        expect(tally.report()).toBe('');
        expect(live).toBe(200);
        // The admin API, the webhooks, health, metrics and Connect RPCs were all in the table.
        expect(patterns).toEqual(
          expect.arrayContaining(['/health', '/metrics', '/svc.notification.v1.InboxService/Send']),
        );
        expect(patterns.some((p) => p.startsWith('/admin/'))).toBe(true);
        expect(patterns.some((p) => p.includes('webhook'))).toBe(true);
        expect(tally.total).toBe(RUNS);
      } finally {
        await target.close();
      }
    },
    (SOAK ? 40 : 4) * 60_000,
  );

  test(
    'the monitor service: no 5xx, no crash, every 4xx with a reason',
    async () => {
      const m = await startMonitorTarget();
      try {
        const routes = routesOf(m.app.server.routes, MONITOR_SERVICES);
        const patterns = routes.map((r) => r.path);
        const tally = new Tally();
        await fuzzRoutes(m.baseUrl, routes, seed, tally);
        const live = await stillServing(m.baseUrl);
        recordFigures({
          section: 'fuzz-http-monitor',
          title: `Bad input: every monitor HTTP route (${patterns.length} routes and RPC paths)`,
          kind: 'inputs',
          figures: tally.figures(),
        });
        expect(tally.report()).toBe('');
        expect(live).toBe(200);
        expect(patterns).toEqual(
          expect.arrayContaining(['/health', '/metrics', '/v1/traces', '/status.json']),
        );
        expect(tally.total).toBe(RUNS);
      } finally {
        await m.close();
      }
    },
    (SOAK ? 40 : 4) * 60_000,
  );
});
