/**
 * `database.statement_timeout_ms`: every statement of the pool is bounded by the server itself
 * (PostgreSQL's statement_timeout, sent when the connection starts), so a statement that waits behind
 * a lock is cancelled and its connection stays usable; migrations and session connections run
 * without the bound; behind pgbouncer (which refuses the startup parameter) nothing is sent.
 * Migrations have a lock timeout instead: one queued behind a long transaction is rolled back and
 * tried again, and gives up with a clear error after its tries.
 */
import { Code } from '@connectrpc/connect';
import type { Knex } from 'knex';
import { Client } from 'pg';
import { databaseSectionSchema, DEFAULT_STATEMENT_TIMEOUT_MS } from '../../../shared/config/server';
import { silentLogger } from '../../../shared/logging/logger';
import { toConnectError } from '../../../shared/rpc/errors';
import { openDatabase } from '../../../shared/storage/database';
import { MigrationLockTimeoutError, runMigrations } from '../../../shared/storage/migrations';
import { sessionConnection } from '../../../shared/storage/session';
import { isDatabaseUnavailable } from '../../../shared/storage/unavailable';
import { createTestDatabase } from '../../support/database';
import { startPgbouncer } from '../../support/pgbouncer';

let db: { url: string; drop(): Promise<void> };
const pools: Knex[] = [];

async function pool(
  extra: {
    statement_timeout_ms?: number;
    idle_in_transaction_timeout_ms?: number;
    session_url?: string;
    url?: string;
  } = {},
) {
  const knex = await openDatabase({ url: db.url, data_dir: '', pool_max: 1, ...extra }, silentLogger());
  pools.push(knex);
  return knex;
}

async function shown(knex: Knex): Promise<string> {
  const result = (await knex.raw('SHOW statement_timeout')) as { rows: { statement_timeout: string }[] };
  return result.rows[0]!.statement_timeout;
}

beforeAll(async () => {
  db = await createTestDatabase('stmt_timeout');
  const admin = new Client({ connectionString: db.url });
  await admin.connect();
  await admin.query('CREATE TABLE locked_here (n int)');
  await admin.query('INSERT INTO locked_here VALUES (1), (2)');
  await admin.end();
});

afterAll(async () => {
  for (const knex of pools.splice(0)) await knex.destroy();
  await db?.drop();
});

describe('database.statement_timeout_ms', () => {
  it('defaults to one minute, accepts 0 (no bound) and refuses what is out of range', () => {
    const schema = databaseSectionSchema('svc');
    expect(DEFAULT_STATEMENT_TIMEOUT_MS).toBe(60_000);
    expect(schema.parse({}).statement_timeout_ms).toBe(60_000);
    expect(schema.parse({ statement_timeout_ms: 0 }).statement_timeout_ms).toBe(0);
    expect(() => schema.parse({ statement_timeout_ms: -1 })).toThrow(/0 or more/);
    expect(() => schema.parse({ statement_timeout_ms: 86_400_001 })).toThrow(/at most 86400000/);
    expect(() => schema.parse({ statement_timeout_ms: 1.5 })).toThrow(/integer/);
  });

  it('is set on every connection of the pool: the default when absent, the configured value, none at 0', async () => {
    expect(await shown(await pool())).toBe('1min');
    expect(await shown(await pool({ statement_timeout_ms: 1500 }))).toBe('1500ms');
    expect(await shown(await pool({ statement_timeout_ms: 0 }))).toBe('0');
  });

  it('cancels a statement stuck behind a lock; the call is UNAVAILABLE and the same connection works after', async () => {
    const knex = await pool({ statement_timeout_ms: 200 });
    const holder = new Client({ connectionString: db.url });
    await holder.connect();
    try {
      await holder.query('BEGIN');
      await holder.query('LOCK TABLE locked_here IN ACCESS EXCLUSIVE MODE');
      const err = await knex.raw('SELECT count(*) AS n FROM locked_here').then(
        () => undefined,
        (e: unknown) => e,
      );
      expect((err as { code?: string }).code).toBe('57014');
      // A dependency that did not answer in time: retry later, without the driver's words.
      expect(isDatabaseUnavailable(err)).toBe(true);
      const wire = toConnectError(err);
      expect(wire.code).toBe(Code.Unavailable);
      expect(wire.rawMessage).not.toMatch(/locked_here|statement timeout|SELECT/);
    } finally {
      await holder.query('ROLLBACK');
      await holder.end();
    }
    // The pool has one connection: it was not left with the cancelled statement on it.
    const result = (await knex.raw('SELECT count(*) AS n FROM locked_here')) as { rows: { n: number }[] };
    expect(result.rows[0]!.n).toBe(2);
  });

  it('does not bound a migration: one longer than the pool statements may be still runs to its end', async () => {
    const knex = await pool({ statement_timeout_ms: 100 });
    const applied = await runMigrations(
      knex,
      [
        {
          name: 'slow_001',
          up: async (k: Knex) => {
            await k.raw('SELECT pg_sleep(0.5)');
            await k.raw('CREATE TABLE after_slow (n int)');
          },
        },
      ],
      { tableName: 'slow_migrations' },
    );
    expect(applied).toEqual(['slow_001']);
    await expect(knex.raw('SELECT * FROM after_slow')).resolves.toBeDefined();
    // SET LOCAL ended with the migration's transaction: the pool is bounded again.
    expect(await shown(knex)).toBe('100ms');
    await expect(knex.raw('SELECT pg_sleep(0.5)')).rejects.toMatchObject({ code: '57014' });
  });

  it('does not bound session connections (the migration lock may wait for another replica)', async () => {
    const knex = await pool({ statement_timeout_ms: 100 });
    const client = new Client(sessionConnection(knex));
    await client.connect();
    try {
      const result = await client.query<{ statement_timeout: string }>('SHOW statement_timeout');
      expect(result.rows[0]!.statement_timeout).toBe('0');
    } finally {
      await client.end();
    }
  });

  it('behind pgbouncer (session_url set) sends nothing the pooler would refuse', async () => {
    const bouncer = await startPgbouncer(db.url, 2);
    try {
      // pgbouncer answers "unsupported startup parameter: statement_timeout" to a client that sends it.
      const refused = new Client({ connectionString: bouncer.pooledUrl, statement_timeout: 100 });
      await expect(refused.connect()).rejects.toThrow(/unsupported startup parameter/);
      await refused.end().catch(() => undefined);

      const knex = await pool({
        url: bouncer.pooledUrl,
        session_url: db.url,
        statement_timeout_ms: 100,
        idle_in_transaction_timeout_ms: 100,
      });
      const result = (await knex.raw('SELECT count(*) AS n FROM locked_here')) as { rows: { n: number }[] };
      expect(result.rows[0]!.n).toBe(2);
    } finally {
      for (const knex of pools.splice(0)) await knex.destroy();
      await bouncer.stop();
    }
  });
});

describe('migrations behind a long transaction', () => {
  const alter = (name: string) => ({
    name,
    up: (k: Knex) => k.raw(`ALTER TABLE locked_here ADD COLUMN ${name} int`),
  });
  const first = { name: 'm_001', up: (k: Knex) => k.raw('CREATE TABLE made_first (n int)') };

  async function reader(): Promise<Client> {
    const client = new Client({ connectionString: db.url });
    await client.connect();
    await client.query('BEGIN');
    // Holds ACCESS SHARE on the table until it ends: an ALTER TABLE cannot have its lock.
    await client.query('SELECT count(*) FROM locked_here');
    return client;
  }

  it('gives up waiting for the lock, rolls back, and tries again once the transaction ended', async () => {
    const knex = await pool();
    const holder = await reader();
    const told: { migration: string | undefined; attempt: number; waitMs: number }[] = [];
    const applied = await runMigrations(knex, [first, alter('m_002')], {
      tableName: 'lock_retry_migrations',
      lockTimeoutMs: 50,
      lockRetryDelaysMs: [10, 10],
      onLockTimeout: async (info) => {
        told.push(info);
        await holder.query('ROLLBACK');
        await holder.end();
      },
    });
    expect(told).toEqual([{ migration: 'm_002', attempt: 1, waitMs: 10 }]);
    // Both, though m_001 committed in the first try: the names applied by this call.
    expect(applied).toEqual(['m_001', 'm_002']);
    const columns = (await knex.raw(
      `SELECT column_name FROM information_schema.columns WHERE table_name = 'locked_here' ORDER BY 1`,
    )) as { rows: { column_name: string }[] };
    expect(columns.rows.map((r) => r.column_name)).toEqual(['m_002', 'n']);
  });

  it('after its last try, fails naming the migration; what it had changed is rolled back', async () => {
    const knex = await pool();
    const holder = await reader();
    try {
      const err = await runMigrations(knex, [alter('m_003')], {
        tableName: 'lock_fail_migrations',
        lockTimeoutMs: 50,
        lockRetryDelaysMs: [10],
      }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(MigrationLockTimeoutError);
      expect((err as MigrationLockTimeoutError).migration).toBe('m_003');
      expect((err as MigrationLockTimeoutError).attempts).toBe(2);
      expect((err as Error).message).toMatch(/m_003 could not take its table locks in 2 tries/);
      expect(((err as Error).cause as { code?: string }).code).toBe('55P03');
    } finally {
      await holder.query('ROLLBACK');
      await holder.end();
    }
    const columns = (await knex.raw(
      `SELECT column_name FROM information_schema.columns WHERE table_name = 'locked_here' AND column_name = 'm_003'`,
    )) as { rows: unknown[] };
    expect(columns.rows).toEqual([]);
    // knex's own lock was freed: a later start applies it.
    await expect(
      runMigrations(knex, [alter('m_003')], { tableName: 'lock_fail_migrations' }),
    ).resolves.toEqual(['m_003']);
  });

  it('the lock timeout does not cut short a slow migration that waits for no lock', async () => {
    const knex = await pool({ statement_timeout_ms: 100 });
    const applied = await runMigrations(
      knex,
      [{ name: 'sleepy_001', up: (k: Knex) => k.raw('SELECT pg_sleep(0.3)') }],
      { tableName: 'sleepy_migrations', lockTimeoutMs: 50 },
    );
    expect(applied).toEqual(['sleepy_001']);
  });
});
