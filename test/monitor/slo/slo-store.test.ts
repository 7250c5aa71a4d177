/** The SloStateStore contract on memory, PGlite (one in-memory instance for the file) and PostgreSQL. */
import type { Knex } from 'knex';
import { MemorySloStateStore } from '../../../services/monitor/slo/store';
import { DatabaseSloStateStore } from '../../../services/monitor/slo/database-store';
import { monitorMigrations, MONITOR_MIGRATIONS_TABLE } from '../../../services/monitor/migrations';
import { silentLogger } from '../../../shared/logging/logger';
import { openDatabase } from '../../../shared/storage/database';
import { runMigrations } from '../../../shared/storage/migrations';
import { createTestDatabase, migratedPglite } from '../../support/database';
import { describeSloStoreContract } from './slo-store-contract';

describeSloStoreContract('memory', async (clock) => ({ store: new MemorySloStateStore(clock) }));

describeSloStoreContract('PostgreSQL', async (clock) => {
  const db = await createTestDatabase('mon_slo');
  const knex: Knex = await openDatabase({ url: db.url, data_dir: '', pool_max: 2 }, silentLogger());
  await runMigrations(knex, monitorMigrations, { tableName: MONITOR_MIGRATIONS_TABLE });
  return {
    store: new DatabaseSloStateStore(knex, { clock }),
    close: async () => {
      await knex.destroy();
      await db.drop();
    },
  };
});

describeSloStoreContract('PGlite', async (clock) => {
  const knex: Knex = await migratedPglite('monitor');
  return { store: new DatabaseSloStateStore(knex, { clock }), close: () => knex.destroy() };
});
