import { join } from 'node:path';
import type { Knex } from 'knex';
import { silentLogger } from '../../../shared/logging/logger';
import { databaseEngine, openDatabase, toNumber } from '../../../shared/storage/database';
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
});
