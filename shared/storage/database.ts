/**
 * Opening the SQL database every store uses: PostgreSQL through `pg` when a URL is configured, else
 * the embedded PGlite (through `knex-pglite`) in a local data directory.
 */
import { mkdirSync } from 'node:fs';
import knexFactory, { type Knex } from 'knex';
import { PGlite } from '@electric-sql/pglite';
import ClientPGLite from 'knex-pglite';
import { types as pgTypes } from 'pg';
import type { Logger } from '../logging/logger';
import { redactUrl } from '../logging/logger';

/** The `database` config section (snake_case: it is a file/env format). */
export interface DatabaseConfig {
  /** PostgreSQL URL; empty means the embedded PGlite. */
  url: string;
  /** PGlite data directory (created when missing); empty or `:memory:` keeps PGlite in memory. */
  data_dir: string;
  /** Maximum pg pool size (PGlite always uses one connection). */
  pool_max: number;
}

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

/** Opens the configured database and checks that it answers. The caller owns `destroy()`. */
export async function openDatabase(config: DatabaseConfig, logger: Logger): Promise<Knex> {
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
    knex = knexFactory({
      client: 'pg',
      connection: { connectionString: config.url, types: connectionTypes },
      pool: { min: 0, max: Math.max(1, config.pool_max) },
      log: knexLog,
    });
    log.info({ database: redactUrl(config.url), pool_max: config.pool_max }, 'opening PostgreSQL');
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

/** Normalises an aggregate or bigint column (string in pg, number or bigint in PGlite) to a number. */
export function toNumber(value: unknown): number {
  if (typeof value === 'number') return value;
  if (typeof value === 'bigint' || typeof value === 'string') return Number(value);
  if (value === null || value === undefined) return 0;
  throw new TypeError(`not a numeric column value: ${typeof value}`);
}
