/**
 * Inbox events, bounded and erasable: the per-user purge horizon (the highest event seq the retention
 * purge deleted, so a watcher whose cursor is older gets an explicit reset instead of a silent jump),
 * and an index that finds a message's `sent` event when the message is deleted and its content erased.
 */
import type { Knex } from 'knex';

/** Creates the horizon table and the erasure index. */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE inbox_event_horizon (
      user_id text PRIMARY KEY,
      purged_through bigint NOT NULL
    )`);
  // Only events that still carry content are ever erased; the partial index stays small.
  await knex.raw(
    'CREATE INDEX inbox_events_message_payload_idx ON inbox_events (message_id) WHERE payload IS NOT NULL',
  );
}

/** Drops them. */
export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP INDEX IF EXISTS inbox_events_message_payload_idx');
  await knex.raw('DROP TABLE IF EXISTS inbox_event_horizon');
}
