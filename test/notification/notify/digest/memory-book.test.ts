import { MEMORY_FINISHED_DIGESTS } from '../../../../services/notification/notify/digest';
import { InMemoryDigestBook } from '../../../../services/notification/notify/digest/memory-book';
import { ManualClock } from '../../../support/manual-clock';
import { describeDigestBookContract, digestCategory, digestEvent } from './book-contract';

const clock = new ManualClock(new Date('2026-11-01T12:00:00.000Z'));
let book: InMemoryDigestBook | undefined;

describeDigestBookContract('InMemoryDigestBook', async () => ({
  book: (categories) => (book ??= new InMemoryDigestBook({ categories, clock })),
  now: async () => clock.date(),
  pass: async (ms) => clock.advance(ms),
}));

describe('InMemoryDigestBook bounds', () => {
  it(`keeps at most ${MEMORY_FINISHED_DIGESTS} finished digests for get, the oldest dropped first`, async () => {
    const c = new ManualClock(new Date('2026-11-01T12:00:00.000Z'));
    const bounded = new InMemoryDigestBook({
      categories: [digestCategory('comments', { window: '1h', max_count: 1 })],
      clock: c,
    });
    const ids: string[] = [];
    for (let i = 0; i <= MEMORY_FINISHED_DIGESTS; i++) {
      ids.push((await bounded.add(digestEvent(c.date(), { userId: `u-${i}` }))).digestId);
      const [due] = await bounded.claimDue('runner', 60_000, 1);
      expect(await bounded.finish(due!.id, 'runner', `m-${i}`, null)).toBe(true);
    }
    expect(await bounded.get(ids[0]!)).toBeNull();
    expect(await bounded.get(ids[1]!)).toMatchObject({ status: 'sent', messageId: 'm-1' });
    expect(await bounded.get(ids[MEMORY_FINISHED_DIGESTS]!)).toMatchObject({ status: 'sent' });
  });
});
