import type { Knex } from 'knex';
import { DatabaseInboxStore } from '../../../services/notification/inbox/database-store';
import { describeInboxContract } from './inbox-contract';
import { requireVmModules } from './support';
import { migratedPglite } from '../../support/database';

// One in-memory PGlite for the whole file: each instance costs seconds and hundreds of MB.
describeInboxContract('DatabaseInboxStore on PGlite', async () => {
  requireVmModules();
  const knex: Knex = await migratedPglite('notification');
  return { store: new DatabaseInboxStore(knex), close: () => knex.destroy() };
});
