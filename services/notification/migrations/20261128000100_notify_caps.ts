/**
 * Frequency caps (issue 26, notify/caps/database-ledger.ts): one row per message taken against a
 * user's caps of a channel, stamped with the database's clock. A take reads the newest rows of its
 * (user, channel) and inserts one, under a transaction-scoped advisory lock of that pair; the index
 * serves that read, the purge of the pair's expired rows on each take, and DeleteUser. Additive.
 */
import type { Knex } from 'knex';

/** Creates `notify_cap_takes`. */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE notify_cap_takes (
      id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      user_id text COLLATE "C" NOT NULL,
      channel text NOT NULL CHECK (channel IN ('email', 'sms', 'push')),
      taken_at timestamptz NOT NULL
    )`);
  await knex.raw(
    'CREATE INDEX notify_cap_takes_user_channel_idx ON notify_cap_takes (user_id, channel, taken_at)',
  );
}

/** Drops the table. */
export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE IF EXISTS notify_cap_takes');
}
