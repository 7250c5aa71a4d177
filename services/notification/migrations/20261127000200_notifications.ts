/**
 * The notify area's tables (notify/README.md): a notification per `Notify` call (or per user of a
 * topic fan-out), one line per channel and contact point of its fan-out, and the durable topic jobs
 * (a cursor and a lease per topic notification). Plain SQL that PostgreSQL 15 and PGlite both accept.
 */
import type { Knex } from 'knex';
import { createJobTable } from '../../../shared/storage/periodic-job';

/** The bookkeeping table of the notifications' retention purge (one replica per interval). */
export const NOTIFY_MAINTENANCE_TABLE = 'notification_maintenance';

/** Creates the notification tables and their indexes. */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE notifications (
      id uuid PRIMARY KEY,
      scope text NOT NULL,
      user_id text NULL,
      topic text NULL,
      parent_id uuid NULL REFERENCES notifications (id) ON DELETE CASCADE,
      category text NOT NULL,
      priority text NOT NULL,
      idempotency_key text NULL,
      request_hash text NOT NULL,
      status text NOT NULL,
      users_total bigint NOT NULL DEFAULT 0,
      users_done bigint NOT NULL DEFAULT 0,
      created_at timestamptz NOT NULL,
      updated_at timestamptz NOT NULL
    )`);
  // The idempotency key is unique per caller.
  await knex.raw(
    `CREATE UNIQUE INDEX notifications_scope_key_idx ON notifications (scope, idempotency_key)
     WHERE idempotency_key IS NOT NULL`,
  );
  // A topic fan-out creates at most one notification per (topic notification, user): a page redone
  // after a crash creates nothing twice. It also serves "children of this topic notification still
  // to fan out".
  await knex.raw(
    `CREATE UNIQUE INDEX notifications_parent_user_idx ON notifications (parent_id, user_id)
     WHERE parent_id IS NOT NULL`,
  );
  // ListNotifications: one user's newest first, keyset paged; and DeleteUser's erasure.
  await knex.raw(
    'CREATE INDEX notifications_user_created_idx ON notifications (user_id, created_at DESC, id DESC)',
  );
  // The retention purge takes the oldest first.
  await knex.raw('CREATE INDEX notifications_created_idx ON notifications (created_at)');

  await knex.raw(`
    CREATE TABLE notification_channels (
      notification_id uuid NOT NULL REFERENCES notifications (id) ON DELETE CASCADE,
      position integer NOT NULL,
      channel text NOT NULL,
      contact text NOT NULL DEFAULT '',
      message_id text NULL,
      skip_reason text NULL,
      error text NULL,
      locale text NOT NULL DEFAULT '',
      PRIMARY KEY (notification_id, position)
    )`);

  await knex.raw(`
    CREATE TABLE notification_topic_jobs (
      notification_id uuid PRIMARY KEY REFERENCES notifications (id) ON DELETE CASCADE,
      topic text NOT NULL,
      request jsonb NULL,
      cursor text NULL,
      counted boolean NOT NULL DEFAULT false,
      lease_owner text NULL,
      lease_expires_at timestamptz NULL,
      finished_at timestamptz NULL,
      created_at timestamptz NOT NULL DEFAULT now()
    )`);
  // Claims look at unfinished jobs only.
  await createJobTable(knex, NOTIFY_MAINTENANCE_TABLE);
  await knex.raw(
    `CREATE INDEX notification_topic_jobs_open_idx ON notification_topic_jobs (created_at)
     WHERE finished_at IS NULL`,
  );
}

/** Drops the notification tables. */
export async function down(knex: Knex): Promise<void> {
  await knex.raw(`DROP TABLE IF EXISTS ${NOTIFY_MAINTENANCE_TABLE}`);
  await knex.raw('DROP TABLE IF EXISTS notification_topic_jobs');
  await knex.raw('DROP TABLE IF EXISTS notification_channels');
  await knex.raw('DROP TABLE IF EXISTS notifications');
}
