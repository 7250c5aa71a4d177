import type { Knex } from 'knex';
import { notificationMigrations } from '../../../../services/notification/migrations';
import { DatabaseDigestBook } from '../../../../services/notification/notify/digest/database-book';
import { silentLogger } from '../../../../shared/logging/logger';
import { openDatabase } from '../../../../shared/storage/database';
import { runMigrations } from '../../../../shared/storage/migrations';
import { requireVmModules } from '../../inbox/support';
import { databaseBackend } from './database-backend';
import { describeDigestBookContract } from './book-contract';

// One in-memory PGlite for the whole file: each instance costs seconds and hundreds of MB.
let opened: Promise<Knex> | undefined;
function pglite(): Promise<Knex> {
  opened ??= (async () => {
    requireVmModules();
    const knex = await openDatabase({ url: '', data_dir: ':memory:', pool_max: 1 }, silentLogger());
    await runMigrations(knex, notificationMigrations);
    return knex;
  })();
  return opened;
}

afterAll(async () => {
  await (await opened)?.destroy();
});

describeDigestBookContract('DatabaseDigestBook on PGlite', async () =>
  databaseBackend(await pglite(), (knex, categories) => new DatabaseDigestBook({ knex, categories })),
);
