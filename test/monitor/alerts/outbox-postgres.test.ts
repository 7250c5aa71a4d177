/**
 * The alert outbox on real PostgreSQL (outbox-contract.ts): each replica its own knex pool.
 */
import type { Knex } from 'knex';
import { MONITOR_MIGRATIONS_TABLE, monitorMigrations } from '../../../services/monitor/migrations';
import { runMigrations } from '../../../shared/storage/migrations';
import { type PooledTestDatabase, pooledTestDatabase } from '../../support/database';
import { describeOutbox } from './outbox-contract';

let db: PooledTestDatabase;
let a: Knex;
let b: Knex;

beforeAll(async () => {
  db = await pooledTestDatabase('outboxpg', 4);
  a = await db.pool();
  b = await db.pool();
  await runMigrations(a, monitorMigrations, { tableName: MONITOR_MIGRATIONS_TABLE });
});

afterAll(async () => {
  await db?.close();
});

describeOutbox('PostgreSQL', () => [a, b]);
