/**
 * Two monitor processes (dist, real ports) on one PostgreSQL (issue 27): each probe round of a target
 * runs once per interval between them (a lease per job on the database's clock). The replica that
 * probes is killed with SIGKILL between two rounds; the other takes the rounds over once the
 * interval has passed, and no round runs twice in one interval. Each process sends its own header
 * with the probe, so the target knows who probed.
 */
import { createTestDatabase } from '../support/database';
import { startServiceProcess, type ServiceProcess } from '../support/service-process';
import { listen, type TestServer } from '../shared/monitoring/helpers';
import { waitFor } from '../support/wait';

jest.setTimeout(180_000);

const INTERVAL_MS = 2000;

let db: Awaited<ReturnType<typeof createTestDatabase>>;
let target: TestServer;
const hits: Array<{ at: number; replica: string }> = [];
const procs = new Map<string, ServiceProcess>();

beforeAll(async () => {
  db = await createTestDatabase('mon_replicas');
  target = await listen((req, res) => {
    hits.push({ at: Date.now(), replica: String(req.headers['x-replica']) });
    res.end('ok');
  });
});
afterAll(async () => {
  for (const p of procs.values()) await p.stop('SIGKILL', 1000);
  await target?.close();
  await db?.drop();
});

function startReplica(name: string): Promise<ServiceProcess> {
  return startServiceProcess('monitor', {
    SVC_MONITOR__DATABASE__URL: db.url,
    SVC_MONITOR__TARGETS: JSON.stringify([
      {
        name: 'billing',
        http_url: `${target.url}/health`,
        interval_seconds: INTERVAL_MS / 1000,
        timeout_ms: 1000,
        headers: { 'x-replica': name },
      },
    ]),
  });
}

/** The shortest time between two probe rounds so far. */
function shortestGap(): number {
  const gaps = hits.slice(1).map((h, i) => h.at - hits[i]!.at);
  return Math.min(...gaps);
}

it('the replica that probes is killed mid-interval: the other takes the rounds over, and no round runs twice in an interval', async () => {
  procs.set('a', await startReplica('a'));
  procs.set('b', await startReplica('b'));
  await waitFor(() => hits.length >= 3, 'three probe rounds', 60_000);

  // Kill the replica that probed last, just after its round: mid-interval.
  const prober = hits[hits.length - 1]!.replica;
  const survivor = prober === 'a' ? 'b' : 'a';
  const killedAt = Date.now();
  expect(await procs.get(prober)!.stop('SIGKILL')).toBeNull();
  procs.delete(prober);

  await waitFor(
    () => hits.filter((h) => h.at > killedAt && h.replica === survivor).length >= 2,
    'two rounds by the survivor',
    60_000,
  );
  expect(hits.filter((h) => h.at > killedAt).every((h) => h.replica === survivor)).toBe(true);
  // Two replicas probing on their own would each probe every interval: rounds close together. Under
  // the lease consecutive rounds are at least 0.9 of an interval apart on the database's clock (half
  // of it leaves room for a slow machine).
  expect(shortestGap()).toBeGreaterThan(INTERVAL_MS / 2);
});
