import { InMemoryDeliveryStore } from '../../../services/notification/delivery/memory-store';
import { epochClock } from '../../support/manual-clock';
import { describeDeliveryContract } from './delivery-contract';

// Numbered from 1, as the database store (the contract names the seqs and horizons it expects).
describeDeliveryContract('InMemoryDeliveryStore', async () => ({
  store: new InMemoryDeliveryStore({ clock: epochClock() }),
  close: async () => {},
}));

describe('InMemoryDeliveryStore due index', () => {
  const base = new Date('2026-01-01T00:00:00Z');
  function newDelivery(i: number, backend = 'a') {
    return {
      id: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
      channel: 'push' as const,
      backend,
      recipient: `token-${i}`,
      maskedRecipient: 't***',
      scope: 's',
      idempotencyKey: null,
      contentHash: 'h',
      payload: { i },
      createdAt: new Date(base.getTime() + i),
    };
  }
  const claim = (store: InMemoryDeliveryStore, now: Date, limit: number, backend = 'a', owner = 'w') =>
    store.claim({ channel: 'push', backend, owner, now, leaseMs: 60_000, limit });

  it("claims oldest due first, per backend, and a dead owner's records once its lease expires", async () => {
    const store = new InMemoryDeliveryStore();
    for (const i of [5, 3, 9, 1]) await store.create(newDelivery(i));
    await store.create(newDelivery(2, 'b'));
    const now = new Date(base.getTime() + 100);
    const first = await claim(store, now, 2);
    expect(first.map((r) => r.payload)).toEqual([{ i: 1 }, { i: 3 }]);
    expect((await claim(store, now, 10)).map((r) => r.payload)).toEqual([{ i: 5 }, { i: 9 }]);
    expect(await claim(store, now, 10)).toEqual([]);
    expect((await claim(store, now, 10, 'b')).map((r) => r.payload)).toEqual([{ i: 2 }]);
    expect(await store.dueBackends(now)).toEqual([]);
    const later = new Date(now.getTime() + 60_000);
    expect(await store.dueBackends(later)).toEqual([
      { channel: 'push', backend: 'a' },
      { channel: 'push', backend: 'b' },
    ]);
    const again = await claim(store, later, 10, 'a', 'other');
    expect(again.map((r) => r.payload)).toEqual([{ i: 1 }, { i: 3 }, { i: 5 }, { i: 9 }]);
    // The first owner lost its leases: its outcome is not recorded.
    const result = {
      attempt: { number: 1, startedAt: now, durationMs: 1, outcome: 'sent' as const },
      status: 'sent' as const,
      nextAttemptAt: null,
      now,
    };
    expect(await store.completeAttempt(first[0]!.id, 'w', result)).toBeNull();
    expect((await store.completeAttempt(first[0]!.id, 'other', result))?.status).toBe('sent');
  });

  it('keeps its index bounded by the queue under a steady stream of finished records', async () => {
    const store = new InMemoryDeliveryStore();
    const now = new Date(base.getTime() + 10_000_000);
    // A record due later than now but before any lease expires keeps the top of the heap, so each
    // finished record's lease-expiry entry (stale) stays behind it until compaction.
    await store.create({ ...newDelivery(99_999), createdAt: new Date(now.getTime() + 1000) });
    let maxIndex = 0;
    for (let i = 0; i < 5000; i++) {
      await store.create(newDelivery(i));
      const [r] = await claim(store, now, 1);
      await store.completeAttempt(r!.id, 'w', {
        attempt: { number: 1, startedAt: now, durationMs: 1, outcome: 'sent' },
        status: 'sent',
        nextAttemptAt: null,
        now,
      });
      maxIndex = Math.max(maxIndex, store.indexSize);
    }
    expect(maxIndex).toBeGreaterThan(1000); // stale entries did pile up...
    expect(maxIndex).toBeLessThanOrEqual(2 * 2 + 1024 + 1); // ...up to the bound, not 5,000
    expect((await store.queueStats(now)).queued.pending).toBe(1);
    const later = await claim(store, new Date(now.getTime() + 1000), 10);
    expect(later.map((r) => r.payload)).toEqual([{ i: 99_999 }]);
  });

  it("never shares a caller's payload: the input is cloned, what comes out is read-only", async () => {
    const store = new InMemoryDeliveryStore();
    const payload = { i: 1, to: [{ email: 'a@example.com' }], when: 'x' };
    const { record } = await store.create({ ...newDelivery(1), payload });
    payload.to[0]!.email = 'changed@example.com';
    payload.when = 'changed';
    const [claimed] = await claim(store, new Date(base.getTime() + 100), 1);
    expect(claimed!.payload).toEqual({ i: 1, to: [{ email: 'a@example.com' }], when: 'x' });
    // Copies share the stored payload frozen: a write to it cannot change the store.
    const out = claimed!.payload as { to: { email: string }[] };
    expect(Object.isFrozen(out) && Object.isFrozen(out.to) && Object.isFrozen(out.to[0])).toBe(true);
    expect(() => out.to.push({ email: 'y@example.com' })).toThrow(/not extensible/);
    Reflect.set(out.to[0]!, 'email', 'x@example.com');
    claimed!.attempts.push({ number: 1, startedAt: base, durationMs: 1, outcome: 'sent' });
    expect((await store.get(record.id))!.attempts).toEqual([]);
    expect((await store.get(record.id))!.payload).toEqual({
      i: 1,
      to: [{ email: 'a@example.com' }],
      when: 'x',
    });
  });

  it('clones, per copy, a payload that is not plain data (bytes, dates) instead of freezing it', async () => {
    const store = new InMemoryDeliveryStore();
    const payload = { bytes: new Uint8Array([1, 2]), at: new Date(0) };
    const { record } = await store.create({ ...newDelivery(1), payload });
    const first = (await store.get(record.id))!.payload as typeof payload;
    first.bytes[0] = 9;
    first.at.setTime(5);
    const second = (await store.get(record.id))!.payload as typeof payload;
    expect([...second.bytes]).toEqual([1, 2]);
    expect(second.at.getTime()).toBe(0);
  });

  it('stores a cyclic payload as a clone (no freeze, no stack overflow)', async () => {
    const store = new InMemoryDeliveryStore();
    const payload: { i: number; self?: unknown } = { i: 1 };
    payload.self = payload;
    const { record } = await store.create({ ...newDelivery(1), payload });
    const out = (await store.get(record.id))!.payload as typeof payload;
    expect(out.self).toBe(out);
    expect(out).not.toBe(payload);
  });
});
