/**
 * The preferences (users/preferences/): one row per user choice of a category's channel. A user who
 * made no choice has no row (the category's default applies). Additive.
 */
import type { Knex } from 'knex';

/** Creates the table. */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE user_preferences (
      user_id text NOT NULL,
      category text NOT NULL,
      channel text NOT NULL CHECK (channel IN ('inbox', 'email', 'sms', 'push')),
      enabled boolean NOT NULL,
      updated_at timestamptz NOT NULL,
      PRIMARY KEY (user_id, category, channel)
    )`);
}

/** Drops the table: every user is back on the categories' defaults. */
export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE IF EXISTS user_preferences');
}
