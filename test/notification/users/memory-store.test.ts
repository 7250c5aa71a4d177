import { ResourceExhaustedError } from '../../../shared/errors';
import { InMemoryUserStore } from '../../../services/notification/users/memory-store';
import { describeUsersContract, newUserId, userInput } from './users-contract';

describeUsersContract('InMemoryUserStore', async () => ({
  store: new InMemoryUserStore(),
  close: async () => {},
}));

describe('InMemoryUserStore bounds', () => {
  const now = new Date();

  it('when it holds its maximum of users, a new one is RESOURCE_EXHAUSTED and an existing one still updates', async () => {
    const store = new InMemoryUserStore(2, 10);
    const [a, b] = [newUserId(), newUserId()];
    await store.upsert(userInput(a), now);
    await store.upsert(userInput(b), now);
    await expect(store.upsert(userInput(newUserId()), now)).rejects.toBeInstanceOf(ResourceExhaustedError);
    expect((await store.upsert(userInput(a, { locale: 'fr' }), now)).user.locale).toBe('fr');
  });

  it('when it holds its maximum of memberships, a subscribe that would pass it adds nobody', async () => {
    const store = new InMemoryUserStore(10, 2);
    const ids = [newUserId(), newUserId(), newUserId()];
    for (const id of ids) await store.upsert(userInput(id), now);
    expect(await store.subscribe('t', ids.slice(0, 2), now)).toEqual({ added: 2 });
    await expect(store.subscribe('u', ids.slice(2), now)).rejects.toBeInstanceOf(ResourceExhaustedError);
    expect(await store.listTopic('u', 10)).toEqual([]);
    // Deleting a user frees its places.
    await store.delete(ids[0]!);
    expect(await store.subscribe('u', ids.slice(2), now)).toEqual({ added: 1 });
  });
});
