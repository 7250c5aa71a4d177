import { notificationMigrations } from '../../../services/notification/migrations';
import { DatabaseNotificationStore } from '../../../services/notification/notify/database-store';
import { silentLogger } from '../../../shared/logging/logger';
import { openDatabase } from '../../../shared/storage/database';
import { runMigrations } from '../../../shared/storage/migrations';
import { createTestDatabase } from '../../support/database';
import { describeNotificationStoreContract } from './store-contract';

describeNotificationStoreContract('DatabaseNotificationStore on PostgreSQL', async () => {
  const db = await createTestDatabase('notifypg');
  const knex = await openDatabase({ url: db.url, data_dir: '', pool_max: 4 }, silentLogger());
  await runMigrations(knex, notificationMigrations);
  return {
    store: new DatabaseNotificationStore(knex),
    close: async () => {
      await knex.destroy();
      await db.drop();
    },
  };
});
