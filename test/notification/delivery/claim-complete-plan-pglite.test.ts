/** The claim and completion plan contract (claim-complete-plan-contract.ts) on PGlite. */
import type { Knex } from 'knex';
import { claimCompletePlanContract } from './claim-complete-plan-contract';
import { requireVmModules } from './support';
import { migratedPglite } from '../../support/database';

let knex: Knex | undefined;

claimCompletePlanContract('PGlite', {
  async open() {
    requireVmModules();
    knex = await migratedPglite('notification');
    return knex;
  },
  async close() {
    await knex?.destroy();
  },
});
