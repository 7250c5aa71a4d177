/**
 * When to notify (issue 26), the notify area's part: a notification's `send_at`, its due time
 * (`due_at`: the send time of a scheduled notification, or the earliest held line's release), the
 * request kept until nothing waits (`request`) and the lease of the one runner of due work; the lines'
 * hold, throttle and digest fields; a topic job's start time (`not_before`).
 */
import type { Knex } from 'knex';

/** Adds the scheduling columns and the due-work index. */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    ALTER TABLE notifications
      ADD COLUMN send_at timestamptz NULL,
      ADD COLUMN due_at timestamptz NULL,
      ADD COLUMN request jsonb NULL,
      ADD COLUMN lease_owner text NULL,
      ADD COLUMN lease_expires_at timestamptz NULL`);
  // The runner's claim: due work only, earliest first.
  await knex.raw('CREATE INDEX notifications_due_idx ON notifications (due_at) WHERE due_at IS NOT NULL');
  await knex.raw(`
    ALTER TABLE notification_channels
      ADD COLUMN held_until timestamptz NULL,
      ADD COLUMN hold_reason text NULL,
      ADD COLUMN throttled_by text NULL,
      ADD COLUMN digest_id text NULL`);
  await knex.raw('ALTER TABLE notification_topic_jobs ADD COLUMN not_before timestamptz NULL');
}

/** Drops them. */
export async function down(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE notification_topic_jobs DROP COLUMN IF EXISTS not_before');
  await knex.raw(`
    ALTER TABLE notification_channels
      DROP COLUMN IF EXISTS held_until, DROP COLUMN IF EXISTS hold_reason,
      DROP COLUMN IF EXISTS throttled_by, DROP COLUMN IF EXISTS digest_id`);
  await knex.raw('DROP INDEX IF EXISTS notifications_due_idx');
  await knex.raw(`
    ALTER TABLE notifications
      DROP COLUMN IF EXISTS send_at, DROP COLUMN IF EXISTS due_at, DROP COLUMN IF EXISTS request,
      DROP COLUMN IF EXISTS lease_owner, DROP COLUMN IF EXISTS lease_expires_at`);
}
