import type { Knex } from 'knex';
import { DatabaseUserStore } from '../../../services/notification/users/database-store';
import { requireVmModules } from '../inbox/support';
import { describeUsersContract } from './users-contract';
import { migratedPglite } from '../../support/database';

// One in-memory PGlite for the whole file: each instance costs seconds and hundreds of MB.
describeUsersContract('DatabaseUserStore on PGlite', async () => {
  requireVmModules();
  const knex: Knex = await migratedPglite('notification');
  return { store: new DatabaseUserStore(knex), close: () => knex.destroy() };
});
