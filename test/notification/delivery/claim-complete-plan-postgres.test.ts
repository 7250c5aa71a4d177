/** The claim and completion plan contract (claim-complete-plan-contract.ts) on real PostgreSQL. */
import { notificationMigrations } from '../../../services/notification/migrations';
import { runMigrations } from '../../../shared/storage/migrations';
import { pooledTestDatabase, type PooledTestDatabase } from '../../support/database';
import { claimCompletePlanContract } from './claim-complete-plan-contract';

let db: PooledTestDatabase | undefined;

claimCompletePlanContract('PostgreSQL', {
  async open() {
    db = await pooledTestDatabase('ccplan');
    const knex = await db.pool(1);
    await runMigrations(knex, notificationMigrations);
    return knex;
  },
  async close() {
    await db?.close();
  },
});
