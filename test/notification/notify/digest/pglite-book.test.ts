import type { Knex } from 'knex';
import { DatabaseDigestBook } from '../../../../services/notification/notify/digest/database-book';
import { requireVmModules } from '../../inbox/support';
import { databaseBackend } from './database-backend';
import { describeDigestBookContract } from './book-contract';
import { migratedPglite } from '../../../support/database';

// One in-memory PGlite for the whole file: each instance costs seconds and hundreds of MB.
let opened: Promise<Knex> | undefined;
function pglite(): Promise<Knex> {
  opened ??= (async () => {
    requireVmModules();
    return migratedPglite('notification');
  })();
  return opened;
}

afterAll(async () => {
  await (await opened)?.destroy();
});

describeDigestBookContract('DatabaseDigestBook on PGlite', async () =>
  databaseBackend(await pglite(), (knex, categories) => new DatabaseDigestBook({ knex, categories })),
);
