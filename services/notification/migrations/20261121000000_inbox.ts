/**
 * The inbox tables: messages, the per-user event log that WatchInbox replays from, and the
 * bookkeeping row of the retention purge. Plain SQL that PostgreSQL 15 and PGlite (PostgreSQL 18)
 * both accept.
 */
import type { Knex } from 'knex';

/** Creates the inbox tables and their indexes. */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE inbox_messages (
      id uuid PRIMARY KEY,
      user_id text NOT NULL,
      title text NOT NULL,
      body text NOT NULL,
      metadata jsonb NOT NULL DEFAULT '{}'::jsonb,
      read_at timestamptz NULL,
      created_at timestamptz NOT NULL DEFAULT now()
    )`);
  // Newest-first keyset pages of one user: WHERE user_id = ? AND (created_at, id) < (?, ?).
  await knex.raw(
    'CREATE INDEX inbox_messages_user_created_idx ON inbox_messages (user_id, created_at DESC, id DESC)',
  );
  // Unread counts touch only the unread rows of one user.
  await knex.raw('CREATE INDEX inbox_messages_unread_idx ON inbox_messages (user_id) WHERE read_at IS NULL');
  // The retention purge finds old rows without scanning the table.
  await knex.raw('CREATE INDEX inbox_messages_created_idx ON inbox_messages (created_at)');

  await knex.raw(`
    CREATE TABLE inbox_events (
      seq bigserial PRIMARY KEY,
      user_id text NOT NULL,
      type text NOT NULL,
      message_id uuid NULL,
      unread_count integer NOT NULL,
      payload jsonb NULL,
      created_at timestamptz NOT NULL DEFAULT now()
    )`);
  await knex.raw('CREATE INDEX inbox_events_user_seq_idx ON inbox_events (user_id, seq)');
  await knex.raw('CREATE INDEX inbox_events_created_idx ON inbox_events (created_at)');

  await knex.raw(`
    CREATE TABLE inbox_maintenance (
      job text PRIMARY KEY,
      last_run_at timestamptz NOT NULL
    )`);
}

/** Drops the inbox tables. */
export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE IF EXISTS inbox_maintenance');
  await knex.raw('DROP TABLE IF EXISTS inbox_events');
  await knex.raw('DROP TABLE IF EXISTS inbox_messages');
}
