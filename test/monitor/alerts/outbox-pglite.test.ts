/**
 * The alert outbox on embedded PGlite (outbox-contract.ts): one connection stands for both replicas;
 * and the memory store, which keeps nothing, as before.
 */
import type { Knex } from 'knex';
import { requireVmModules } from '../../notification/inbox/support';
import { describeOutbox, describeOutboxMemory } from './outbox-contract';
import { migratedPglite } from '../../support/database';

let knex: Knex;

beforeAll(async () => {
  requireVmModules();
  knex = await migratedPglite('monitor');
});

afterAll(async () => {
  await knex?.destroy();
});

describeOutbox('PGlite', () => [knex, knex]);
describeOutboxMemory();
