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

/**
 * The most rounds the lease allows between the first and the last hit seen: one per 0.9 interval
 * (the lease's interval on the database's clock), plus one for the jitter of the two end points. A
 * bound on the count, not on each gap: one gap measured here can be short by a request's latency on
 * a loaded machine, but the jitter does not add up over many rounds.
 */
function mostRoundsAllowed(): number {
  const span = hits[hits.length - 1]!.at - hits[0]!.at;
  return Math.floor(span / (0.9 * INTERVAL_MS)) + 2;
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
  // Two replicas probing on their own would each probe every interval: about twice the rounds the
  // lease allows. A loaded machine only makes rounds later, never more.
  expect(hits.length).toBeLessThanOrEqual(mostRoundsAllowed());
});
