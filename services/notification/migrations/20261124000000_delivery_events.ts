/**
 * The delivery event log behind WatchDeliveries (delivery/README.md, "WatchDeliveries"): one row per
 * status change of a record, written in the same statement or transaction as the change. Rows are
 * inserted with `seq` NULL; the sequencer (DatabaseDeliveryStore.sequenceEvents) gives committed rows
 * their gap-free `seq` in id order from `delivery_event_counter`, one sequencer at a time, so readers
 * (who only read sequenced rows) never see seq N+1 before N. No recipient and no content here: the
 * caller maps events to its messages by delivery id. Events go with their record (retention); the
 * highest seq purged per scope is kept in `delivery_event_horizon`, so an older cursor gets a RESET.
 */
import type { Knex } from 'knex';

/** Creates the event log, its counter and the purge horizon. */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE delivery_events (
      id bigserial PRIMARY KEY,
      seq bigint,
      delivery_id uuid NOT NULL,
      scope text NOT NULL,
      channel text NOT NULL,
      backend text NOT NULL,
      status text NOT NULL,
      failure text,
      reason text,
      provider_reference text,
      occurred_at timestamptz NOT NULL
    )`);
  await knex.raw('CREATE UNIQUE INDEX delivery_events_seq_idx ON delivery_events (seq)');
  // A watcher's catch-up reads its caller's events after its cursor.
  await knex.raw(
    'CREATE INDEX delivery_events_scope_seq_idx ON delivery_events (scope, seq) WHERE seq IS NOT NULL',
  );
  // The sequencer's work list stays small: only rows still waiting for a seq.
  await knex.raw('CREATE INDEX delivery_events_unsequenced_idx ON delivery_events (id) WHERE seq IS NULL');
  // Retention deletes a record's events with it.
  await knex.raw('CREATE INDEX delivery_events_delivery_idx ON delivery_events (delivery_id)');
  await knex.raw(`
    CREATE TABLE delivery_event_counter (
      id int PRIMARY KEY CHECK (id = 1),
      last_seq bigint NOT NULL
    )`);
  await knex.raw('INSERT INTO delivery_event_counter (id, last_seq) VALUES (1, 0)');
  await knex.raw(`
    CREATE TABLE delivery_event_horizon (
      scope text PRIMARY KEY,
      purged_through bigint NOT NULL
    )`);
}

/** Drops them. */
export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE IF EXISTS delivery_event_horizon');
  await knex.raw('DROP TABLE IF EXISTS delivery_event_counter');
  await knex.raw('DROP TABLE IF EXISTS delivery_events');
}
