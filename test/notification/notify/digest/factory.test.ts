/** createDigestBook: the book the composition root wires (memory with the memory delivery store). */
import type { Knex } from 'knex';
import {
  createDigestBook,
  DatabaseDigestBook,
  InMemoryDigestBook,
} from '../../../../services/notification/notify/digest';
import { NotifyConfigSchema } from '../../../../services/notification/notify/config';
import { ManualClock } from '../../../support/manual-clock';
import { requireVmModules } from '../../inbox/support';
import { digestEvent } from './book-contract';
import { migratedPglite } from '../../../support/database';

const notify = NotifyConfigSchema.parse({
  categories: [
    { name: 'comments', channels: ['inbox', 'email'], digest: { email: { window: '15m', max_count: 2 } } },
  ],
});

let knex: Knex | undefined;
afterAll(async () => {
  await knex?.destroy();
});

describe('createDigestBook', () => {
  it('builds the memory book when delivery.store_backend is memory, on the clock given', async () => {
    const clock = new ManualClock(new Date('2026-11-01T12:00:00.000Z'));
    const book = createDigestBook({ notify, delivery: { store_backend: 'memory' } }, undefined, clock);
    expect(book).toBeInstanceOf(InMemoryDigestBook);
    const { flushAt } = await book.add(digestEvent(clock.date()));
    expect(flushAt).toEqual(new Date('2026-11-01T12:15:00.000Z'));
  });

  it('builds the database book on the storage handed in otherwise', async () => {
    requireVmModules();
    knex = await migratedPglite('notification');
    const book = createDigestBook({ notify, delivery: { store_backend: 'database' } }, { knex });
    expect(book).toBeInstanceOf(DatabaseDigestBook);
    const first = await book.add(digestEvent(new Date()));
    const second = await book.add(digestEvent(new Date()));
    expect(second.digestId).toBe(first.digestId);
    expect((await book.claimDue('runner', 60_000, 10)).map((d) => d.id)).toContain(first.digestId);
  });

  it('refuses the database book without storage', () => {
    expect(() => createDigestBook({ notify, delivery: { store_backend: 'database' } })).toThrow(
      /no database/,
    );
  });
});
