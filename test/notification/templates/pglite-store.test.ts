import type { Knex } from 'knex';
import { DatabaseTemplateStore } from '../../../services/notification/templates/database-store';
import { notificationMigrations } from '../../../services/notification/migrations';
import { silentLogger } from '../../../shared/logging/logger';
import { openDatabase } from '../../../shared/storage/database';
import { runMigrations } from '../../../shared/storage/migrations';
import { requireVmModules } from '../inbox/support';
import { describeTemplateStoreContract } from './store-contract';

// One in-memory PGlite for the whole file: each instance costs seconds and hundreds of MB.
describeTemplateStoreContract('DatabaseTemplateStore on PGlite', async () => {
  requireVmModules();
  const knex: Knex = await openDatabase({ url: '', data_dir: ':memory:', pool_max: 1 }, silentLogger());
  await runMigrations(knex, notificationMigrations);
  return { store: new DatabaseTemplateStore(knex), close: () => knex.destroy() };
});
