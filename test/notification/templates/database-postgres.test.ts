import { DatabaseTemplateStore } from '../../../services/notification/templates/database-store';
import { notificationMigrations } from '../../../services/notification/migrations';
import { silentLogger } from '../../../shared/logging/logger';
import { openDatabase } from '../../../shared/storage/database';
import { runMigrations } from '../../../shared/storage/migrations';
import { createTestDatabase } from '../../support/database';
import { describeTemplateStoreContract } from './store-contract';

describeTemplateStoreContract('DatabaseTemplateStore on PostgreSQL', async () => {
  const db = await createTestDatabase('templatespg');
  const knex = await openDatabase({ url: db.url, data_dir: '', pool_max: 4 }, silentLogger());
  await runMigrations(knex, notificationMigrations);
  return {
    store: new DatabaseTemplateStore(knex),
    close: async () => {
      await knex.destroy();
      await db.drop();
    },
  };
});
