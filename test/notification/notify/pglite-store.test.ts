import type { Knex } from 'knex';
import { DatabaseDeliveryStore } from '../../../services/notification/delivery/database-store';
import { DatabaseNotificationStore } from '../../../services/notification/notify/database-store';
import { requireVmModules } from '../inbox/support';
import { describeDeliveryEraseUser } from './delivery-erase-contract';
import { describeTopicPages } from './topic-pages-contract';
import { describeNotificationStoreContract } from './store-contract';
import { migratedPglite } from '../../support/database';

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

describeNotificationStoreContract('DatabaseNotificationStore on PGlite', async () => ({
  store: new DatabaseNotificationStore(await pglite()),
  close: async () => undefined,
}));

describeDeliveryEraseUser(
  'DatabaseDeliveryStore on PGlite',
  async () => new DatabaseDeliveryStore(await pglite()),
);

describeTopicPages(
  'DatabaseNotificationStore on PGlite',
  async () => new DatabaseNotificationStore(await pglite()),
);
