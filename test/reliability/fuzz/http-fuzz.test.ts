/**
 * Bad input, HTTP routes (issue 16): random requests to every route of both services' HTTP ports,
 * enumerated from their route tables (admin API and page, provider webhooks, /health and its probes,
 * /metrics, OTLP/HTTP, the status page) plus every Connect RPC path: random methods, %-encodings,
 * queries, headers, content types, bad and oversized bodies, bad JWTs and tokens.
 *
 * Expected: the server always answers; no 5xx (a 503 from /health and its probes is the only one
 * allowed: it is a health answer, not a failure); every 4xx carries a reason in its body (HEAD has
 * none by definition) and no stack trace. A connection reset is accepted only after an oversized body
 * (the server may stop reading it once it has answered 413). Seeded: the seed is printed;
 * `FUZZ_SEED=<n>` replays. `npm test` sends 600 requests per service, `npm run soak` ten times as many.
 */
import { Agent } from 'node:http';
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

const RUNS = SOAK ? 6000 : 600;

/** Health probes answer 503 when not ready: a health answer, not a server failure. */
const HEALTH_PATH = /^\/health(\/(live|ready|startup))?$/;

/** A body that leaks internals: a stack frame, a driver or parser message. */
const LEAK = /\n\s+at |node:internal|TypeError|ReferenceError|\bSQL\b|knex/;

/** The route patterns of `routes` and the Connect path of every method of `services`. */
function patternsOf(routes: HttpRouteTable, services: readonly DescService[]): string[] {
  return [
    ...new Set([
      ...routes.list().map((r) => r.path),
      ...services.flatMap((s) => s.methods.map((m) => `/${s.typeName}/${m.name}`)),
    ]),
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

function judge(tally: Tally, input: HttpInput, answer: HttpAnswer, maxBodyBytes: number): void {
  const path = input.target.split('?')[0]!;
  tally.count('http', answer.status === 0 ? 'no answer' : String(answer.status));
  const violate = (why: string) =>
    tally.violate({
      where: `http ${input.method} ${path.slice(0, 80)}`,
      answer: `${answer.status} ${answer.error ?? answer.body.slice(0, 160)} (${why})`,
      input: describeRequest(input),
    });
  if (answer.status === 0) {
    if (input.body.length > maxBodyBytes && answer.error !== 'no answer before the deadline') return;
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

async function fuzzRoutes(baseUrl: string, patterns: string[], seed: number, tally: Tally): Promise<void> {
  const jose = await loadJose();
  const authorizations = await authorizationValues(jose, {
    apiToken: API_TOKEN,
    jwtSecret: ADMIN_JWT_SECRET,
  });
  const agent = new Agent({ keepAlive: true, maxSockets: 4 });
  try {
    await fc.assert(
      fc.asyncProperty(requestArb(patterns, authorizations, MAX_REQUEST_BYTES), async (input) => {
        judge(tally, input, await send(baseUrl, input, agent), MAX_REQUEST_BYTES);
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
        const patterns = patternsOf(n.app.server.routes, NOTIFICATION_SERVICES);
        const tally = new Tally();
        await fuzzRoutes(n.baseUrl, patterns, seed, tally);
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
        const patterns = patternsOf(m.app.server.routes, MONITOR_SERVICES);
        const tally = new Tally();
        await fuzzRoutes(m.baseUrl, patterns, seed, tally);
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
