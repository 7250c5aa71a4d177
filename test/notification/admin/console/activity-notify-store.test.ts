/**
 * The notify store's operator reads behind the console's Activity section, on memory and PGlite:
 * `listAll` (every caller, filters, newest first, keyset pages at the limit) and `findByMessageId`
 * (a delivery's notification).
 */
import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { DatabaseNotificationStore } from '../../../../services/notification/notify/database-store';
import { InMemoryNotificationStore } from '../../../../services/notification/notify/memory-store';
import type { NotificationStore } from '../../../../services/notification/notify/store';
import { requireVmModules } from '../../delivery/support';
import { newNotification } from '../../notify/store-contract';
import { migratedPglite } from '../../../support/database';

function describeOperatorReads(
  name: string,
  open: () => Promise<{ store: NotificationStore; close(): Promise<void> }>,
) {
  describe(`${name}: operator reads`, () => {
    let store: NotificationStore;
    let close: () => Promise<void>;
    beforeAll(async () => ({ store, close } = await open()));
    afterAll(() => close());

    it('lists every caller newest first under user, category and status, paged at the limit', async () => {
      const category = `cat-${randomUUID()}-🔔-安全-تنبيه`;
      const user = `مستخدم-${randomUUID()}`;
      const made = [
        newNotification({ category, userId: user, scope: 'caller-a' }),
        newNotification({ category, userId: 'someone-else', scope: 'caller-b' }),
        newNotification({ category, userId: user, scope: 'caller-b', status: 'cancelled' }),
        newNotification({ category: 'other', userId: user }),
      ];
      for (const n of made) await store.create(n);
      const ids = async (filter: object, limit = 10) =>
        (await store.listAll(filter, limit)).records.map((r) => made.findIndex((m) => m.id === r.id));
      expect(await ids({ category })).toEqual([2, 1, 0]);
      expect(await ids({ category, userId: user })).toEqual([2, 0]);
      expect(await ids({ userId: user })).toEqual([3, 2, 0]);
      expect(await ids({ category, status: 'cancelled' })).toEqual([2]);
      expect(await ids({ category, userId: 'nobody' })).toEqual([]);
      const first = await store.listAll({ category }, 2);
      expect(first.records).toHaveLength(2);
      expect(first.nextKey).not.toBeNull();
      const second = await store.listAll({ category }, 2, first.nextKey!);
      expect(second.records.map((r) => r.id)).toEqual([made[0]!.id]);
      expect(second.nextKey).toBeNull();
      const exact = await store.listAll({ category }, 3);
      expect(exact.nextKey).toBeNull();
    });

    it("finds a delivery's notification by the line that names it", async () => {
      const n = newNotification();
      await store.create(n);
      const deliveryId = randomUUID();
      await store.saveFanOut(n.id, [
        {
          channel: 'sms',
          contact: '+1555****567',
          messageId: deliveryId,
          skipped: null,
          error: null,
          locale: 'en',
        },
        {
          channel: 'email',
          contact: '',
          messageId: null,
          skipped: 'throttled',
          error: null,
          locale: '',
          throttledBy: 'email 3/1h',
        },
      ]);
      const found = await store.findByMessageId(deliveryId);
      expect(found).toMatchObject({
        id: n.id,
        channels: [{ messageId: deliveryId }, { skipped: 'throttled' }],
      });
      expect(await store.findByMessageId(randomUUID())).toBeNull();
    });
  });
}

describeOperatorReads('InMemoryNotificationStore', async () => ({
  store: new InMemoryNotificationStore(),
  close: async () => undefined,
}));

describeOperatorReads('DatabaseNotificationStore on PGlite', async () => {
  requireVmModules();
  const knex: Knex = await migratedPglite('notification');
  return { store: new DatabaseNotificationStore(knex), close: () => knex.destroy() };
});
