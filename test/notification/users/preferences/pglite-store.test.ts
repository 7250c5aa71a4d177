import type { Knex } from 'knex';
import { DatabasePreferenceStore } from '../../../../services/notification/users/preferences';
import { requireVmModules } from '../../inbox/support';
import { describePreferenceContract } from './preference-contract';
import { migratedPglite } from '../../../support/database';

// One in-memory PGlite for the whole file: each instance costs seconds and hundreds of MB.
describePreferenceContract('DatabasePreferenceStore on PGlite', async () => {
  requireVmModules();
  const knex: Knex = await migratedPglite('notification');
  return { store: new DatabasePreferenceStore(knex), close: () => knex.destroy() };
});
