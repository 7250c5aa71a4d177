import type { Knex } from 'knex';
import { notificationMigrations } from '../../../../services/notification/migrations';
import { DatabaseCapLedger } from '../../../../services/notification/notify/caps/database-ledger';
import { silentLogger } from '../../../../shared/logging/logger';
import { openDatabase } from '../../../../shared/storage/database';
import { runMigrations } from '../../../../shared/storage/migrations';
import { requireVmModules } from '../../inbox/support';
import { describeCapLedgerContract } from './cap-ledger-contract';

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

describeCapLedgerContract(
  'DatabaseCapLedger on PGlite',
  async (caps, clock) => new DatabaseCapLedger(await pglite(), { caps, now: () => clock.date() }),
);
