import type { Knex } from 'knex';
import { DatabaseTemplateStore } from '../../../services/notification/templates/database-store';
import { requireVmModules } from '../inbox/support';
import { describeTemplateStoreContract } from './store-contract';
import { migratedPglite } from '../../support/database';

// One in-memory PGlite for the whole file: each instance costs seconds and hundreds of MB.
describeTemplateStoreContract('DatabaseTemplateStore on PGlite', async () => {
  requireVmModules();
  const knex: Knex = await migratedPglite('notification');
  return { store: new DatabaseTemplateStore(knex), close: () => knex.destroy() };
});
