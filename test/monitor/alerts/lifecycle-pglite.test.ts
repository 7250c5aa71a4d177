/** The alert lifecycle contract on DatabaseAlertStore over embedded PGlite. */
import type { Knex } from 'knex';
import { DatabaseAlertStore } from '../../../services/monitor/alerts/database-store';
import { requireVmModules } from '../../notification/inbox/support';
import { describeLifecycleContract } from './lifecycle-contract';
import { truncateAlertTables } from './support';
import { migratedPglite } from '../../support/database';

// One in-memory PGlite for the whole file: each instance costs seconds and hundreds of MB.
describeLifecycleContract('PGlite', async () => {
  requireVmModules();
  const knex: Knex = await migratedPglite('monitor');
  return {
    store: () => new DatabaseAlertStore(knex),
    reset: () => truncateAlertTables(knex),
    close: () => knex.destroy(),
  };
});
