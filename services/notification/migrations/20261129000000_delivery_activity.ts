/**
 * The console's activity feed (issue 29): the filters an operator lists deliveries by, each answered
 * by an index.
 *
 * - `category`: the Notify category a fan-out's delivery was sent for (null for a direct send).
 * - `recipient_keys`: the record's recipients normalised as the suppression list keys them
 *   (`normaliseRecipient`: an email address trimmed and lower-cased, each of a comma-separated list;
 *   an SMS number without spaces, dashes, dots and parentheses; a device token trimmed), a generated
 *   column, so it follows every change of `recipient` (leave-out, retention, DeleteUser erase it).
 * - user: newest first within one user's deliveries.
 * - `notification_channels.message_id`: a delivery's notification (its timeline's summary).
 * - notifications by category, newest first (the operator's notification listing; by user has its
 *   index already, by status is a scan of the newest rows).
 */
import type { Knex } from 'knex';

/** Adds the columns and indexes. */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE deliveries ADD COLUMN category text NULL');
  await knex.raw(`
    ALTER TABLE deliveries ADD COLUMN recipient_keys text[] GENERATED ALWAYS AS (
      CASE channel
        WHEN 'email' THEN string_to_array(lower(regexp_replace(recipient, '\\s+', '', 'g')), ',')
        WHEN 'sms' THEN ARRAY[regexp_replace(recipient, '[\\s().-]', '', 'g')]
        ELSE ARRAY[btrim(recipient)]
      END) STORED`);
  await knex.raw(
    `CREATE INDEX deliveries_category_created_idx ON deliveries (category, created_at DESC, id DESC)
     WHERE category IS NOT NULL`,
  );
  await knex.raw(
    `CREATE INDEX deliveries_user_created_idx ON deliveries (user_id, created_at DESC, id DESC)
     WHERE user_id IS NOT NULL`,
  );
  await knex.raw('CREATE INDEX deliveries_recipient_keys_idx ON deliveries USING gin (recipient_keys)');
  await knex.raw(
    `CREATE INDEX notification_channels_message_idx ON notification_channels (message_id)
     WHERE message_id IS NOT NULL`,
  );
  await knex.raw(
    'CREATE INDEX notifications_category_created_idx ON notifications (category, created_at DESC, id DESC)',
  );
}

/** Drops them. */
export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP INDEX IF EXISTS notifications_category_created_idx');
  await knex.raw('DROP INDEX IF EXISTS notification_channels_message_idx');
  await knex.raw('DROP INDEX IF EXISTS deliveries_user_created_idx');
  await knex.raw('ALTER TABLE deliveries DROP COLUMN IF EXISTS recipient_keys');
  await knex.raw('ALTER TABLE deliveries DROP COLUMN IF EXISTS category');
}
