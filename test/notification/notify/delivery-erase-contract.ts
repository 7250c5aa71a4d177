/**
 * `DeliveryStore.eraseUser` (DeleteUser) on every delivery store: the content and full recipients of
 * the user's records go (and the reason text of their events), ids, statuses and masked recipients
 * stay; a record still queued ends FAILED first so nothing is sent to a deleted user.
 */
import { randomUUID } from 'node:crypto';
import type { DeliveryStore, NewDelivery } from '../../../services/notification/delivery/store';

function newDelivery(over: Partial<NewDelivery>): NewDelivery {
  return {
    id: randomUUID(),
    channel: 'sms',
    backend: 'gateway',
    recipient: '+15550104444',
    maskedRecipient: '+1555****444',
    scope: 'caller-a',
    idempotencyKey: null,
    contentHash: randomUUID(),
    payload: { to: '+15550104444', body: 'Código 😀 שלום' },
    createdAt: new Date(),
    ...over,
  };
}

/** Registers the eraseUser tests for one delivery store. */
export function describeDeliveryEraseUser(name: string, open: () => Promise<DeliveryStore>): void {
  describe(`${name}: DeliveryStore.eraseUser`, () => {
    let store: DeliveryStore;
    beforeAll(async () => {
      store = await open();
    });

    it('erases content and full recipients of the user’s records (a queued one ends FAILED), keeps ids, statuses and masks, and leaves others alone', async () => {
      const userId = `user-${randomUUID()}`;
      const sent = newDelivery({ userId });
      const queued = newDelivery({
        userId,
        channel: 'email',
        recipient: 'ana@example.com',
        maskedRecipient: 'a***@example.com',
      });
      const other = newDelivery({ userId: `user-${randomUUID()}` });
      const anonymous = newDelivery({});
      for (const d of [sent, queued, other, anonymous]) await store.create(d);
      // The first one was sent (an attempt recorded under a lease).
      const now = new Date();
      const [claimed] = await store
        .claim({ channel: 'sms', backend: 'gateway', owner: 'w', now, leaseMs: 60_000, limit: 10 })
        .then((c) => c.filter((r) => r.id === sent.id));
      expect(claimed).toBeDefined();
      await store.completeAttempt(sent.id, 'w', {
        attempt: {
          number: 1,
          backend: 'gateway',
          startedAt: now,
          outcome: 'sent',
          durationMs: 1,
          providerReference: 'SM1',
        },
        status: 'sent',
        nextAttemptAt: null,
        now,
      });
      // Free the others the claim took (they stay queued).
      await store.release([other.id, anonymous.id], 'w', now);

      expect(await store.eraseUser(userId, new Date())).toBe(2);

      const s = (await store.get(sent.id))!;
      expect(s).toMatchObject({
        status: 'sent',
        recipient: null,
        payload: null,
        maskedRecipient: '+1555****444',
      });
      expect(s.contentErasedAt).not.toBeNull();
      const q = (await store.get(queued.id))!;
      expect(q).toMatchObject({
        status: 'failed',
        lastError: 'user deleted',
        recipient: null,
        payload: null,
      });
      expect(q.maskedRecipient).toBe('a***@example.com');
      expect(q.nextAttemptAt).toBeNull();
      for (const d of [other, anonymous]) {
        expect(await store.get(d.id)).toMatchObject({
          recipient: '+15550104444',
          payload: d.payload,
          status: 'pending',
        });
      }
      // A claim never hands the ended record to a worker.
      const due = await store.claim({
        channel: 'email',
        backend: 'gateway',
        owner: 'w2',
        now: new Date(),
        leaseMs: 1000,
        limit: 100,
      });
      expect(due.map((r) => r.id)).not.toContain(queued.id);
      // Its end is in the event log; no event of the user's records keeps a reason text.
      await store.sequenceEvents();
      const events = await store.eventsAfter({ scopes: ['caller-a'], after: 0, limit: 10_000 });
      const mine = events.filter((e) => e.deliveryId === sent.id || e.deliveryId === queued.id);
      expect(mine.some((e) => e.deliveryId === queued.id && e.status === 'failed')).toBe(true);
      expect(mine.every((e) => e.reason === null)).toBe(true);
    });
  });
}
