import { ResourceExhaustedError } from '../../../shared/errors';
import { InMemoryDeliveryStore } from '../../../services/notification/delivery/memory-store';
import { Suppressions } from '../../../services/notification/delivery/suppression';
import { InMemorySuppressionStore } from '../../../services/notification/delivery/suppression-memory-store';
import { describeSuppressionContract } from './suppression-contract';

describeSuppressionContract('InMemorySuppressionStore', async () => ({
  suppressions: new InMemorySuppressionStore(),
  deliveries: new InMemoryDeliveryStore(),
  close: async () => {},
}));

describe('InMemorySuppressionStore bound', () => {
  it('when the store holds its maximum, a new entry is RESOURCE_EXHAUSTED and none is evicted; a known one still answers', async () => {
    const store = new InMemorySuppressionStore(3);
    const list = new Suppressions({ store });
    const numbers = ['+15550000001', '+15550000002', '+15550000003'];
    for (const n of numbers)
      expect(await list.add({ channel: 'sms', recipient: n, reason: 'manual', source: 'api:a' })).toBe(true);
    await expect(
      list.add({ channel: 'sms', recipient: '+15550000004', reason: 'manual', source: 'api:a' }),
    ).rejects.toBeInstanceOf(ResourceExhaustedError);
    expect(store.size).toBe(3);
    for (const n of numbers) expect(await list.isSuppressed('sms', n)).toBe(true);
    // Adding one that is there already is not a new entry: answered, not refused.
    expect(
      await list.add({ channel: 'sms', recipient: numbers[0]!, reason: 'manual', source: 'api:a' }),
    ).toBe(false);
    // Removing frees room.
    await list.remove('sms', numbers[1]!);
    expect(
      await list.add({ channel: 'sms', recipient: '+15550000004', reason: 'manual', source: 'api:a' }),
    ).toBe(true);
  });
});
