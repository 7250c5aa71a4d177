/**
 * The alert outbox on embedded PGlite (outbox-contract.ts): one connection stands for both replicas;
 * and the memory store, which keeps nothing, as before.
 */
import type { Knex } from 'knex';
import { MONITOR_MIGRATIONS_TABLE, monitorMigrations } from '../../../services/monitor/migrations';
import { silentLogger } from '../../../shared/logging/logger';
import { openDatabase } from '../../../shared/storage/database';
import { runMigrations } from '../../../shared/storage/migrations';
import { requireVmModules } from '../../notification/inbox/support';
import { describeOutbox, describeOutboxMemory } from './outbox-contract';

let knex: Knex;

beforeAll(async () => {
  requireVmModules();
  knex = await openDatabase({ url: '', data_dir: ':memory:', pool_max: 1 }, silentLogger());
  await runMigrations(knex, monitorMigrations, { tableName: MONITOR_MIGRATIONS_TABLE });
});

afterAll(async () => {
  await knex?.destroy();
});

describeOutbox('PGlite', () => [knex, knex]);
describeOutboxMemory();
