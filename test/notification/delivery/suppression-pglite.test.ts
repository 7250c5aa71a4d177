import type { Knex } from 'knex';
import { DatabaseDeliveryStore } from '../../../services/notification/delivery/database-store';
import { DatabaseSuppressionStore } from '../../../services/notification/delivery/suppression-database-store';
import { describeSuppressionContract } from './suppression-contract';
import { requireVmModules } from './support';
import { migratedPglite } from '../../support/database';

// The embedded default (PGlite, PostgreSQL 18) runs the same SQL: one in-memory instance per file.
describeSuppressionContract('DatabaseSuppressionStore on PGlite', async () => {
  requireVmModules();
  const knex: Knex = await migratedPglite('notification');
  return {
    suppressions: new DatabaseSuppressionStore(knex),
    // The contract drives time by hand: the store takes the caller's clock.
    deliveries: new DatabaseDeliveryStore(knex, { clock: 'caller' }),
    close: () => knex.destroy(),
  };
});
