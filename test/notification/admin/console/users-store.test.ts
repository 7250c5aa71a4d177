/**
 * What the console's user card reads below the HTTP route: a user's notifications of every caller
 * (`NotificationStore.listAll` with a user filter), newest first, bounded and paged, never another user's;
 * on the memory store, PGlite and PostgreSQL.
 */
import type { Knex } from 'knex';
import { notificationMigrations } from '../../../../services/notification/migrations';
import { DatabaseNotificationStore } from '../../../../services/notification/notify/database-store';
import { InMemoryNotificationStore } from '../../../../services/notification/notify/memory-store';
import type { NotificationStore } from '../../../../services/notification/notify/store';
import { runMigrations } from '../../../../shared/storage/migrations';
import { pooledTestDatabase, migratedPglite } from '../../../support/database';
import { requireVmModules } from '../../inbox/support';
import { newNotification } from '../../notify/store-contract';

function describeEveryCaller(
  name: string,
  open: () => Promise<{ store: NotificationStore; close(): Promise<void> }>,
) {
  describe(`a user's notifications of every caller on ${name}`, () => {
    let store: NotificationStore;
    let close: () => Promise<void>;
    beforeAll(async () => {
      ({ store, close } = await open());
    });
    afterAll(() => close?.());

    it('lists every scope, newest first, at and past the limit, and pages on', async () => {
      const userId = `user-😀-משתמש-${Date.now()}`;
      const made: string[] = [];
      for (const scope of ['caller-a', 'caller-b', 'caller-a', 'caller-c']) {
        made.push((await store.create(newNotification({ scope, userId }))).record.id);
      }
      const other = (await store.create(newNotification({ scope: 'caller-a', userId: `${userId}-other` })))
        .record;
      const all = await store.listAll({ userId }, 4);
      expect(all.records.map((r) => r.id)).toEqual([...made].reverse());
      expect(all.nextKey).toBeNull();
      const first = await store.listAll({ userId }, 3);
      expect(first.records.map((r) => r.id)).toEqual([...made].reverse().slice(0, 3));
      expect(first.nextKey).not.toBeNull();
      const rest = await store.listAll({ userId }, 3, first.nextKey!);
      expect(rest.records.map((r) => r.id)).toEqual([made[0]]);
      expect(rest.records.map((r) => r.id)).not.toContain(other.id);
      // One caller's listing is unchanged.
      expect((await store.list('caller-a', userId, 10)).records.map((r) => r.id)).toEqual([made[2], made[0]]);
    });
  });
}

describeEveryCaller('the memory store', async () => ({
  store: new InMemoryNotificationStore(),
  close: async () => undefined,
}));

describeEveryCaller('PGlite', async () => {
  requireVmModules();
  const knex: Knex = await migratedPglite('notification');
  return { store: new DatabaseNotificationStore(knex), close: () => knex.destroy() };
});

describeEveryCaller('PostgreSQL', async () => {
  const db = await pooledTestDatabase('consoleusers');
  const knex = await db.pool();
  await runMigrations(knex, notificationMigrations);
  return { store: new DatabaseNotificationStore(knex), close: () => db.close() };
});
