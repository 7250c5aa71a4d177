import { InMemoryInboxStore } from '../../../services/notification/inbox/memory-store';
import { silentLogger } from '../../../shared/logging/logger';
import { epochClock } from '../../support/manual-clock';
import { describeInboxContract } from './inbox-contract';

// Numbered from 1, as the database store (the contract watches "from the start", after cursor 0).
describeInboxContract('InMemoryInboxStore', async () => ({
  store: new InMemoryInboxStore(silentLogger(), { clock: epochClock() }),
  close: async () => {},
}));

describe('InMemoryInboxStore copies', () => {
  const at = new Date('2026-11-29T08:00:00Z');

  it.each([
    ['empty metadata', {}],
    ['metadata with CJK, emoji and right-to-left text', { note: '通知 🚀 שלום', nested: { list: [1, 2] } }],
  ])(
    'when a caller mutates the metadata it sent or got back (%s), the stored message keeps its own',
    async (_, metadata) => {
      const store = new InMemoryInboxStore();
      const input = { id: 'm1', userId: 'u1', title: 't', body: 'b', metadata, createdAt: at };
      const expected = structuredClone(metadata);
      const sent = await store.send(input);
      (input.metadata as Record<string, unknown>).added = 'by the caller';
      (sent.message.metadata as Record<string, unknown>).added = 'by the caller';
      (sent.event.message!.metadata as Record<string, unknown>).added = 'by the caller';
      const page = await store.listMessages({ userId: 'u1', limit: 10, unreadOnly: false });
      expect(page.messages[0]!.metadata).toEqual(expected);
      (page.messages[0]!.metadata as Record<string, unknown>).added = 'by a reader';
      const [event] = await store.eventsAfter('u1', 0, 10);
      expect(event!.message!.metadata).toEqual(expected);
      expect(
        (await store.listMessages({ userId: 'u1', limit: 10, unreadOnly: false })).messages[0]!.metadata,
      ).toEqual(expected);
    },
  );

  it('when metadata is not a plain object (a null-prototype one), it is still copied', async () => {
    const store = new InMemoryInboxStore();
    const metadata = Object.create(null) as Record<string, unknown>;
    const sent = await store.send({ id: 'm1', userId: 'u1', title: 't', body: 'b', metadata, createdAt: at });
    expect(sent.message.metadata).not.toBe(metadata);
    metadata.late = 1;
    const page = await store.listMessages({ userId: 'u1', limit: 10, unreadOnly: false });
    expect(page.messages[0]!.metadata).toEqual({});
  });
});
