/** The held alert store contract on the in-memory store (the dispatcher's default). */
import { MemoryHeldAlertStore } from '../../../../shared/monitoring/alerts/held-store';
import { FakeClock } from '../helpers';
import { describeHeldStoreContract } from './held-store-contract';

let store: MemoryHeldAlertStore;

describeHeldStoreContract('memory', async () => ({
  // One process, one store: "another replica" is another owner on the same store.
  store: () => store,
  reset: async () => {
    store = new MemoryHeldAlertStore(new FakeClock());
  },
  close: async () => undefined,
}));

describe('MemoryHeldAlertStore', () => {
  it('is not durable and grants every digest turn (one process has one digest timer)', async () => {
    const s = new MemoryHeldAlertStore(new FakeClock());
    expect(s.durable).toBe(false);
    expect(await s.takeFlushTurn()).toBe(true);
    expect(await s.takeFlushTurn()).toBe(true);
  });

  it('a lease runs out on its clock', async () => {
    const clock = new FakeClock();
    const s = new MemoryHeldAlertStore(clock);
    await s.hold(
      'P1_BUSINESS_HOURS',
      {
        kind: 'alert',
        title: 'a',
        message: '',
        severity: 'high',
        context: {},
        tier: 'P1_BUSINESS_HOURS',
        raisedAt: 0,
      },
      10,
    );
    await s.claim('P1_BUSINESS_HOURS', 'm1', 1000, 10);
    clock.advance(999);
    expect((await s.claim('P1_BUSINESS_HOURS', 'm2', 1000, 10)).alerts).toHaveLength(0);
    clock.advance(1);
    expect((await s.claim('P1_BUSINESS_HOURS', 'm2', 1000, 10)).alerts).toHaveLength(1);
  });
});
