/**
 * Target state in the monitor's database (issue 27): a restart keeps a target that is down down,
 * with its last change; monitors on one PostgreSQL probe each target once per interval between them
 * and each shows what the prober found.
 */
import { startMonitorOnDatabase, type RunningMonitorApp } from '../../support/monitor-app';
import { createTestDatabase } from '../../support/database';
import { listen, type TestServer } from '../../shared/monitoring/helpers';
import { waitFor } from '../../support/wait';

let db: Awaited<ReturnType<typeof createTestDatabase>>;
const running: RunningMonitorApp[] = [];
const servers: TestServer[] = [];

beforeAll(async () => {
  db = await createTestDatabase('mon_targets_durable');
});
afterEach(async () => {
  await Promise.all(running.splice(0).map((r) => r.close()));
  await Promise.all(servers.splice(0).map((s) => s.close()));
});
afterAll(async () => {
  await db?.drop();
});

/** A health endpoint that answers `status` and records when each probe arrived. */
async function healthEndpoint(status: { code: number }): Promise<{ url: string; hits: number[] }> {
  const hits: number[] = [];
  const server = await listen((_req, res) => {
    hits.push(Date.now());
    res.statusCode = status.code;
    res.end();
  });
  servers.push(server);
  return { url: `${server.url}/health`, hits };
}

async function start(target: { name: string; http_url: string; interval_seconds: number }) {
  const m = await startMonitorOnDatabase(db.url, { targets: [{ ...target, timeout_ms: 1000 }] });
  running.push(m);
  return m;
}

describe('target state in the monitor database', () => {
  it('a target that is down before a restart is down from the first read after it, with its last change kept', async () => {
    const endpoint = await healthEndpoint({ code: 503 });
    const target = { name: 'billing.restart', http_url: endpoint.url, interval_seconds: 0.2 };
    const a = await start(target);
    await waitFor(() => a.app.targets.states()[0]!.up === false, 'the target down', 20_000);
    const before = a.app.targets.states()[0]!;
    expect(before).toMatchObject({ lastError: 'HTTP 503' });
    expect(before.lastChangeAt).toBeInstanceOf(Date);
    running.splice(0);
    await a.close();

    const b = await start(target);
    // Right after the start, before any probe of b could make it down again on its own (that takes two).
    const after = b.app.targets.states()[0]!;
    expect(after).toMatchObject({ name: target.name, up: false, lastError: 'HTTP 503' });
    expect(after.consecutiveFailures).toBeGreaterThanOrEqual(before.consecutiveFailures);
    expect(after.lastChangeAt).toEqual(before.lastChangeAt);
  });

  it('two monitors on one database probe a target once per interval between them, and both show its state', async () => {
    const status = { code: 200 };
    const endpoint = await healthEndpoint(status);
    const intervalMs = 2000;
    const target = { name: 'shared-target', http_url: endpoint.url, interval_seconds: intervalMs / 1000 };
    const a = await start(target);
    const b = await start(target);
    await waitFor(() => endpoint.hits.length >= 4, 'four probe rounds', 30_000);
    // Two monitors probing on their own would probe about twice per interval, two probes close
    // together; under the lease consecutive rounds are about an interval apart (0.9 of it at least,
    // on the database's clock; half of it leaves room for a slow machine).
    const gaps = endpoint.hits.slice(1).map((t, i) => t - endpoint.hits[i]!);
    expect(Math.min(...gaps)).toBeGreaterThan(intervalMs / 2);
    // The replica that did not probe shows what the other found.
    await waitFor(
      () => a.app.targets.states()[0]!.up === true && b.app.targets.states()[0]!.up === true,
      'both replicas showing the target up',
      20_000,
    );
  });
});
