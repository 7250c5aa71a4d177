/**
 * The monitor's database (issue 27; the last open item of issue 24): `monitor.database` is read. The
 * composition root opens it once, runs the monitor's migrations into their own table, and closes it
 * at stop; `store_backend: memory` opens nothing.
 */
import { Client } from 'pg';
import { startMonitorApp } from '../support/monitor-app';
import { capturingLogger } from '../shared/rpc/harness';
import { createTestDatabase } from '../support/database';
import { MONITOR_MIGRATIONS_TABLE, monitorMigrations } from '../../services/monitor/migrations';

async function query<T>(url: string, sql: string): Promise<T[]> {
  const c = new Client({ connectionString: url });
  await c.connect();
  try {
    return (await c.query(sql)).rows as T[];
  } finally {
    await c.end();
  }
}

describe('the monitor database', () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  beforeAll(async () => {
    db = await createTestDatabase('mon_storage');
  });
  afterAll(async () => {
    await db?.drop();
  });

  it('with store_backend database and a PostgreSQL URL, the monitor runs its migrations at start, into their own table', async () => {
    const { logger, lines } = capturingLogger();
    const m = await startMonitorApp({ database: { url: db.url, store_backend: 'database' } }, logger);
    try {
      expect(m.app.storage?.engine).toBe('postgres');
      const applied = await query<{ name: string }>(db.url, `SELECT name FROM ${MONITOR_MIGRATIONS_TABLE}`);
      expect(applied.map((r) => r.name)).toEqual(monitorMigrations.map((mig) => mig.name));
      const tables = await query<{ t: string }>(
        db.url,
        "SELECT tablename AS t FROM pg_tables WHERE tablename IN ('monitor_slos', 'monitor_target_states')",
      );
      expect(tables.map((r) => r.t).sort()).toEqual(['monitor_slos', 'monitor_target_states']);
      // The section is read now: no "not read" warning, and the password never in a log line.
      expect(lines().some((l) => String(l.msg).includes('is not read'))).toBe(false);
      expect(JSON.stringify(lines())).not.toContain(new URL(db.url).password || '\u0000never');
    } finally {
      await m.close();
    }
    // Closed at stop: the monitor holds no connection to the database any more.
    const open = await query<{ n: number }>(
      db.url,
      `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = '${new URL(db.url).pathname.slice(1)}' AND pid <> pg_backend_pid()`,
    );
    expect(open[0]!.n).toBe(0);
  });

  it('a second start on the same database finds the schema up to date', async () => {
    const m = await startMonitorApp({ database: { url: db.url, store_backend: 'database' } });
    try {
      expect(m.app.storage?.applied).toEqual([]);
    } finally {
      await m.close();
    }
  });

  it('with store_backend memory nothing is opened, and a URL set anyway is named as unused, never with its password', async () => {
    const { logger, lines } = capturingLogger();
    const m = await startMonitorApp(
      { database: { url: 'postgres://nobody:hunter2-secret@127.0.0.1:1/none', store_backend: 'memory' } },
      logger,
    );
    try {
      expect(m.app.storage).toBeUndefined();
      expect(lines().some((l) => String(l.msg).includes('store_backend is memory'))).toBe(true);
      expect(JSON.stringify(lines())).not.toContain('hunter2-secret');
    } finally {
      await m.close();
    }
  });

  it('an unreachable database stops the start with an error', async () => {
    await expect(
      startMonitorApp({ database: { url: 'postgres://nobody@127.0.0.1:1/none', store_backend: 'database' } }),
    ).rejects.toThrow();
  });
});
