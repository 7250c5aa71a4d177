import type { Knex } from 'knex';
import { DatabaseCapLedger } from '../../../../services/notification/notify/caps/database-ledger';
import { requireVmModules } from '../../inbox/support';
import { describeCapLedgerContract } from './cap-ledger-contract';
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

describeCapLedgerContract(
  'DatabaseCapLedger on PGlite',
  async (caps, clock) => new DatabaseCapLedger(await pglite(), { caps, now: () => clock.date() }),
);
