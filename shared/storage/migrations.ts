/**
 * Running knex migrations from an explicit list of modules, so the same code works from TypeScript
 * sources (jest/swc) and from compiled JavaScript (dist) without depending on file extensions.
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Knex } from 'knex';
import { Client } from 'pg';
import { sleepMs } from '../runtime/backoff';
import { sessionConnection } from './session';

/** One migration: a stable name (recorded in the migrations table) and its up/down functions. */
export interface NamedMigration {
  name: string;
  up(knex: Knex): Promise<unknown>;
  down?(knex: Knex): Promise<unknown>;
}

/** Default of RunMigrationsOptions.lockTimeoutMs. */
export const MIGRATION_LOCK_TIMEOUT_MS = 5_000;
/** Default of RunMigrationsOptions.lockRetryDelaysMs: about two minutes of tries in all. */
export const MIGRATION_LOCK_RETRY_DELAYS_MS: readonly number[] = [
  1_000, 2_000, 4_000, 8_000, 15_000, 30_000, 30_000, 30_000,
];

/** A knex MigrationSource over an explicit, ordered list. */
export class ListMigrationSource implements Knex.MigrationSource<NamedMigration> {
  /** The migration whose up() or down() ran last (named in a lock timeout's error). */
  current: string | undefined;

  constructor(
    private readonly migrations: readonly NamedMigration[],
    private readonly lockTimeoutMs = MIGRATION_LOCK_TIMEOUT_MS,
  ) {}

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
    const prepare = async (k: Knex) => {
      this.current = migration.name;
      return bounds(k, this.lockTimeoutMs);
    };
    return {
      up: async (k) => migration.up(await prepare(k)),
      down: async (k) => down(await prepare(k)),
    };
  }
}

/**
 * The time bounds of a migration's transaction (knex runs each migration in its own, so `SET LOCAL`
 * ends with it). No `statement_timeout` (database.statement_timeout_ms): building an index or copying
 * the rows of a large table may take longer than any request's statement. A `lock_timeout`: other
 * replicas serve traffic while a new one migrates (a rolling deploy), and an ALTER queued behind one
 * long transaction would hold every later statement on its table behind it (PostgreSQL queues lock
 * requests): the table would stop answering for as long as that transaction lasts. Past the bound
 * the migration is rolled back and tried again (runMigrations).
 */
async function bounds(k: Knex, lockTimeoutMs: number): Promise<Knex> {
  if (k.isTransaction && k.client.config.client === 'pg') {
    await k.raw(`SET LOCAL statement_timeout = 0`);
    await k.raw(`SET LOCAL lock_timeout = ${Math.max(1, Math.floor(lockTimeoutMs))}`);
  }
  return k;
}

/** A statement gave up waiting for a lock (lock_timeout). */
function isLockTimeout(err: unknown): boolean {
  return (err as { code?: unknown } | null)?.code === '55P03';
}

/** Options of runMigrations. */
export interface RunMigrationsOptions {
  /** Table that records applied migrations; one per migration list. */
  tableName?: string;
  /**
   * How long one statement of a migration waits for a table lock (PostgreSQL `lock_timeout`) before
   * the migration is rolled back and tried again; default MIGRATION_LOCK_TIMEOUT_MS.
   */
  lockTimeoutMs?: number;
  /** The waits before each new try after a lock timeout; default MIGRATION_LOCK_RETRY_DELAYS_MS. */
  lockRetryDelaysMs?: readonly number[];
  /** Told before each wait (the composition root logs it; tests end the blocking transaction). */
  onLockTimeout?(info: {
    migration: string | undefined;
    attempt: number;
    waitMs: number;
  }): void | Promise<void>;
}

/** Migrations that could not take their table locks in any try. */
export class MigrationLockTimeoutError extends Error {
  constructor(
    readonly migration: string | undefined,
    readonly attempts: number,
    options: { cause: unknown },
  ) {
    super(
      `migration ${migration ?? '(unknown)'} could not take its table locks in ${attempts} tries: ` +
        'a long transaction holds a table it changes; end it (pg_stat_activity) and start again',
      options,
    );
    this.name = 'MigrationLockTimeoutError';
  }
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
  const delays = options.lockRetryDelaysMs ?? MIGRATION_LOCK_RETRY_DELAYS_MS;
  const migrate = async () => {
    const before = await recordedNames(knex, tableName);
    for (let attempt = 1; ; attempt++) {
      const migrationSource = new ListMigrationSource(list, options.lockTimeoutMs);
      try {
        await knex.migrate.latest({ migrationSource, tableName });
        break;
      } catch (err) {
        if (!isLockTimeout(err)) throw err;
        // The migrations before the one that timed out are committed (one transaction each); the
        // next try starts from it.
        const waitMs = delays[attempt - 1];
        if (waitMs === undefined) {
          throw new MigrationLockTimeoutError(migrationSource.current, attempt, { cause: err });
        }
        await options.onLockTimeout?.({ migration: migrationSource.current, attempt, waitMs });
        await sleepMs(waitMs);
      }
    }
    const after = await recordedNames(knex, tableName);
    return list.map((m) => m.name).filter((name) => after.has(name) && !before.has(name));
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

/** The migration names recorded in `tableName` (none when knex has not made the table yet). */
async function recordedNames(knex: Knex, tableName: string): Promise<Set<string>> {
  if (!(await knex.schema.hasTable(tableName))) return new Set();
  return new Set(((await knex(tableName).select('name')) as { name: string }[]).map((r) => r.name));
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
