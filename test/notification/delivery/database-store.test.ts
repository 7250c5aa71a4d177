import type { Knex } from 'knex';
import { DatabaseDeliveryStore } from '../../../services/notification/delivery/database-store';
import { notificationMigrations } from '../../../services/notification/migrations';
import { silentLogger } from '../../../shared/logging/logger';
import { openDatabase } from '../../../shared/storage/database';
import { runMigrations } from '../../../shared/storage/migrations';
import { createTestDatabase } from '../../support/database';
import { describeDeliveryContract } from './delivery-contract';

describeDeliveryContract('DatabaseDeliveryStore on PostgreSQL', async () => {
  const db = await createTestDatabase('delivery');
  const knex: Knex = await openDatabase({ url: db.url, data_dir: '', pool_max: 4 }, silentLogger());
  await runMigrations(knex, notificationMigrations);
  return {
    // The contract drives time by hand: the store takes the caller's clock.
    store: new DatabaseDeliveryStore(knex, { clock: 'caller' }),
    close: async () => {
      await knex.destroy();
      await db.drop();
    },
  };
});
