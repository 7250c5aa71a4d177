/**
 * The digests of issue 26 (notify/README.md, "Digests"): one row per digest, one row per event in it.
 * The schema is what keeps a key to one digest under concurrency:
 * - `notification_digests_head_idx`: at most one HEAD digest per (scope, user, category, channel,
 *   key), the one new windows open into; creators race with INSERT ... ON CONFLICT DO NOTHING and the
 *   losers join the winner;
 * - `notification_digests_window_idx`: no two accepting digests of a key share a window start;
 * - `notification_digest_events_once_idx`: an event (notification, channel) is in one digest only.
 * Plain SQL that PostgreSQL 15 and PGlite both accept.
 */
import type { Knex } from 'knex';

/** Creates the digest tables and their indexes. */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE notification_digests (
      id uuid PRIMARY KEY,
      scope text NOT NULL,
      user_id text NOT NULL,
      category text NOT NULL,
      channel text NOT NULL,
      digest_key text NOT NULL,
      window_start timestamptz NOT NULL,
      window_end timestamptz NOT NULL,
      flush_at timestamptz NOT NULL,
      status text NOT NULL DEFAULT 'open',
      head boolean NOT NULL DEFAULT true,
      accepting boolean NOT NULL DEFAULT true,
      event_count integer NOT NULL DEFAULT 0,
      data_bytes bigint NOT NULL DEFAULT 0,
      lease_owner text NULL,
      lease_expires_at timestamptz NULL,
      message_id text NULL,
      error text NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    )`);
  await knex.raw(
    `CREATE UNIQUE INDEX notification_digests_head_idx
     ON notification_digests (scope, user_id, category, channel, digest_key) WHERE head`,
  );
  await knex.raw(
    `CREATE UNIQUE INDEX notification_digests_window_idx
     ON notification_digests (scope, user_id, category, channel, digest_key, window_start) WHERE accepting`,
  );
  // The runner's claim: open digests by due time, taken ones by lease expiry.
  await knex.raw(
    `CREATE INDEX notification_digests_due_idx ON notification_digests (flush_at) WHERE status = 'open'`,
  );
  await knex.raw(
    `CREATE INDEX notification_digests_lease_idx ON notification_digests (lease_expires_at)
     WHERE status = 'sending'`,
  );
  // DeleteUser.
  await knex.raw('CREATE INDEX notification_digests_user_idx ON notification_digests (user_id)');
  // The purge of finished digests, oldest first.
  await knex.raw(
    `CREATE INDEX notification_digests_finished_idx ON notification_digests (updated_at)
     WHERE status IN ('sent', 'cancelled')`,
  );

  await knex.raw(`
    CREATE TABLE notification_digest_events (
      digest_id uuid NOT NULL REFERENCES notification_digests (id) ON DELETE CASCADE,
      notification_id text NOT NULL,
      channel text NOT NULL,
      occurred_at timestamptz NOT NULL,
      seq bigserial NOT NULL,
      data jsonb NOT NULL,
      data_bytes integer NOT NULL,
      PRIMARY KEY (digest_id, notification_id, channel)
    )`);
  await knex.raw(
    `CREATE UNIQUE INDEX notification_digest_events_once_idx
     ON notification_digest_events (notification_id, channel)`,
  );
}

/** Drops the digest tables. */
export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE IF EXISTS notification_digest_events');
  await knex.raw('DROP TABLE IF EXISTS notification_digests');
}
