import type { Knex } from 'knex';
import { notificationMigrations } from '../../../services/notification/migrations';
import { DatabaseNotificationStore } from '../../../services/notification/notify/database-store';
import { silentLogger } from '../../../shared/logging/logger';
import { openDatabase } from '../../../shared/storage/database';
import { runMigrations } from '../../../shared/storage/migrations';
import { requireVmModules } from '../inbox/support';
import { describeNotificationStoreContract } from './store-contract';

// One in-memory PGlite for the whole file: each instance costs seconds and hundreds of MB.
describeNotificationStoreContract('DatabaseNotificationStore on PGlite', async () => {
  requireVmModules();
  const knex: Knex = await openDatabase({ url: '', data_dir: ':memory:', pool_max: 1 }, silentLogger());
  await runMigrations(knex, notificationMigrations);
  return { store: new DatabaseNotificationStore(knex), close: () => knex.destroy() };
});
