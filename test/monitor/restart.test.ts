/**
 * The monitor process keeps what it knows across a crash (issue 27): a monitor (dist, real gRPC, the
 * default embedded PGlite in a data directory) registers an SLO, records samples and watches a target
 * that goes down; it is killed with SIGKILL; a new process on the same data directory finds the SLO,
 * its samples and the target's state through the RPCs and the status page's JSON.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  type EvaluateSlosResponse,
  type ListSlosResponse,
  MonitorService,
  type RecordSloSamplesResponse,
} from '../../shared/gen/svc/monitor/v1/monitor_pb';
import type { StatusSnapshotJson } from '../../services/monitor/web/status-json';
import { grpcClient, unary, type GenericClient } from '../support/grpc-clients';
import { startServiceProcess, type ServiceProcess } from '../support/service-process';
import { listen, type TestServer } from '../shared/monitoring/helpers';
import { until } from '../support/wait';

jest.setTimeout(240_000);

let dataDir: string;
let target: TestServer;
const procs: ServiceProcess[] = [];
const clients: GenericClient[] = [];

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'monitor-restart-'));
  // The watched service is down: its health endpoint answers 503.
  target = await listen((_req, res) => {
    res.statusCode = 503;
    res.end();
  });
});
afterAll(async () => {
  for (const c of clients) c.close();
  for (const p of procs) await p.stop('SIGKILL', 1000);
  await target?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

async function startMonitor(): Promise<{ proc: ServiceProcess; client: GenericClient; base: string }> {
  const proc = await startServiceProcess(
    'monitor',
    {
      SVC_MONITOR__DATABASE__DATA_DIR: dataDir,
      SVC_MONITOR__TARGETS: JSON.stringify([
        { name: 'billing', http_url: `${target.url}/health`, interval_seconds: 0.25, timeout_ms: 1000 },
      ]),
    },
    { startTimeoutMs: 180_000 },
  );
  procs.push(proc);
  const client = grpcClient(MonitorService, `127.0.0.1:${proc.grpcPort}`);
  clients.push(client);
  return { proc, client, base: `http://127.0.0.1:${proc.httpPort}` };
}

async function status(base: string): Promise<StatusSnapshotJson> {
  const res = await fetch(`${base}/status.json`);
  expect(res.status).toBe(200);
  return (await res.json()) as StatusSnapshotJson;
}

it('after SIGKILL, a new monitor on the same data directory finds the SLO, its samples and the target state', async () => {
  const first = await startMonitor();
  await unary(first.client, 'RegisterSlo', {
    slo: {
      name: 'checkout-p99',
      metric: 'checkout.latency',
      percentile: 0.99,
      thresholdMs: 250,
      window: { seconds: 3600n },
      description: 'Bezahlen 💳 決済 الدفع',
    },
  });
  const recorded = await unary<RecordSloSamplesResponse>(first.client, 'RecordSloSamples', {
    metric: 'checkout.latency',
    valuesMs: [100, 900],
  });
  expect(recorded.response.accepted).toBe(2);
  let down: StatusSnapshotJson['targets'][number] | undefined;
  await until(
    async () => {
      down = (await status(first.base)).targets.find((t) => t.name === 'billing' && t.state === 'down');
      return down !== undefined;
    },
    'the target down',
    60_000,
  );
  expect(await first.proc.stop('SIGKILL')).toBeNull();

  const second = await startMonitor();
  const { response: list } = await unary<ListSlosResponse>(second.client, 'ListSlos', {});
  expect(list.slos.map((s) => [s.name, s.description])).toEqual([['checkout-p99', 'Bezahlen 💳 決済 الدفع']]);
  const { response: evaluated } = await unary<EvaluateSlosResponse>(second.client, 'EvaluateSlos', {
    dispatch: false,
  });
  expect(evaluated.violations.map((v) => [v.slo?.name, v.measuredValue])).toEqual([['checkout-p99', 900]]);

  const page = await status(second.base);
  expect(page.slos.find((s) => s.name === 'checkout-p99')).toMatchObject({ samples: 2, measured_ms: 900 });
  const billing = page.targets.find((t) => t.name === 'billing');
  expect(billing).toMatchObject({
    state: 'down',
    last_error: 'HTTP 503',
    last_change_at: down!.last_change_at,
  });
});
