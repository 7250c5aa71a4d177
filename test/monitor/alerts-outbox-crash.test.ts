/**
 * An alert sent at once survives a crash while its channel still works on it: a monitor (dist, the
 * default embedded PGlite in a data directory, a local webhook standing in for the pager) pages with
 * a P0 alert; the webhook answers 503, so the channel is retrying with backoff when the monitor is
 * killed with SIGKILL (SendAlert had answered long before). A new process on the same data directory
 * finds the alert in the outbox once the dead one's lease (2 s here) has run out and sends it: the
 * webhook, answering now, receives it (counted by alert id, after a clean stop of the second process
 * so nothing is still on its way).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createClient } from '@connectrpc/connect';
import { createConnectTransport } from '@connectrpc/connect-node';
import { MonitorService } from '../../shared/gen/svc/monitor/v1/monitor_pb';
import { startServiceProcess, type ServiceProcess } from '../support/service-process';
import { listen, type TestServer } from '../shared/monitoring/helpers';
import { waitFor } from '../support/wait';

jest.setTimeout(240_000);

let dataDir: string;
let hook: TestServer;
/** While false the webhook answers 503 (the pager is down). */
let answering = false;
/** Each POST: the alert id and the status answered, in order. */
const posts: Array<{ id: string; status: number }> = [];
const procs: ServiceProcess[] = [];

const accepted = (id: string) => posts.filter((p) => p.id === id && p.status === 200).length;
const refused = (id: string) => posts.filter((p) => p.id === id && p.status === 503).length;

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'monitor-outbox-crash-'));
  hook = await listen((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const id = String((JSON.parse(Buffer.concat(chunks).toString('utf8')) as { id: string }).id);
      const status = answering ? 200 : 503;
      posts.push({ id, status });
      res.statusCode = status;
      res.end(answering ? 'ok' : 'down');
    });
  });
});
afterAll(async () => {
  for (const p of procs) await p.stop('SIGKILL', 1000);
  await hook?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

async function startMonitor() {
  const env: Record<string, string> = {
    SVC_MONITOR__DATABASE__DATA_DIR: dataDir,
    SVC_MONITOR__ALERTS__CHANNELS: JSON.stringify([
      {
        name: 'hook',
        type: 'webhook',
        tiers: ['P0_PAGE'],
        webhook: { url: `${hook.url}/pager`, max_attempts: 10, backoff_ms: 200 },
      },
    ]),
    SVC_MONITOR__ALERTS__CLAIM_LEASE_SECONDS: '2',
  };
  const proc = await startServiceProcess('monitor', env, { startTimeoutMs: 180_000 });
  procs.push(proc);
  const transport = createConnectTransport({
    baseUrl: `http://127.0.0.1:${proc.httpPort}`,
    httpVersion: '1.1',
  });
  return { proc, monitor: createClient(MonitorService, transport) };
}

it('a P0 alert whose webhook was still retrying when the monitor was killed reaches the webhook after the restart', async () => {
  const first = await startMonitor();
  const paged = await first.monitor.sendAlert({
    title: 'Checkout down 結帳 🔥 לא זמין',
    severity: 'critical',
    context: { tier: 'P0_PAGE' },
  });
  // Refused twice: the channel is in its backoff, with attempts left, when the process dies.
  await waitFor(() => refused(paged.alertId) >= 2, 'two refused attempts at the webhook', 30_000);
  expect(await first.proc.stop('SIGKILL')).toBeNull();
  expect(accepted(paged.alertId)).toBe(0);

  answering = true;
  const second = await startMonitor();
  await waitFor(() => accepted(paged.alertId) === 1, 'the alert accepted by the webhook', 60_000);
  expect(await second.proc.stop('SIGTERM')).toBe(0);
  expect(accepted(paged.alertId)).toBe(1);
});
