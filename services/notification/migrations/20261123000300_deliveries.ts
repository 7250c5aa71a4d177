/**
 * The delivery records of the pipeline (services/notification/delivery): one row per delivery, its
 * attempts inline as a JSON array (bounded by delivery.max_attempts). Plain SQL that PostgreSQL 15 and
 * PGlite (PostgreSQL 18) both accept.
 */
import type { Knex } from 'knex';

/** Creates the deliveries table and its indexes. */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE deliveries (
      id uuid PRIMARY KEY,
      channel text NOT NULL,
      backend text NOT NULL,
      recipient text NULL,
      masked_recipient text NOT NULL,
      scope text NOT NULL,
      idempotency_key text NULL,
      content_hash text NOT NULL,
      payload jsonb NULL,
      status text NOT NULL
        CHECK (status IN ('pending', 'retrying', 'sent', 'delivered', 'undelivered', 'failed')),
      attempts jsonb NOT NULL DEFAULT '[]'::jsonb,
      next_attempt_at timestamptz NULL,
      last_error text NULL,
      provider_reference text NULL,
      lease_owner text NULL,
      lease_expires_at timestamptz NULL,
      created_at timestamptz NOT NULL,
      updated_at timestamptz NOT NULL,
      sent_at timestamptz NULL,
      delivered_at timestamptz NULL,
      finished_at timestamptz NULL,
      content_erased_at timestamptz NULL
    )`);
  // Idempotency: one key per caller scope, for as long as the record lives.
  await knex.raw(
    `CREATE UNIQUE INDEX deliveries_idempotency_idx ON deliveries (scope, idempotency_key)
     WHERE idempotency_key IS NOT NULL`,
  );
  // Claims: due records of one backend, oldest first; only the queued rows are in the index.
  await knex.raw(
    `CREATE INDEX deliveries_due_idx ON deliveries (backend, next_attempt_at)
     WHERE status IN ('pending', 'retrying')`,
  );
  // Newest-first keyset listing.
  await knex.raw('CREATE INDEX deliveries_created_idx ON deliveries (created_at DESC, id DESC)');
  // Retention finds final rows by the time they ended.
  await knex.raw(
    'CREATE INDEX deliveries_finished_idx ON deliveries (finished_at) WHERE finished_at IS NOT NULL',
  );
}

/** Drops the deliveries table. */
export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE IF EXISTS deliveries');
}
