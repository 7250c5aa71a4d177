import { ResourceExhaustedError } from '../../../../shared/errors';
import { InMemoryPreferenceStore } from '../../../../services/notification/users/preferences';
import { describePreferenceContract } from './preference-contract';

describePreferenceContract('InMemoryPreferenceStore', async () => ({
  store: new InMemoryPreferenceStore(),
  close: async () => {},
}));

describe('InMemoryPreferenceStore bound', () => {
  it('when it holds maxUsers users, a new user is refused and a known one still writes', async () => {
    const store = new InMemoryPreferenceStore({ maxUsers: 2 });
    const at = new Date();
    await store.write('a', [{ category: 'news', channel: 'email', enabled: false }], at);
    await store.write('b', [{ category: 'news', channel: 'email', enabled: false }], at);
    await expect(
      store.write('c', [{ category: 'news', channel: 'email', enabled: false }], at),
    ).rejects.toThrow(ResourceExhaustedError);
    await store.write('a', [{ category: 'news', channel: 'sms', enabled: true }], at);
    expect(await store.read('a')).toHaveLength(2);
    // Erasing makes room again.
    await store.erase('b');
    await store.write('c', [{ category: 'news', channel: 'email', enabled: false }], at);
    expect(await store.read('c')).toHaveLength(1);
  });
});
