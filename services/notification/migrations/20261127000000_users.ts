/**
 * The user directory (users/): one row per user, their push devices (a token belongs to one user at
 * a time: the primary key) and topic memberships. User ids are compared byte-wise (`COLLATE "C"`) so
 * the topic listing's keyset order is the same on every server and in the memory store (code point
 * order), whatever the database's default collation. Additive.
 */
import type { Knex } from 'knex';

/** Creates the three tables. */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE users (
      user_id text COLLATE "C" PRIMARY KEY,
      emails jsonb NOT NULL,
      phones jsonb NOT NULL,
      locale text NOT NULL,
      time_zone text NOT NULL,
      attributes jsonb NOT NULL,
      created_at timestamptz NOT NULL,
      updated_at timestamptz NOT NULL
    )`);
  await knex.raw(`
    CREATE TABLE user_devices (
      token text PRIMARY KEY,
      user_id text COLLATE "C" NOT NULL REFERENCES users (user_id) ON DELETE CASCADE,
      platform text NOT NULL CHECK (platform IN ('apns', 'fcm')),
      backend text NULL,
      registered_at timestamptz NOT NULL
    )`);
  // A user's devices (GetUser, the per-user bound, the cascade of DeleteUser).
  await knex.raw('CREATE INDEX user_devices_user_idx ON user_devices (user_id, registered_at)');
  // The primary key (topic, user_id) is the index a keyset page by user id within a topic reads.
  await knex.raw(`
    CREATE TABLE topic_members (
      topic text COLLATE "C" NOT NULL,
      user_id text COLLATE "C" NOT NULL REFERENCES users (user_id) ON DELETE CASCADE,
      created_at timestamptz NOT NULL,
      PRIMARY KEY (topic, user_id)
    )`);
  // DeleteUser's cascade finds a user's memberships without scanning every topic.
  await knex.raw('CREATE INDEX topic_members_user_idx ON topic_members (user_id)');
}

/** Drops the tables. */
export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE IF EXISTS topic_members');
  await knex.raw('DROP TABLE IF EXISTS user_devices');
  await knex.raw('DROP TABLE IF EXISTS users');
}
