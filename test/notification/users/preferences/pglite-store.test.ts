import type { Knex } from 'knex';
import { notificationMigrations } from '../../../../services/notification/migrations';
import { DatabasePreferenceStore } from '../../../../services/notification/users/preferences';
import { silentLogger } from '../../../../shared/logging/logger';
import { openDatabase } from '../../../../shared/storage/database';
import { runMigrations } from '../../../../shared/storage/migrations';
import { requireVmModules } from '../../inbox/support';
import { describePreferenceContract } from './preference-contract';

// One in-memory PGlite for the whole file: each instance costs seconds and hundreds of MB.
describePreferenceContract('DatabasePreferenceStore on PGlite', async () => {
  requireVmModules();
  const knex: Knex = await openDatabase({ url: '', data_dir: ':memory:', pool_max: 1 }, silentLogger());
  await runMigrations(knex, notificationMigrations);
  return { store: new DatabasePreferenceStore(knex), close: () => knex.destroy() };
});
