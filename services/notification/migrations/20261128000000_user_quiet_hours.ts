/**
 * Quiet hours on the user (issue 26): a jsonb column `{ windows: [{days, start, end}], holdEmail }`,
 * validated by the users area before it is written. Existing users get none. Additive.
 */
import type { Knex } from 'knex';

/** Adds `users.quiet_hours`. */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(
    `ALTER TABLE users ADD COLUMN quiet_hours jsonb NOT NULL DEFAULT '{"windows":[],"holdEmail":false}'::jsonb`,
  );
}

/** Drops the column. */
export async function down(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE users DROP COLUMN IF EXISTS quiet_hours');
}
