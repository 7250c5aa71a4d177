import { InProcessJobLease } from '../../../shared/storage/periodic-job';
import { NOTIFY_PURGE_BATCH, NotificationRetention } from '../../../services/notification/notify/retention';
import { InMemoryDeliveryStore } from '../../../services/notification/delivery/memory-store';
import { describeDeliveryEraseUser } from './delivery-erase-contract';
import { InMemoryNotificationStore } from '../../../services/notification/notify/memory-store';
import { describeTopicPages } from './topic-pages-contract';
import { describeNotificationStoreContract, newNotification } from './store-contract';

describeNotificationStoreContract('InMemoryNotificationStore', async () => ({
  store: new InMemoryNotificationStore(),
  close: async () => undefined,
}));

describeDeliveryEraseUser('InMemoryDeliveryStore', async () => new InMemoryDeliveryStore());

describe('NotificationRetention', () => {
  it('deletes notifications older than retention_days in batches and keeps the younger ones', async () => {
    const store = new InMemoryNotificationStore();
    const day = 24 * 60 * 60 * 1000;
    const now = Date.parse('2026-11-27T00:00:00.000Z');
    const ids: string[] = [];
    for (let i = 0; i < NOTIFY_PURGE_BATCH + 5; i++) {
      ids.push((await store.create(newNotification({ createdAt: new Date(now - 31 * day - i) }))).record.id);
    }
    const young = await store.create(newNotification({ createdAt: new Date(now - 29 * day) }));
    const retention = new NotificationRetention({
      store,
      retentionDays: 30,
      lease: new InProcessJobLease(),
      clock: { now: () => now, monotonic: () => 0 },
    });
    expect(await retention.purge()).toBe(NOTIFY_PURGE_BATCH + 5);
    expect(await store.get(ids[0]!)).toBeNull();
    expect(await store.get(young.record.id)).not.toBeNull();
  });

  it('purges finished digests with the same cutoff, a batch at a time, until a batch comes back short', async () => {
    const day = 24 * 60 * 60 * 1000;
    const now = Date.parse('2026-11-27T00:00:00.000Z');
    const calls: { before: number; limit: number }[] = [];
    // Two full batches, then a short one: three calls, all with the 30-day cutoff.
    const answers = [NOTIFY_PURGE_BATCH, NOTIFY_PURGE_BATCH, 7];
    const retention = new NotificationRetention({
      store: new InMemoryNotificationStore(),
      digests: {
        purgeFinished: async (before, limit) => {
          calls.push({ before: before.getTime(), limit });
          return answers.shift() ?? 0;
        },
      },
      retentionDays: 30,
      lease: new InProcessJobLease(),
      clock: { now: () => now, monotonic: () => 0 },
    });
    await retention.purge();
    expect(calls).toEqual([
      { before: now - 30 * day, limit: NOTIFY_PURGE_BATCH },
      { before: now - 30 * day, limit: NOTIFY_PURGE_BATCH },
      { before: now - 30 * day, limit: NOTIFY_PURGE_BATCH },
    ]);
  });
});

describeTopicPages('InMemoryNotificationStore', async () => new InMemoryNotificationStore());
