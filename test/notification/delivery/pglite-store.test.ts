import type { Knex } from 'knex';
import { DatabaseDeliveryStore } from '../../../services/notification/delivery/database-store';
import { describeDeliveryContract } from './delivery-contract';
import { requireVmModules } from './support';
import { migratedPglite } from '../../support/database';

// One in-memory PGlite for the whole file: each instance costs seconds and hundreds of MB.
describeDeliveryContract('DatabaseDeliveryStore on PGlite', async () => {
  requireVmModules();
  const knex: Knex = await migratedPglite('notification');
  // The contract drives time by hand: the store takes the caller's clock.
  return { store: new DatabaseDeliveryStore(knex, { clock: 'caller' }), close: () => knex.destroy() };
});
