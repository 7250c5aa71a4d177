import type { Knex } from 'knex';
import { DatabaseDeliveryStore } from '../../../services/notification/delivery/database-store';
import { notificationMigrations } from '../../../services/notification/migrations';
import { silentLogger } from '../../../shared/logging/logger';
import { openDatabase } from '../../../shared/storage/database';
import { runMigrations } from '../../../shared/storage/migrations';
import { describeDeliveryContract } from './delivery-contract';
import { requireVmModules } from './support';

// One in-memory PGlite for the whole file: each instance costs seconds and hundreds of MB.
describeDeliveryContract('DatabaseDeliveryStore on PGlite', async () => {
  requireVmModules();
  const knex: Knex = await openDatabase({ url: '', data_dir: ':memory:', pool_max: 1 }, silentLogger());
  await runMigrations(knex, notificationMigrations);
  // The contract drives time by hand: the store takes the caller's clock.
  return { store: new DatabaseDeliveryStore(knex, { clock: 'caller' }), close: () => knex.destroy() };
});
