/**
 * The activity filters of DeliveryStore.list (user, category, recipient key), the same on every store.
 */
import { randomUUID } from 'node:crypto';
import type { DeliveryStore, NewDelivery } from '../../../../services/notification/delivery/store';
import { maskRecipient } from '../../../../services/notification/delivery/mask';

const base = new Date('2026-03-01T10:00:00.000Z');

function delivery(i: number, over: Partial<NewDelivery>): NewDelivery {
  const channel = over.channel ?? 'sms';
  const recipient = over.recipient ?? '+15551234567';
  return {
    id: randomUUID(),
    channel,
    backend: 'a',
    recipient,
    maskedRecipient: maskRecipient(channel, recipient),
    scope: 's',
    idempotencyKey: null,
    contentHash: '0'.repeat(64),
    payload: { i },
    createdAt: new Date(base.getTime() + i * 1000),
    ...over,
  };
}

export function describeActivityFilters(
  name: string,
  open: () => Promise<{ store: DeliveryStore; close(): Promise<void> }>,
): void {
  describe(`${name}: activity filters`, () => {
    let store: DeliveryStore;
    let close: () => Promise<void>;
    beforeAll(async () => {
      ({ store, close } = await open());
    });
    afterAll(async () => {
      await close();
    });

    it('filters by user, category and normalised recipient, newest first, paged by key', async () => {
      const scope = `s-${randomUUID()}`;
      const made = [
        delivery(1, { scope, userId: 'جين', category: 'تنبيه 🔔', recipient: '+1 (555) 123-4567' }),
        delivery(2, {
          scope,
          userId: '用户',
          category: '安全',
          channel: 'email',
          recipient: 'Ann@Example.com, b@x.org',
        }),
        delivery(3, {
          scope,
          userId: 'جين',
          category: '安全',
          channel: 'email',
          recipient: 'ann@example.com',
        }),
        delivery(4, { scope, channel: 'push', recipient: ' tok-ABC ' }),
        delivery(5, { scope, userId: 'other', category: 'تنبيه 🔔', recipient: '+15559999999' }),
      ];
      for (const d of made) await store.create(d);
      const ids = async (filter: object, limit = 10) =>
        (await store.list({ filter: { scope, ...filter }, limit })).records.map(
          (r) => made.findIndex((m) => m.id === r.id) + 1,
        );
      expect(await ids({})).toEqual([5, 4, 3, 2, 1]);
      expect(await ids({ userId: 'جين' })).toEqual([3, 1]);
      expect(await ids({ userId: '用户' })).toEqual([2]);
      expect(await ids({ userId: 'nobody' })).toEqual([]);
      expect(await ids({ category: 'تنبيه 🔔' })).toEqual([5, 1]);
      expect(await ids({ category: '安全', userId: 'جين' })).toEqual([3]);
      expect(await ids({ recipientKey: 'ann@example.com' })).toEqual([3, 2]);
      expect(await ids({ recipientKey: 'b@x.org' })).toEqual([2]);
      expect(await ids({ recipientKey: '+15551234567' })).toEqual([1]);
      expect(await ids({ recipientKey: 'tok-ABC' })).toEqual([4]);
      expect(await ids({ recipientKey: 'tok-abc' })).toEqual([]);
      // A page at the limit has a next key; the next page starts after it.
      const first = await store.list({ filter: { scope, category: 'تنبيه 🔔' }, limit: 1 });
      expect(first.records.map((r) => r.id)).toEqual([made[4]!.id]);
      expect(first.nextKey).not.toBeNull();
      const second = await store.list({
        filter: { scope, category: 'تنبيه 🔔' },
        limit: 1,
        after: first.nextKey!,
      });
      expect(second.records.map((r) => r.id)).toEqual([made[0]!.id]);
      expect(second.nextKey).toBeNull();
      // The views carry user and category, never the full recipient.
      const [view] = (await store.list({ filter: { scope, userId: 'جين' }, limit: 1 })).records;
      expect(view).toMatchObject({
        userId: 'جين',
        category: '安全',
        maskedRecipient: made[2]!.maskedRecipient,
      });
      expect(JSON.stringify(view)).not.toContain('ann@example.com');
      expect((await store.get(made[0]!.id))!.category).toBe('تنبيه 🔔');
    });

    it('a recipient erased by DeleteUser no longer matches', async () => {
      const scope = `s-${randomUUID()}`;
      const d = delivery(1, { scope, userId: `u-${randomUUID()}`, recipient: '+15550001111' });
      await store.create(d);
      expect(
        (await store.list({ filter: { scope, recipientKey: '+15550001111' }, limit: 5 })).records,
      ).toHaveLength(1);
      await store.eraseUser(d.userId!, new Date(base.getTime() + 60_000));
      expect(
        (await store.list({ filter: { scope, recipientKey: '+15550001111' }, limit: 5 })).records,
      ).toHaveLength(0);
      expect((await store.list({ filter: { scope, userId: d.userId! }, limit: 5 })).records).toHaveLength(1);
    });
  });
}
