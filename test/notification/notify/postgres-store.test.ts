import type { Knex } from 'knex';
import { DatabaseDeliveryStore } from '../../../services/notification/delivery/database-store';
import { notificationMigrations } from '../../../services/notification/migrations';
import { DatabaseNotificationStore } from '../../../services/notification/notify/database-store';
import { silentLogger } from '../../../shared/logging/logger';
import { openDatabase } from '../../../shared/storage/database';
import { runMigrations } from '../../../shared/storage/migrations';
import { createTestDatabase } from '../../support/database';
import { describeDeliveryEraseUser } from './delivery-erase-contract';
import { describeTopicPages } from './topic-pages-contract';
import { describeNotificationStoreContract } from './store-contract';

let opened: Promise<{ knex: Knex; drop(): Promise<void> }> | undefined;
function postgres(): Promise<Knex> {
  opened ??= (async () => {
    const db = await createTestDatabase('notifypg');
    const knex = await openDatabase({ url: db.url, data_dir: '', pool_max: 4 }, silentLogger());
    await runMigrations(knex, notificationMigrations);
    return { knex, drop: () => db.drop() };
  })();
  return opened.then((o) => o.knex);
}

afterAll(async () => {
  const o = await opened;
  await o?.knex.destroy();
  await o?.drop();
});

describeNotificationStoreContract('DatabaseNotificationStore on PostgreSQL', async () => ({
  store: new DatabaseNotificationStore(await postgres()),
  close: async () => undefined,
}));

describeDeliveryEraseUser(
  'DatabaseDeliveryStore on PostgreSQL',
  async () => new DatabaseDeliveryStore(await postgres()),
);

describeTopicPages(
  'DatabaseNotificationStore on PostgreSQL',
  async () => new DatabaseNotificationStore(await postgres()),
);
