import type { Knex } from 'knex';
import { DatabaseUserStore } from '../../../services/notification/users/database-store';
import { notificationMigrations } from '../../../services/notification/migrations';
import { silentLogger } from '../../../shared/logging/logger';
import { openDatabase } from '../../../shared/storage/database';
import { runMigrations } from '../../../shared/storage/migrations';
import { requireVmModules } from '../inbox/support';
import { describeUsersContract } from './users-contract';

// One in-memory PGlite for the whole file: each instance costs seconds and hundreds of MB.
describeUsersContract('DatabaseUserStore on PGlite', async () => {
  requireVmModules();
  const knex: Knex = await openDatabase({ url: '', data_dir: ':memory:', pool_max: 1 }, silentLogger());
  await runMigrations(knex, notificationMigrations);
  return { store: new DatabaseUserStore(knex), close: () => knex.destroy() };
});
