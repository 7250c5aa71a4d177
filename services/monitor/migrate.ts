/**
 * `npm run migrate`: applies the monitor service's schema migrations to the configured database and
 * exits (shared/runtime/run-migrate.ts).
 */
import { runMigrate } from '../../shared/runtime/run-migrate';
import { loadMonitorConfig } from './config';
import { MONITOR_MIGRATION_SETS } from './app';

runMigrate({ name: 'monitor-migrate', loadConfig: loadMonitorConfig, sets: MONITOR_MIGRATION_SETS });
