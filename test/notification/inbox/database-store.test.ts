import type { Knex } from 'knex';
import { DatabaseInboxStore } from '../../../services/notification/inbox/database-store';
import { notificationMigrations } from '../../../services/notification/migrations';
import { silentLogger } from '../../../shared/logging/logger';
import { openDatabase } from '../../../shared/storage/database';
import { runMigrations } from '../../../shared/storage/migrations';
import { createTestDatabase } from '../../support/database';
import { describeInboxContract } from './inbox-contract';

describeInboxContract('DatabaseInboxStore on PostgreSQL', async () => {
  const db = await createTestDatabase('inbox');
  const knex: Knex = await openDatabase({ url: db.url, data_dir: '', pool_max: 4 }, silentLogger());
  await runMigrations(knex, notificationMigrations);
  return {
    store: new DatabaseInboxStore(knex),
    close: async () => {
      await knex.destroy();
      await db.drop();
    },
  };
});
