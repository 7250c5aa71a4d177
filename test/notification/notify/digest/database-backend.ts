/** A database book backend for the contract: the database's now, and real waiting. */
import type { Knex } from 'knex';
import type { CategoryConfig } from '../../../../services/notification/notify/config';
import type { DigestStore } from '../../../../services/notification/notify/digest';
import type { BookBackend } from './book-contract';

/** The contract's backend over `knex`: the book from `make`, the database's now, real waiting. */
export function databaseBackend(
  knex: Knex,
  make: (knex: Knex, categories: readonly CategoryConfig[]) => DigestStore,
): BookBackend {
  let book: DigestStore | undefined;
  return {
    book: (categories) => (book ??= make(knex, categories)),
    now: async () => {
      const { rows } = (await knex.raw('SELECT now() AS now')) as { rows: { now: Date | string }[] };
      return new Date(rows[0]!.now);
    },
    pass: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
  };
}
