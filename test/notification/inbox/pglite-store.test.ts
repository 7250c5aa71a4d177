import type { Knex } from 'knex';
import { DatabaseInboxStore } from '../../../services/notification/inbox/database-store';
import { notificationMigrations } from '../../../services/notification/migrations';
import { silentLogger } from '../../../shared/logging/logger';
import { openDatabase } from '../../../shared/storage/database';
import { runMigrations } from '../../../shared/storage/migrations';
import { describeInboxContract } from './inbox-contract';
import { requireVmModules } from './support';

// One in-memory PGlite for the whole file: each instance costs seconds and hundreds of MB.
describeInboxContract('DatabaseInboxStore on PGlite', async () => {
  requireVmModules();
  const knex: Knex = await openDatabase({ url: '', data_dir: ':memory:', pool_max: 1 }, silentLogger());
  await runMigrations(knex, notificationMigrations);
  return { store: new DatabaseInboxStore(knex), close: () => knex.destroy() };
});
