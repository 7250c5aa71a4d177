/**
 * Held alerts survive a crash: a monitor (dist, the default embedded PGlite in a data directory, a
 * local webhook standing in for the pager) whose business hours are closed now holds a P1 alert and
 * keeps a P2 alert for the digest; SendAlert answers once they are kept; it is killed with SIGKILL
 * before sending either. A new process on the same data directory, with business hours open now and a
 * short digest interval, sends each of them exactly once (counted by alert id at the webhook, after a
 * clean stop of the second process so nothing is still on its way).
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

const DAYS = ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'] as const;

let dataDir: string;
let hook: TestServer;
/** Webhook deliveries: the alert id of each POST, in order. */
const delivered: string[] = [];
const procs: ServiceProcess[] = [];

const deliveries = (id: string) => delivered.filter((d) => d === id).length;

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'monitor-held-crash-'));
  hook = await listen((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      delivered.push(String((JSON.parse(Buffer.concat(chunks).toString('utf8')) as { id: string }).id));
      res.end('ok');
    });
  });
});
afterAll(async () => {
  for (const p of procs) await p.stop('SIGKILL', 1000);
  await hook?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

async function startMonitor(alerts: Record<string, string>) {
  const env: Record<string, string> = {
    SVC_MONITOR__DATABASE__DATA_DIR: dataDir,
    SVC_MONITOR__ALERTS__CHANNELS: JSON.stringify([
      { name: 'hook', type: 'webhook', webhook: { url: `${hook.url}/pager` } },
    ]),
  };
  for (const [k, v] of Object.entries(alerts)) env[`SVC_MONITOR__ALERTS__${k}`] = v;
  const proc = await startServiceProcess('monitor', env, { startTimeoutMs: 180_000 });
  procs.push(proc);
  const transport = createConnectTransport({
    baseUrl: `http://127.0.0.1:${proc.httpPort}`,
    httpVersion: '1.1',
  });
  return { proc, monitor: createClient(MonitorService, transport) };
}

it('a held P1 alert and a pending P2 alert, kept when the monitor is killed, reach the webhook exactly once after the restart', async () => {
  // Open only yesterday (UTC): closed now and for days.
  const yesterday = DAYS[(new Date().getUTCDay() + 6) % 7]!;
  const first = await startMonitor({
    BUSINESS_HOURS: JSON.stringify({ time_zone: 'UTC', days: [yesterday], open: '00:00', close: '23:59' }),
    DIGEST_INTERVAL_SECONDS: '3600',
  });
  const held = await first.monitor.sendAlert({
    title: 'Certificate expires in 10 days',
    severity: 'high',
    context: { tier: 'P1_BUSINESS_HOURS', service: 'edge' },
  });
  const digested = await first.monitor.sendAlert({
    title: 'Cache hit ratio low',
    severity: 'low',
    context: { tier: 'P2_DIGEST', service: 'cache' },
  });
  // A P0 alert goes out at once: the webhook works, and the held ones are not on it.
  const paged = await first.monitor.sendAlert({
    title: 'Checkout down',
    severity: 'critical',
    context: { tier: 'P0_PAGE' },
  });
  await waitFor(() => deliveries(paged.alertId) === 1, 'the P0 alert at the webhook', 30_000);
  expect(deliveries(held.alertId) + deliveries(digested.alertId)).toBe(0);
  expect(await first.proc.stop('SIGKILL')).toBeNull();

  // Open every day, all day but the last minute, in a zone whose local hour is now 0 to 11 (so that
  // minute is hours away), and a digest every second.
  const zone = new Date().getUTCHours() < 12 ? 'UTC' : 'Etc/GMT+12';
  const second = await startMonitor({
    BUSINESS_HOURS: JSON.stringify({ time_zone: zone, days: DAYS, open: '00:00', close: '23:59' }),
    DIGEST_INTERVAL_SECONDS: '1',
  });
  await waitFor(
    () => deliveries(held.alertId) === 1 && deliveries(digested.alertId) === 1,
    'the held and the digested alert at the webhook',
    60_000,
  );
  expect(await second.proc.stop('SIGTERM')).toBe(0);
  expect(deliveries(held.alertId)).toBe(1);
  expect(deliveries(digested.alertId)).toBe(1);
  expect(deliveries(paged.alertId)).toBe(1);
});
