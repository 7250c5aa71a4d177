/**
 * Per-test-file databases on the run's PostgreSQL server, so test files never see each other's rows.
 */
import { randomBytes } from 'node:crypto';
import type { Knex } from 'knex';
import { Client } from 'pg';
import { MONITOR_MIGRATIONS_TABLE, monitorMigrations } from '../../services/monitor/migrations';
import { notificationMigrations } from '../../services/notification/migrations';
import { silentLogger } from '../../shared/logging/logger';
import { openDatabase } from '../../shared/storage/database';
import { runMigrations } from '../../shared/storage/migrations';

/**
 * Embedded PGlite in memory (one connection, as the service opens it), migrated with a service's
 * migrations: what a store's PGlite tests open. Each instance costs seconds and hundreds of MB, so a
 * file opens one where it can.
 */
export async function migratedPglite(service: 'notification' | 'monitor'): Promise<Knex> {
  const knex = await openDatabase({ url: '', data_dir: ':memory:', pool_max: 1 }, silentLogger());
  if (service === 'notification') await runMigrations(knex, notificationMigrations);
  else await runMigrations(knex, monitorMigrations, { tableName: MONITOR_MIGRATIONS_TABLE });
  return knex;
}

/** The server URL the global setup exported; throws (never skips) when there is none. */
export function serverUrl(): string {
  const url = process.env.TEST_DATABASE_URL;
  if (!url) throw new Error('TEST_DATABASE_URL is not set: the jest global setup did not start PostgreSQL');
  return url;
}

/** Creates a fresh, empty database and returns its URL and a function that drops it. */
export async function createTestDatabase(prefix = 't'): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `${prefix}_${randomBytes(6).toString('hex')}`;
  const admin = new Client({ connectionString: serverUrl() });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  const url = new URL(serverUrl());
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const c = new Client({ connectionString: serverUrl() });
      await c.connect();
      try {
        await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await c.end();
      }
    },
  };
}

/** A fresh database and the knex pools a test opens on it (each its own, as replicas have). */
export interface PooledTestDatabase {
  url: string;
  /** The pools opened so far, in order. */
  readonly pools: readonly Knex[];
  /** Opens one more pool of at most `poolMax` connections (default: the database's). */
  pool(poolMax?: number): Promise<Knex>;
  /** Destroys every pool, then drops the database. */
  close(): Promise<void>;
}

/** Creates a fresh database whose pools are closed with it; `poolMax` is each pool's default size. */
export async function pooledTestDatabase(prefix: string, poolMax = 4): Promise<PooledTestDatabase> {
  const db = await createTestDatabase(prefix);
  const pools: Knex[] = [];
  return {
    url: db.url,
    pools,
    async pool(max = poolMax) {
      const knex = await openDatabase({ url: db.url, data_dir: '', pool_max: max }, silentLogger());
      pools.push(knex);
      return knex;
    },
    async close() {
      for (const knex of pools.splice(0)) await knex.destroy();
      await db.drop();
    },
  };
}

/** One knex on an engine, closed (and its database dropped) by `close`. */
export interface TestEngine {
  knex: Knex;
  close(): Promise<void>;
}

/**
 * Openers for both engines a store runs on, for `describe.each`: embedded PGlite in memory (one
 * connection) and a fresh PostgreSQL database named after `prefix` (two connections).
 */
export function testEngines(prefix: string): [string, () => Promise<TestEngine>][] {
  return [
    [
      'PGlite',
      async () => {
        const knex = await openDatabase({ url: '', data_dir: ':memory:', pool_max: 1 }, silentLogger());
        return { knex, close: () => knex.destroy() };
      },
    ],
    [
      'PostgreSQL',
      async () => {
        const db = await createTestDatabase(prefix);
        const knex = await openDatabase({ url: db.url, data_dir: '', pool_max: 2 }, silentLogger());
        return {
          knex,
          close: async () => {
            await knex.destroy();
            await db.drop();
          },
        };
      },
    ],
  ];
}

/**
 * Holds ACCESS EXCLUSIVE on `table` from `locker`'s connection until `release`: every other statement
 * on the table waits behind it (a stalled table, as a migration or an operator's lock makes it).
 */
export async function lockTable(locker: Knex, table: string): Promise<{ release(): Promise<void> }> {
  const trx = await locker.transaction();
  await trx.raw(`LOCK TABLE ${table} IN ACCESS EXCLUSIVE MODE`);
  return { release: async () => void (await trx.commit()) };
}

/**
 * Statements of the other sessions of `observer`'s database still active in the server (running, or
 * waiting for a lock) whose text matches `pattern` (ILIKE): what a cancel must have ended.
 */
export async function activeStatements(observer: Knex, pattern: string): Promise<number> {
  const { rows } = (await observer.raw(
    `SELECT count(*)::int AS n FROM pg_stat_activity
     WHERE datname = current_database() AND pid <> pg_backend_pid()
       AND state = 'active' AND query ILIKE ?`,
    [pattern],
  )) as { rows: { n: number }[] };
  return rows[0]!.n;
}
