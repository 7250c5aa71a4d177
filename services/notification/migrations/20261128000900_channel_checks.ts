/**
 * The channel list lives in one place, the code (delivery/driver.ts CHANNELS): the CHECK constraints
 * that spelled it again in three tables go (issue 24: a new channel is its folder, its config section
 * and one line of wiring, not a migration per table). The stores' callers validate the channel
 * (the pipeline and the suppression list against CHANNELS, preferences against the categories, caps
 * against the config schema) before anything is written.
 */
import type { Knex } from 'knex';

const CHECKS: readonly [table: string, constraint: string][] = [
  ['suppressions', 'suppressions_channel_check'],
  ['user_preferences', 'user_preferences_channel_check'],
  ['notify_cap_takes', 'notify_cap_takes_channel_check'],
];

/** Drops the channel CHECK constraints. */
export async function up(knex: Knex): Promise<void> {
  for (const [table, constraint] of CHECKS) {
    await knex.raw('ALTER TABLE ?? DROP CONSTRAINT IF EXISTS ??', [table, constraint]);
  }
}

/** Puts them back as they were. */
export async function down(knex: Knex): Promise<void> {
  await knex.raw(
    "ALTER TABLE suppressions ADD CONSTRAINT suppressions_channel_check CHECK (channel IN ('email', 'sms', 'push'))",
  );
  await knex.raw(
    "ALTER TABLE user_preferences ADD CONSTRAINT user_preferences_channel_check CHECK (channel IN ('inbox', 'email', 'sms', 'push'))",
  );
  await knex.raw(
    "ALTER TABLE notify_cap_takes ADD CONSTRAINT notify_cap_takes_channel_check CHECK (channel IN ('email', 'sms', 'push'))",
  );
}
