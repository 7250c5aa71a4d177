/** The sequencer plan contract (sequencer-plan-contract.ts) on real PostgreSQL. */
import { notificationMigrations } from '../../../services/notification/migrations';
import { runMigrations } from '../../../shared/storage/migrations';
import { pooledTestDatabase, type PooledTestDatabase } from '../../support/database';
import { sequencerPlanContract } from './sequencer-plan-contract';

let db: PooledTestDatabase | undefined;

sequencerPlanContract('PostgreSQL', {
  async open() {
    db = await pooledTestDatabase('seqplan');
    const knex = await db.pool(1);
    await runMigrations(knex, notificationMigrations);
    return knex;
  },
  async close() {
    await db?.close();
  },
});
