/** The claim and completion plan contract (claim-complete-plan-contract.ts) on PGlite. */
import type { Knex } from 'knex';
import { notificationMigrations } from '../../../services/notification/migrations';
import { silentLogger } from '../../../shared/logging/logger';
import { openDatabase } from '../../../shared/storage/database';
import { runMigrations } from '../../../shared/storage/migrations';
import { claimCompletePlanContract } from './claim-complete-plan-contract';
import { requireVmModules } from './support';

let knex: Knex | undefined;

claimCompletePlanContract('PGlite', {
  async open() {
    requireVmModules();
    knex = await openDatabase({ url: '', data_dir: ':memory:', pool_max: 1 }, silentLogger());
    await runMigrations(knex, notificationMigrations);
    return knex;
  },
  async close() {
    await knex?.destroy();
  },
});
