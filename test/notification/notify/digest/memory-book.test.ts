import { InMemoryDigestBook } from '../../../../services/notification/notify/digest/memory-book';
import { ManualClock } from '../../../support/manual-clock';
import { describeDigestBookContract } from './book-contract';

const clock = new ManualClock(new Date('2026-11-01T12:00:00.000Z'));
let book: InMemoryDigestBook | undefined;

describeDigestBookContract('InMemoryDigestBook', async () => ({
  book: (categories) => (book ??= new InMemoryDigestBook({ categories, clock })),
  now: async () => clock.date(),
  pass: async (ms) => clock.advance(ms),
}));
