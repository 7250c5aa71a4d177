/**
 * PeriodicJob and its leases on real PostgreSQL: one replica at a time, once per interval, and a
 * stop that does not wait for a whole run.
 */
import type { Knex } from 'knex';
import { Client } from 'pg';
import {
  createJobTable,
  DatabaseJobLease,
  InProcessJobLease,
  PeriodicJob,
} from '../../../shared/storage/periodic-job';
import { pooledTestDatabase, type PooledTestDatabase } from '../../support/database';

const TABLE = 'test_periodic_jobs';
let db: PooledTestDatabase;
const pool = (): Promise<Knex> => db.pool();

beforeAll(async () => {
  db = await pooledTestDatabase('jobs', 2);
  await createJobTable(await pool(), TABLE);
});

afterAll(async () => {
  await db?.close();
});

/** A promise and its resolver, to hold a job inside its run. */
function gate(): { opened: Promise<void>; open(): void } {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { opened, open };
}

describe('DatabaseJobLease on PostgreSQL', () => {
  it('when two replicas run the same job at once, only one of them runs it', async () => {
    const a = new DatabaseJobLease(await pool(), { table: TABLE });
    const b = new DatabaseJobLease(await pool(), { table: TABLE });
    const inside = gate();
    const release = gate();
    let runs = 0;
    const now = new Date('2030-01-01T00:00:00Z');
    const first = a.runIfDue('job.concurrent', now, 60_000, async () => {
      runs++;
      inside.open();
      await release.opened;
    });
    await inside.opened;
    // a holds the advisory lock: b is refused while it runs.
    expect(await b.runIfDue('job.concurrent', now, 60_000, async () => void runs++)).toBe(false);
    release.open();
    expect(await first).toBe(true);
    expect(runs).toBe(1);
  });

  it('when the job ran within the interval on another replica, it does not run again until the interval passed', async () => {
    const a = new DatabaseJobLease(await pool(), { table: TABLE });
    const b = new DatabaseJobLease(await pool(), { table: TABLE });
    const t0 = new Date('2031-01-01T00:00:00Z');
    expect(await a.runIfDue('job.interval', t0, 60_000, async () => undefined)).toBe(true);
    expect(
      await b.runIfDue('job.interval', new Date(t0.getTime() + 59_000), 60_000, async () => undefined),
    ).toBe(false);
    expect(
      await b.runIfDue('job.interval', new Date(t0.getTime() + 60_000), 60_000, async () => undefined),
    ).toBe(true);
  });

  it('when another session holds the job lock, the job is skipped; different jobs do not block each other', async () => {
    const lease = new DatabaseJobLease(await pool(), { table: TABLE });
    const holder = new Client({ connectionString: db.url });
    await holder.connect();
    try {
      await holder.query("SELECT pg_advisory_lock(hashtext('job.held'), 0)");
      const now = new Date('2032-01-01T00:00:00Z');
      expect(await lease.runIfDue('job.held', now, 1, async () => undefined)).toBe(false);
      expect(await lease.runIfDue('job.other', now, 1, async () => undefined)).toBe(true);
    } finally {
      await holder.end();
    }
  });

  it('when the pool has one connection, the job still runs (the lock lives on its own connection)', async () => {
    const knex = await db.pool(1);
    const lease = new DatabaseJobLease(knex, { table: TABLE });
    let rows = -1;
    const ran = await lease.runIfDue('job.single', new Date('2033-01-01T00:00:00Z'), 1, async () => {
      rows = ((await knex.raw(`SELECT count(*)::int AS n FROM ${TABLE}`)) as { rows: { n: number }[] })
        .rows[0]!.n;
    });
    expect(ran).toBe(true);
    expect(rows).toBeGreaterThanOrEqual(0);
  });
});

describe('DatabaseJobLease on the database clock', () => {
  it("when the replicas' clocks disagree, the interval is measured on the database's clock", async () => {
    const a = new DatabaseJobLease(await pool(), { table: TABLE, clock: 'database' });
    const b = new DatabaseJobLease(await pool(), { table: TABLE, clock: 'database' });
    // a's clock is a year behind, b's a year ahead: with the database's clock neither matters.
    expect(
      await a.runIfDue('job.dbclock', new Date('2000-01-01T00:00:00Z'), 60_000, async () => undefined),
    ).toBe(true);
    expect(
      await b.runIfDue('job.dbclock', new Date('2100-01-01T00:00:00Z'), 60_000, async () => undefined),
    ).toBe(false);
    const [row] = (
      (await (
        await pool()
      ).raw(
        `SELECT extract(epoch FROM (now() - last_run_at)) AS age FROM ${TABLE} WHERE job = 'job.dbclock'`,
      )) as { rows: { age: number | string }[] }
    ).rows;
    // Recorded at the database's now, not at either replica's.
    expect(Math.abs(Number(row!.age))).toBeLessThan(3600);
    expect(await b.runIfDue('job.dbclock', new Date(), 1, async () => undefined)).toBe(true);
  });
});

describe('PeriodicJob', () => {
  it('when stopped during a run, the run sees the stop flag and stop() waits only for its current batch', async () => {
    let batches = 0;
    let stopped: Promise<void> | undefined;
    const job = new PeriodicJob({
      name: 'job.batches',
      intervalMs: 1000,
      lease: new DatabaseJobLease(await pool(), { table: TABLE }),
      clock: { now: () => Date.parse('2034-01-01T00:00:00Z'), monotonic: () => 0 },
      run: async (signal) => {
        while (!signal.aborted && batches < 1000) {
          batches++;
          if (batches === 3) stopped = job.stop();
          await new Promise((resolve) => setImmediate(resolve));
        }
      },
    });
    expect(await job.runOnce()).toBe(true);
    await stopped;
    expect(batches).toBe(3);
    expect(job.stopped).toBe(true);
    expect(await job.runOnce()).toBe(false);
  });

  it('when a run is in progress in this process, a second runOnce does not start another', async () => {
    const release = gate();
    let runs = 0;
    const job = new PeriodicJob({
      name: 'job.local',
      intervalMs: 1000,
      lease: new InProcessJobLease(),
      run: async () => {
        runs++;
        await release.opened;
      },
    });
    const first = job.runOnce();
    expect(await job.runOnce()).toBe(false);
    release.open();
    expect(await first).toBe(true);
    expect(runs).toBe(1);
  });
});
