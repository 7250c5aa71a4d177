/**
 * Bad input, RPCs (issue 16): random and boundary messages, generated from each method's descriptor,
 * to every RPC of both services (enumerated from test/reliability/surfaces.ts, so a new RPC is fuzzed
 * without anyone adding it), over gRPC (grpc-js) and Connect (binary and JSON). Server streams are
 * opened with random requests and cancelled.
 *
 * Expected: the server always answers (no crash), never INTERNAL or UNKNOWN, and every rejection is
 * one of the caller's-fault codes with a non-empty reason and no stack trace. Seeded: the seed is
 * printed; `FUZZ_SEED=<n>` replays a run. `npm test` runs 200 inputs per unary method (60 per stream);
 * `npm run soak` ten times as many.
 */
import * as grpc from '@grpc/grpc-js';
import type { DescMethod, DescService } from '@bufbuild/protobuf';
import fc from 'fast-check';
import { MONITOR_SERVICES, NOTIFICATION_SERVICES } from '../surfaces';
import { recordFigures, SOAK } from '../results';
import { healthCheck, healthClient } from '../../support/grpc-clients';
import { waitFor } from '../../support/wait';
import { describeInput, jsonOf, requestArb } from './messages';
import { connectStream, connectUnary, grpcStream, grpcUnary, type Answer } from './rpc-calls';
import { fuzzSeed, Tally } from './tally';
import { API_TOKEN, startMonitorTarget, startNotificationTarget } from './targets';

const UNARY_RUNS = SOAK ? 2000 : 200;
const STREAM_RUNS = SOAK ? 600 : 60;
/** How long a fuzzed stream stays open before the client cancels it. */
const STREAM_OPEN_MS = 20;

/** Codes that say "your request": what random input may be answered with. */
const CALLER_CODES = new Set([
  'invalid_argument',
  'not_found',
  'failed_precondition',
  'resource_exhausted',
  'already_exists',
  'out_of_range',
]);

/** A reason that leaks internals: a stack frame, a driver or parser message. */
const LEAK = /\n\s+at |\(\/|node:internal|TypeError|ReferenceError|SyntaxError|\bSQL\b|knex|pg_/;

/** Whether `answer` is acceptable for random input; counts it in `tally` either way. */
function judge(
  tally: Tally,
  surface: string,
  where: string,
  answer: Answer,
  input: string,
  stream: boolean,
): void {
  tally.count(surface, answer.code);
  const violate = (why: string) =>
    tally.violate({ where, answer: `${answer.code}: ${answer.message} (${why})`, input });
  if (answer.code === 'ok' || (stream && answer.code === 'cancelled')) return;
  if (answer.code === 'transport') {
    tally.crashes++;
    violate('no answer from the server');
  } else if (answer.code === 'internal' || answer.code === 'unknown') {
    tally.internal++;
    violate('internal error');
  } else if (!CALLER_CODES.has(answer.code)) {
    violate('not a caller-error code');
  } else if (answer.message.trim() === '') {
    tally.silent++;
    violate('no reason');
  } else if (LEAK.test(answer.message)) {
    violate('reason leaks internals');
  }
}

/** Fuzzes every method of `services`; returns the tally. */
async function fuzzServices(
  services: readonly DescService[],
  grpcAddress: string,
  baseUrl: string,
  seed: number,
): Promise<Tally> {
  const tally = new Tally();
  const client = new grpc.Client(grpcAddress, grpc.credentials.createInsecure());
  try {
    for (const service of services) {
      for (const method of service.methods) {
        await fuzzMethod(tally, client, baseUrl, method, seed);
      }
    }
  } finally {
    client.close();
  }
  return tally;
}

async function fuzzMethod(
  tally: Tally,
  client: grpc.Client,
  baseUrl: string,
  method: DescMethod,
  seed: number,
) {
  const path = `/${method.parent.typeName}/${method.name}`;
  const label = `${method.parent.name}/${method.name}`;
  const streaming = method.methodKind === 'server_streaming';
  if (method.methodKind !== 'unary' && !streaming) {
    throw new Error(`${label}: ${method.methodKind} methods are not fuzzed yet; add them here`);
  }
  await fc.assert(
    fc.asyncProperty(requestArb(method.input), fc.boolean(), async (input, asJson) => {
      const what = describeInput(input);
      if (streaming) {
        judge(
          tally,
          'grpc stream',
          `grpc ${label}`,
          await grpcStream(client, path, input.bytes, API_TOKEN, STREAM_OPEN_MS),
          what,
          true,
        );
        judge(
          tally,
          'connect stream',
          `connect ${label}`,
          await connectStream(baseUrl + path, input.bytes, API_TOKEN, STREAM_OPEN_MS),
          what,
          true,
        );
        return;
      }
      judge(
        tally,
        'grpc',
        `grpc ${label}`,
        await grpcUnary(client, path, input.bytes, API_TOKEN),
        what,
        false,
      );
      const json = asJson ? jsonOf(method.input, input.bytes) : undefined;
      if (json !== undefined) {
        judge(
          tally,
          'connect json',
          `connect-json ${label}`,
          await connectUnary(baseUrl + path, json, 'application/json', API_TOKEN),
          `${what} as JSON`,
          false,
        );
      } else {
        judge(
          tally,
          'connect proto',
          `connect ${label}`,
          await connectUnary(baseUrl + path, input.bytes, 'application/proto', API_TOKEN),
          what,
          false,
        );
      }
    }),
    { numRuns: streaming ? STREAM_RUNS : UNARY_RUNS, seed, endOnFailure: true },
  );
}

/** Answers counted by the server itself with an internal or unknown code. */
async function serverInternalCount(metricsText: string): Promise<number> {
  let n = 0;
  for (const line of metricsText.split('\n')) {
    if (/rpc_server_handled_total\{[^}]*rpc_code="(internal|unknown)"/.test(line))
      n += Number(line.split(' ').pop());
  }
  return n;
}

describe('fuzzing every RPC with random and boundary messages', () => {
  const seed = fuzzSeed();
  beforeAll(() => {
    // The seed replays the run: FUZZ_SEED=<seed> npx jest test/reliability/fuzz
    console.log(`rpc fuzz seed ${seed} (replay with FUZZ_SEED=${seed})`);
  });

  test(
    'the notification service: no crash, no INTERNAL, every rejection with a reason',
    async () => {
      const target = await startNotificationTarget();
      const { n } = target;
      try {
        const tally = await fuzzServices(NOTIFICATION_SERVICES, n.grpcAddress, n.baseUrl, seed);
        // Cancelled streams are released: no watch outlives its caller.
        await waitFor(() => n.app.inboxHub.watcherCount === 0, 'fuzzed WatchInbox streams to close');
        const health = healthClient(n.grpcAddress);
        const serving = await healthCheck(health, '').finally(() => health.close());
        const serverInternal = await serverInternalCount(await n.app.registry.metrics());
        recordFigures({
          section: 'fuzz-rpc-notification',
          title: 'Bad input: every notification RPC, gRPC and Connect',
          kind: 'inputs',
          figures: [...tally.figures()],
        });
        expect(tally.report()).toBe('');
        expect(tally.crashes).toBe(0);
        expect(serverInternal).toBe(0);
        expect(serving).toBe('SERVING');
        expect(tally.total).toBeGreaterThanOrEqual(
          NOTIFICATION_SERVICES.flatMap((s) => s.methods).length * 2 * STREAM_RUNS,
        );
      } finally {
        await target.close();
      }
    },
    (SOAK ? 40 : 4) * 60_000,
  );

  test(
    'the monitor service: no crash, no INTERNAL, every rejection with a reason',
    async () => {
      const m = await startMonitorTarget();
      try {
        const tally = await fuzzServices(MONITOR_SERVICES, m.grpcAddress, m.baseUrl, seed);
        await waitFor(() => m.app.alerts.hub.watcherCount === 0, 'fuzzed WatchAlerts streams to close');
        const health = healthClient(m.grpcAddress);
        const serving = await healthCheck(health, '').finally(() => health.close());
        const serverInternal = await serverInternalCount(await m.app.registry.metrics());
        recordFigures({
          section: 'fuzz-rpc-monitor',
          title: 'Bad input: every monitor RPC (MonitorService, OTLP), gRPC and Connect',
          kind: 'inputs',
          figures: [...tally.figures()],
        });
        expect(tally.report()).toBe('');
        expect(tally.crashes).toBe(0);
        expect(serverInternal).toBe(0);
        expect(serving).toBe('SERVING');
        expect(tally.total).toBeGreaterThanOrEqual(
          MONITOR_SERVICES.flatMap((s) => s.methods).length * 2 * STREAM_RUNS,
        );
      } finally {
        await m.close();
      }
    },
    (SOAK ? 40 : 4) * 60_000,
  );
});
