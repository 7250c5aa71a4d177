import { join } from 'node:path';
import type { Knex } from 'knex';
import { PassThrough } from 'node:stream';
import { createLogger, silentLogger } from '../../../shared/logging/logger';
import { databaseEngine, openDatabase, openStorage, toNumber } from '../../../shared/storage/database';
import { runMigrations } from '../../../shared/storage/migrations';
import { createTestDatabase } from '../../support/database';

let db: { url: string; drop(): Promise<void> };
let knex: Knex;

beforeAll(async () => {
  db = await createTestDatabase('storage');
  knex = await openDatabase({ url: db.url, data_dir: '', pool_max: 2 }, silentLogger());
});

afterAll(async () => {
  await knex?.destroy();
  await db?.drop();
});

describe('openDatabase', () => {
  it('when a URL is configured, it talks to PostgreSQL through pg', () => {
    expect(databaseEngine(knex)).toBe('postgres');
  });

  it('when PostgreSQL returns a count, it arrives as a number, not a string', async () => {
    const result = await knex.raw(
      'SELECT count(*) AS n, 9007199254740991::bigint AS big FROM generate_series(1, 3)',
    );
    expect(result.rows[0]).toEqual({ n: 3, big: 9007199254740991 });
  });

  it('when the server cannot be reached, it rejects instead of returning a dead pool', async () => {
    const url = new URL(db.url);
    url.port = '1';
    await expect(
      openDatabase({ url: url.toString(), data_dir: '', pool_max: 1 }, silentLogger()),
    ).rejects.toThrow();
  });
});

describe('a failed query in the logs', () => {
  // Values bound to a statement are personal data (recipients, bodies, tokens): a failed query's
  // error, logged as `{ err }`, names the statement and the code, never the values (knex's message,
  // PostgreSQL's `detail`).
  const open = async (engine: 'postgres' | 'pglite'): Promise<Knex> =>
    engine === 'postgres'
      ? knex
      : openDatabase({ url: '', data_dir: ':memory:', pool_max: 1 }, silentLogger());

  it.each(['postgres', 'pglite'] as const)('on %s, carries no bound value', async (engine) => {
    const k = await open(engine);
    try {
      const table = `leak_${engine}`;
      await k.raw(`CREATE TABLE IF NOT EXISTS ${table} (recipient text PRIMARY KEY)`);
      const secret = 'ann.secret@example.com';
      const body = 'شالوم 日本 😀 private body';
      await k.raw(`INSERT INTO ${table} (recipient) VALUES (?) ON CONFLICT DO NOTHING`, [secret]);
      const failures = await Promise.all([
        k.raw(`INSERT INTO ${table} (recipient) VALUES (?)`, [secret]).catch((e: unknown) => e),
        k.raw('SELECT ?::int AS n', [body]).catch((e: unknown) => e),
      ]);
      let text = '';
      const out = new PassThrough();
      out.on('data', (chunk: Buffer) => (text += chunk.toString()));
      const logger = createLogger({ name: 'svc', format: 'json', destination: out });
      for (const err of failures) {
        expect(err).toBeInstanceOf(Error);
        logger.error({ err }, 'query failed');
        // knex's part of the message: the statement without its values.
        expect((err as Error).message).not.toContain(secret);
      }
      logger.flush();
      expect(text).toContain('23505');
      expect(text).toContain('22P02');
      expect(text).toContain(`INSERT INTO ${table} (recipient) VALUES ($1)`);
      for (const value of [secret, body, 'ann.secret', '日本']) expect(text).not.toContain(value);
    } finally {
      if (k !== knex) await k.destroy();
    }
  });
});

describe('toNumber', () => {
  it('when given a pg string, a bigint or null, it returns a number', () => {
    expect(toNumber('42')).toBe(42);
    expect(toNumber(BigInt(7))).toBe(7);
    expect(toNumber(null)).toBe(0);
  });
});

describe('runMigrations', () => {
  it('when given a directory of TypeScript migrations, it applies them in order, once', async () => {
    const directory = join(__dirname, 'fixtures', 'migrations');
    expect(await runMigrations(knex, directory, { tableName: 'fixture_migrations' })).toEqual([
      '001_widgets',
      '002_gadgets',
    ]);
    expect(await runMigrations(knex, directory, { tableName: 'fixture_migrations' })).toEqual([]);
    await knex.raw("INSERT INTO widgets (name) VALUES ('w')");
    expect((await knex.raw('SELECT count(*) AS n FROM gadgets')).rows[0].n).toBe(0);
  });

  it('when given a list, it records each migration under its listed name', async () => {
    const applied = await runMigrations(
      knex,
      [{ name: 'list_001', up: (k) => k.raw('CREATE TABLE listed (id int)') }],
      { tableName: 'list_migrations' },
    );
    expect(applied).toEqual(['list_001']);
    const names = await knex('list_migrations').select('name');
    expect(names).toEqual([{ name: 'list_001' }]);
  });

  it('when replicas migrate one database at the same moment, each succeeds and every migration runs once', async () => {
    const replicas = await Promise.all(
      [1, 2, 3].map(() => openDatabase({ url: db.url, data_dir: '', pool_max: 2 }, silentLogger())),
    );
    try {
      const list = [
        { name: 'race_001', up: (k: Knex) => k.raw('CREATE TABLE raced (id int)') },
        { name: 'race_002', up: (k: Knex) => k.raw('ALTER TABLE raced ADD COLUMN name text') },
      ];
      const results = await Promise.all(
        replicas.map((r) => runMigrations(r, list, { tableName: 'race_migrations' })),
      );
      // Exactly one replica applied both; the others found nothing left to do.
      expect(results.map((applied) => applied.length).sort()).toEqual([0, 0, 2]);
      const [row] = await knex('race_migrations').count({ n: '*' });
      expect(toNumber(row!.n)).toBe(2);
    } finally {
      await Promise.all(replicas.map((r) => r.destroy()));
    }
  });
});

describe('openStorage', () => {
  it('opens the database, applies every migration set in order, and reports what it applied', async () => {
    const own = await createTestDatabase('storage_root');
    const sets = [
      {
        migrations: [{ name: 'a_001', up: (k: Knex) => k.raw('CREATE TABLE a_things (id int)') }],
        tableName: 'a_migrations',
      },
      {
        // The second set may build on the first: sets run in order.
        migrations: [
          { name: 'b_001', up: (k: Knex) => k.raw('CREATE TABLE b_things (a int) INHERITS (a_things)') },
        ],
        tableName: 'b_migrations',
      },
    ];
    try {
      const storage = await openStorage({ url: own.url, data_dir: '', pool_max: 2 }, sets, silentLogger());
      expect(storage.engine).toBe('postgres');
      expect(storage.listenUrl).toBe(own.url);
      expect(storage.applied).toEqual(['a_001', 'b_001']);
      await storage.close();
      await storage.close(); // a second close is harmless

      const again = await openStorage({ url: own.url, data_dir: '', pool_max: 1 }, sets, silentLogger());
      expect(again.applied).toEqual([]);
      await again.close();
    } finally {
      await own.drop();
    }
  });

  it('when a migration fails, it rejects with its error and closes the pool it opened', async () => {
    const own = await createTestDatabase('storage_root');
    const sets = [
      {
        migrations: [{ name: 'bad_001', up: (k: Knex) => k.raw('CREATE TABLE broken (') }],
        tableName: 'bad_migrations',
      },
    ];
    try {
      await expect(
        openStorage({ url: own.url, data_dir: '', pool_max: 1 }, sets, silentLogger()),
      ).rejects.toThrow(/syntax error/);
    } finally {
      // DROP ... WITH (FORCE) would hide a leaked connection; a plain count shows it.
      const probe = await openDatabase({ url: own.url, data_dir: '', pool_max: 1 }, silentLogger());
      const others = await probe.raw(
        'SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()',
      );
      await probe.destroy();
      expect(others.rows[0].n).toBe(0);
      await own.drop();
    }
  });
});
