/**
 * Opening the SQL database every store uses: PostgreSQL through `pg` when a URL is configured, else
 * the embedded PGlite (through `knex-pglite`) in a local data directory.
 */
import { mkdirSync } from 'node:fs';
import knexFactory, { type Knex } from 'knex';
import { PGlite } from '@electric-sql/pglite';
import ClientPGLite from 'knex-pglite';
import { types as pgTypes } from 'pg';
import {
  type DatabaseConfig,
  DEFAULT_IDLE_IN_TRANSACTION_TIMEOUT_MS,
  DEFAULT_STATEMENT_TIMEOUT_MS,
} from '../config/server';
import type { Logger } from '../logging/logger';
import { redactUrl } from '../logging/logger';
import { type NamedMigration, runMigrations } from './migrations';
import { rememberSessionUrl } from './session';

/** The `database` config section: its one definition is the schema in shared/config. */
export type { DatabaseConfig } from '../config/server';

/** Which engine a knex instance talks to. */
export type DatabaseEngine = 'postgres' | 'pglite';

const INT8_OID = 20;

/**
 * pg returns int8 (counts, bigserial) as strings; every value we store fits a double, so parse them as
 * numbers on our own connections only (no global type-parser side effect on other pg users).
 */
const connectionTypes = {
  getTypeParser(oid: number, format?: string) {
    if (oid === INT8_OID && format !== 'binary') return (value: string) => Number(value);
    return format === 'binary' ? pgTypes.getTypeParser(oid, 'binary') : pgTypes.getTypeParser(oid, 'text');
  },
};

/** The bounds of the `database` section: each takes its default when absent. */
type DatabaseBounds = 'statement_timeout_ms' | 'idle_in_transaction_timeout_ms';

/** What openDatabase reads: the `database` section (the time bounds default when absent). */
export type DatabaseOpenConfig = Omit<DatabaseConfig, DatabaseBounds> &
  Partial<Pick<DatabaseConfig, DatabaseBounds>>;

/** Opens the configured database and checks that it answers. The caller owns `destroy()`. */
export async function openDatabase(config: DatabaseOpenConfig, logger: Logger): Promise<Knex> {
  const log = logger.child({ component: 'database' });
  // knex's own warnings go to our logger, not to console.
  const knexLog = {
    warn: (message: unknown) => log.warn({ knex: message }, 'knex warning'),
    error: (message: unknown) => log.error({ knex: message }, 'knex error'),
    deprecate: (method: string, alternative: string) => log.warn({ method, alternative }, 'knex deprecation'),
    debug: (message: unknown) => log.debug({ knex: message }, 'knex debug'),
  };
  let knex: Knex;
  if (config.url) {
    // Sent as a startup parameter, so the server itself cancels a statement past the bound (the
    // connection stays usable, unlike a client-side timer that leaves the statement running on it).
    // The same for a transaction left idle by a stuck caller: the server ends its session, so its
    // locks go with it (the pool drops the dead connection: knex marks it on the client's error).
    // pgbouncer refuses unknown startup parameters: behind a pooler the role's setting must do it.
    const statementTimeoutMs = config.statement_timeout_ms ?? DEFAULT_STATEMENT_TIMEOUT_MS;
    const bounded = statementTimeoutMs > 0 && !config.session_url;
    const idleTimeoutMs = config.idle_in_transaction_timeout_ms ?? DEFAULT_IDLE_IN_TRANSACTION_TIMEOUT_MS;
    const idleBounded = idleTimeoutMs > 0 && !config.session_url;
    knex = knexFactory({
      client: 'pg',
      connection: {
        connectionString: config.url,
        types: connectionTypes,
        ...(bounded ? { statement_timeout: statementTimeoutMs } : {}),
        ...(idleBounded ? { idle_in_transaction_session_timeout: idleTimeoutMs } : {}),
      },
      pool: { min: 0, max: Math.max(1, config.pool_max) },
      log: knexLog,
      // A failed query's message names the statement with its placeholders, never the values bound
      // to it: by default knex writes the values into the message, and an error logged as `{ err }`
      // would carry recipients, message bodies and tokens into the logs.
      compileSqlOnError: false,
    });
    if (config.session_url) rememberSessionUrl(knex, config.session_url);
    log.info(
      {
        database: redactUrl(config.url),
        pool_max: config.pool_max,
        statement_timeout_ms: bounded ? statementTimeoutMs : 0,
        idle_in_transaction_timeout_ms: idleBounded ? idleTimeoutMs : 0,
        ...(config.session_url ? { session: redactUrl(config.session_url) } : {}),
      },
      'opening PostgreSQL',
    );
  } else {
    const inMemory = !config.data_dir || config.data_dir === ':memory:';
    if (!inMemory) mkdirSync(config.data_dir, { recursive: true });
    // Under jest, PGlite needs node's --experimental-vm-modules (it loads built-ins with import()).
    const pglite = new PGlite(inMemory ? undefined : config.data_dir);
    knex = knexFactory({
      client: ClientPGLite,
      dialect: 'postgres',
      connection: (() => ({ pglite })) as unknown as Knex.StaticConnectionConfig,
      log: knexLog,
      compileSqlOnError: false,
    });
    log.info({ data_dir: inMemory ? ':memory:' : config.data_dir }, 'opening embedded PGlite');
  }
  try {
    await knex.raw('select 1');
  } catch (err) {
    await knex.destroy().catch(() => undefined);
    throw err;
  }
  return knex;
}

/** The engine behind a knex instance opened by openDatabase. */
export function databaseEngine(knex: Knex): DatabaseEngine {
  return knex.client.config.client === 'pg' ? 'postgres' : 'pglite';
}

/**
 * The rows of a `knex.raw` result. `pg` and PGlite (through knex-pglite) both answer `{ rows }`;
 * every store reads raw results through this one cast, so a driver that answers otherwise is fixed
 * here once.
 */
export function rows<T>(result: unknown): T[] {
  return (result as { rows: T[] }).rows;
}

/** A timestamp column as a Date (`pg` and PGlite give a Date; a driver set to return text, a string). */
export function toDate(value: Date | string): Date {
  return value instanceof Date ? value : new Date(value);
}

/** A jsonb column as its value (`pg` and PGlite parse jsonb; a driver set to return text gives a string). */
export function jsonColumn<T>(value: T | string): T {
  return (typeof value === 'string' ? JSON.parse(value) : value) as T;
}

/** Normalises an aggregate or bigint column (string in pg, number or bigint in PGlite) to a number. */
export function toNumber(value: unknown): number {
  if (typeof value === 'number') return value;
  if (typeof value === 'bigint' || typeof value === 'string') return Number(value);
  if (value === null || value === undefined) return 0;
  throw new TypeError(`not a numeric column value: ${typeof value}`);
}

/** The migrations a service runs at start: an ordered list and the table that records them. */
export interface MigrationSet {
  migrations: readonly NamedMigration[];
  tableName: string;
}

/**
 * A service's one database: the composition root opens it once, runs every migration, and hands
 * `knex` to the areas (an area never opens its own pool); it closes it last at shutdown.
 */
export interface Storage {
  /** The shared connection (pool) every store uses. */
  readonly knex: Knex;
  readonly engine: DatabaseEngine;
  /**
   * The PostgreSQL URL for `LISTEN` connections (cross-replica events); undefined on PGlite, which
   * is one process and has no other replicas.
   */
  readonly listenUrl: string | undefined;
  /** The migrations applied by this start (empty when the schema was up to date). */
  readonly applied: readonly string[];
  /** Closes the pool; safe to call more than once. */
  close(): Promise<void>;
}

/** Opens the configured database and applies every pending migration of each set, in order. */
export async function openStorage(
  config: DatabaseOpenConfig,
  migrations: readonly MigrationSet[],
  logger: Logger,
): Promise<Storage> {
  const knex = await openDatabase(config, logger);
  const applied: string[] = [];
  try {
    for (const set of migrations) {
      applied.push(
        ...(await runMigrations(knex, set.migrations, {
          tableName: set.tableName,
          onLockTimeout: ({ migration, attempt, waitMs }) =>
            logger.warn(
              { migration, attempt, retryInMs: waitMs },
              'migration could not take a table lock (a long transaction holds the table): rolled back, trying again',
            ),
        })),
      );
    }
  } catch (err) {
    await knex.destroy().catch(() => undefined);
    throw err;
  }
  const engine = databaseEngine(knex);
  let closed: Promise<void> | undefined;
  return {
    knex,
    engine,
    listenUrl: engine === 'postgres' ? config.session_url || config.url : undefined,
    applied,
    close: () => (closed ??= knex.destroy()),
  };
}
