/**
 * The monitor with its database stopped (found by a black-box probe: PostgreSQL stopped under a
 * running monitor, /health and /health/ready stayed 200 "healthy", and the status page's
 * /status/alerts.json answered 500 `internal`). Expected: readiness fails on the `monitor.database`
 * check, naming no host or driver message; the status page answers 503 `unavailable` (retry later),
 * as the RPCs do; both recover by themselves when the database is back.
 */
import { startCluster, type RunningCluster } from '../support/postgres-cluster';
import { startMonitorApp, type RunningMonitorApp } from '../support/monitor-app';
import { until } from '../support/wait';
import { DATABASE_HEALTH_CHECK_NAME } from '../../services/monitor/app';

type Health = { status: string; checks: Record<string, { status: string; message: string | null }> };

let cluster: RunningCluster;
let m: RunningMonitorApp;

beforeAll(async () => {
  cluster = await startCluster();
  m = await startMonitorApp({ database: { store_backend: 'database', url: cluster.url } });
}, 120_000);

afterAll(async () => {
  await m?.close();
  cluster?.stop();
});

async function ready(): Promise<{ status: number; body: Health }> {
  const res = await fetch(`${m.baseUrl}/health/ready`);
  return { status: res.status, body: (await res.json()) as Health };
}

it('is not ready while its database is down, says why without the driver, and is ready again after', async () => {
  expect((await ready()).body.checks[DATABASE_HEALTH_CHECK_NAME]?.status).toBe('healthy');
  cluster.halt();
  try {
    let down = await ready();
    await until(async () => (down = await ready()).status === 503, 'readiness to fail', 30_000);
    const check = down.body.checks[DATABASE_HEALTH_CHECK_NAME]!;
    expect(check.status).toBe('unhealthy');
    expect(check.message).toMatch(/the database does not answer/);
    expect(JSON.stringify(down.body)).not.toMatch(/ECONNREFUSED|127\.0\.0\.1|password/);

    const page = await fetch(`${m.baseUrl}/status/alerts.json`);
    expect(page.status).toBe(503);
    expect(await page.json()).toEqual({
      error: { code: 'unavailable', message: 'the database is unavailable; retry later' },
    });
  } finally {
    cluster.restart();
  }
  await until(async () => (await ready()).status === 200, 'readiness to pass again', 60_000);
  expect((await fetch(`${m.baseUrl}/status/alerts.json`)).status).toBe(200);
});
