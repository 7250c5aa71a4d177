/** The sequencer plan contract (sequencer-plan-contract.ts) on PGlite. */
import type { Knex } from 'knex';
import { sequencerPlanContract } from './sequencer-plan-contract';
import { requireVmModules } from './support';
import { migratedPglite } from '../../support/database';

let knex: Knex | undefined;

sequencerPlanContract('PGlite', {
  async open() {
    requireVmModules();
    knex = await migratedPglite('notification');
    return knex;
  },
  async close() {
    await knex?.destroy();
  },
});
