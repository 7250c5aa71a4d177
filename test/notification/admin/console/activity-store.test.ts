import type { Knex } from 'knex';
import { DatabaseDeliveryStore } from '../../../../services/notification/delivery/database-store';
import { InMemoryDeliveryStore } from '../../../../services/notification/delivery/memory-store';
import { notificationMigrations } from '../../../../services/notification/migrations';
import { runMigrations } from '../../../../shared/storage/migrations';
import { pooledTestDatabase, migratedPglite } from '../../../support/database';
import { requireVmModules } from '../../delivery/support';
import { describeActivityFilters } from './activity-store-contract';

describeActivityFilters('InMemoryDeliveryStore', async () => ({
  store: new InMemoryDeliveryStore(),
  close: async () => {},
}));

describeActivityFilters('DatabaseDeliveryStore on PGlite', async () => {
  requireVmModules();
  const knex: Knex = await migratedPglite('notification');
  return { store: new DatabaseDeliveryStore(knex, { clock: 'caller' }), close: () => knex.destroy() };
});

describeActivityFilters('DatabaseDeliveryStore on PostgreSQL', async () => {
  const db = await pooledTestDatabase('activitypg');
  const knex = await db.pool();
  await runMigrations(knex, notificationMigrations);
  return { store: new DatabaseDeliveryStore(knex, { clock: 'caller' }), close: () => db.close() };
});
