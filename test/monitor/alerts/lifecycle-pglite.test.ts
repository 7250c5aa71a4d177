/** The alert lifecycle contract on DatabaseAlertStore over embedded PGlite. */
import type { Knex } from 'knex';
import { DatabaseAlertStore } from '../../../services/monitor/alerts/database-store';
import { MONITOR_MIGRATIONS_TABLE, monitorMigrations } from '../../../services/monitor/migrations';
import { silentLogger } from '../../../shared/logging/logger';
import { openDatabase } from '../../../shared/storage/database';
import { runMigrations } from '../../../shared/storage/migrations';
import { requireVmModules } from '../../notification/inbox/support';
import { describeLifecycleContract } from './lifecycle-contract';
import { truncateAlertTables } from './support';

// One in-memory PGlite for the whole file: each instance costs seconds and hundreds of MB.
describeLifecycleContract('PGlite', async () => {
  requireVmModules();
  const knex: Knex = await openDatabase({ url: '', data_dir: ':memory:', pool_max: 1 }, silentLogger());
  await runMigrations(knex, monitorMigrations, { tableName: MONITOR_MIGRATIONS_TABLE });
  return {
    store: () => new DatabaseAlertStore(knex),
    reset: () => truncateAlertTables(knex),
    close: () => knex.destroy(),
  };
});
