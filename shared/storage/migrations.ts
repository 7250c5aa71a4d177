/**
 * Running knex migrations from an explicit list of modules, so the same code works from TypeScript
 * sources (jest/swc) and from compiled JavaScript (dist) without depending on file extensions.
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Knex } from 'knex';
import { Client } from 'pg';
import { sessionConnection } from './session';

/** One migration: a stable name (recorded in the migrations table) and its up/down functions. */
export interface NamedMigration {
  name: string;
  up(knex: Knex): Promise<unknown>;
  down?(knex: Knex): Promise<unknown>;
}

/** A knex MigrationSource over an explicit, ordered list. */
export class ListMigrationSource implements Knex.MigrationSource<NamedMigration> {
  constructor(private readonly migrations: readonly NamedMigration[]) {}

  async getMigrations(): Promise<NamedMigration[]> {
    return [...this.migrations];
  }

  getMigrationName(migration: NamedMigration): string {
    return migration.name;
  }

  async getMigration(migration: NamedMigration): Promise<Knex.Migration> {
    // knex insists on a down(); a migration without one refuses to roll back.
    const down = migration.down
      ? (k: Knex) => migration.down!(k)
      : async () => {
          throw new Error(`migration ${migration.name} cannot be rolled back`);
        };
    return { up: async (k) => migration.up(await unbounded(k)), down: async (k) => down(await unbounded(k)) };
  }
}

/**
 * A migration runs without the pool's `statement_timeout` (database.statement_timeout_ms): building
 * an index or copying rows of a large table may take longer than any request's statement. knex runs
 * each migration in its own transaction, so `SET LOCAL` ends with it.
 */
async function unbounded(k: Knex): Promise<Knex> {
  if (k.isTransaction && k.client.config.client === 'pg') await k.raw('SET LOCAL statement_timeout = 0');
  return k;
}

/** Options of runMigrations. */
export interface RunMigrationsOptions {
  /** Table that records applied migrations; one per migration list. */
  tableName?: string;
}

/**
 * Applies every pending migration. `source` is an ordered list of migrations, or a directory whose
 * `.js`/`.ts` modules (not `.d.ts`, not `index`) each export `up` (and optionally `down`), in file-name
 * order; the name recorded is the file name without its extension, so sources and dist agree.
 * Returns the names applied now.
 */
export async function runMigrations(
  knex: Knex,
  source: readonly NamedMigration[] | string,
  options: RunMigrationsOptions = {},
): Promise<string[]> {
  const list = typeof source === 'string' ? loadDirectory(source) : source;
  const tableName = options.tableName ?? 'knex_migrations';
  const migrate = async () => {
    const [, applied] = (await knex.migrate.latest({
      migrationSource: new ListMigrationSource(list),
      tableName,
    })) as [number, string[]];
    return applied;
  };
  // PGlite is one process; on a PostgreSQL server, replicas that start together take turns.
  if (knex.client.config.client !== 'pg') return migrate();
  return withMigrationLock(knex, tableName, migrate);
}

/**
 * Runs `fn` holding a PostgreSQL session advisory lock named after the migrations table, on a
 * connection of its own (knex's migrator uses the pool). Without it, replicas starting at the same
 * moment race to create knex's bookkeeping tables and one of them fails to start ("relation
 * knex_migrations_lock already exists"); with it, the second waits, then finds nothing to do.
 */
async function withMigrationLock<T>(knex: Knex, tableName: string, fn: () => Promise<T>): Promise<T> {
  const client = new Client(sessionConnection(knex));
  // A connection error after connect() must not crash the process; the query that needs it fails.
  client.on('error', () => undefined);
  await client.connect();
  const key = `svc.migrations:${tableName}`;
  try {
    await client.query('SELECT pg_advisory_lock(hashtext($1::text), 1)', [key]);
    try {
      return await fn();
    } finally {
      await client.query('SELECT pg_advisory_unlock(hashtext($1::text), 1)', [key]);
    }
  } finally {
    await client.end().catch(() => undefined);
  }
}

function loadDirectory(directory: string): NamedMigration[] {
  const files = readdirSync(directory)
    .filter((f) => /\.(js|ts)$/.test(f) && !f.endsWith('.d.ts') && !/^index\.(js|ts)$/.test(f))
    .sort();
  return files.map((file) => {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const mod = require(join(directory, file)) as Partial<NamedMigration>;
    if (typeof mod.up !== 'function') throw new Error(`migration ${file} exports no up()`);
    return { name: file.replace(/\.(js|ts)$/, ''), up: mod.up, down: mod.down };
  });
}
