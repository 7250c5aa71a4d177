import type { Knex } from 'knex';
import { DatabaseDeliveryStore } from '../../../../services/notification/delivery/database-store';
import { InMemoryDeliveryStore } from '../../../../services/notification/delivery/memory-store';
import { notificationMigrations } from '../../../../services/notification/migrations';
import { silentLogger } from '../../../../shared/logging/logger';
import { openDatabase } from '../../../../shared/storage/database';
import { runMigrations } from '../../../../shared/storage/migrations';
import { pooledTestDatabase } from '../../../support/database';
import { requireVmModules } from '../../delivery/support';
import { describeActivityFilters } from './activity-store-contract';

describeActivityFilters('InMemoryDeliveryStore', async () => ({
  store: new InMemoryDeliveryStore(),
  close: async () => {},
}));

describeActivityFilters('DatabaseDeliveryStore on PGlite', async () => {
  requireVmModules();
  const knex: Knex = await openDatabase({ url: '', data_dir: ':memory:', pool_max: 1 }, silentLogger());
  await runMigrations(knex, notificationMigrations);
  return { store: new DatabaseDeliveryStore(knex, { clock: 'caller' }), close: () => knex.destroy() };
});

describeActivityFilters('DatabaseDeliveryStore on PostgreSQL', async () => {
  const db = await pooledTestDatabase('activitypg');
  const knex = await db.pool();
  await runMigrations(knex, notificationMigrations);
  return { store: new DatabaseDeliveryStore(knex, { clock: 'caller' }), close: () => db.close() };
});
