/**
 * `npm run migrate`: applies the monitor service's schema migrations to the configured database
 * (PostgreSQL at database.url, or the embedded PGlite in database.data_dir) and exits. The service
 * also runs them at start; this is for deploy pipelines that migrate first.
 */
import { ConfigError } from '../../shared/config';
import { createLogger, redactUrl } from '../../shared/logging/logger';
import { openStorage } from '../../shared/storage/database';
import { loadMonitorConfig } from './config';
import { MONITOR_MIGRATION_SETS } from './app';

async function main(): Promise<number> {
  let config;
  try {
    config = loadMonitorConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`invalid configuration\n${err.message}\n`);
      return 2;
    }
    throw err;
  }
  const logger = createLogger({
    name: 'monitor-migrate',
    level: config.log.level,
    format: config.log.format,
  });
  const target = config.database.url
    ? redactUrl(config.database.url)
    : `PGlite in ${config.database.data_dir}`;
  // The same storage root the service opens at start, so both apply the same migration sets.
  const storage = await openStorage(config.database, MONITOR_MIGRATION_SETS, logger);
  try {
    const applied = storage.applied;
    logger.info({ target, applied }, applied.length ? 'migrations applied' : 'schema is up to date');
    return 0;
  } finally {
    await storage.close();
  }
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`migration failed: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  },
);
