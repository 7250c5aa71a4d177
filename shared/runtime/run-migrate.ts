/**
 * `npm run migrate` of a service: loads its configuration, applies its schema migrations to the
 * configured database (PostgreSQL at database.url, or the embedded PGlite in database.data_dir) and
 * exits. The service also runs them at start; this is for deploy pipelines that migrate first. Each
 * service's migrate.ts names its config loader and migration sets; the rest lives here.
 *
 * Exit codes: 0 migrated (or already up to date), 2 invalid configuration, 1 the migration failed.
 */
import { ConfigError } from '../config';
import { createLogger, redactUrl, type LogFormat } from '../logging/logger';
import { type DatabaseOpenConfig, type MigrationSet, openStorage } from '../storage/database';

/** What the command reads of a service's configuration. */
export interface MigrateConfig {
  log: { level: string; format: LogFormat };
  database: DatabaseOpenConfig;
}

export interface MigrateCommand<C extends MigrateConfig> {
  /** The logger's name, e.g. `monitor-migrate`. */
  name: string;
  loadConfig(): C;
  /** The same sets the service applies at start, so both apply the same migrations. */
  sets: readonly MigrationSet[];
}

async function migrate<C extends MigrateConfig>(command: MigrateCommand<C>): Promise<number> {
  let config: C;
  try {
    config = command.loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`invalid configuration\n${err.message}\n`);
      return 2;
    }
    throw err;
  }
  const logger = createLogger({ name: command.name, level: config.log.level, format: config.log.format });
  const target = config.database.url
    ? redactUrl(config.database.url)
    : `PGlite in ${config.database.data_dir}`;
  const storage = await openStorage(config.database, command.sets, logger);
  try {
    const applied = storage.applied;
    logger.info({ target, applied }, applied.length ? 'migrations applied' : 'schema is up to date');
    return 0;
  } finally {
    await storage.close();
  }
}

/** Runs the command and exits the process with its code. */
export function runMigrate<C extends MigrateConfig>(command: MigrateCommand<C>): void {
  migrate(command).then(
    (code) => process.exit(code),
    (err: unknown) => {
      process.stderr.write(`migration failed: ${err instanceof Error ? err.message : String(err)}\n`);
      process.exit(1);
    },
  );
}
