/**
 * Routing and failure kinds of deliveries: `failure` (why a FAILED delivery failed, filterable) and
 * `backend_pinned` (the caller named the backend, so failover and round robin leave it alone).
 * Additive: existing rows keep their backend, unpinned, with no failure kind.
 */
import type { Knex } from 'knex';

/** Adds the columns and the failure index. */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    ALTER TABLE deliveries
      ADD COLUMN backend_pinned boolean NOT NULL DEFAULT false,
      ADD COLUMN failure text NULL
        CHECK (failure IN ('recipient_invalid', 'recipient_unregistered', 'recipient_unsubscribed',
          'payload_rejected', 'provider_auth', 'provider_rejected', 'retries_exhausted'))`);
  // ListDeliveries by failure kind (pruning dead tokens) reads newest first; only failed rows carry one.
  await knex.raw(
    `CREATE INDEX deliveries_failure_idx ON deliveries (failure, created_at DESC, id DESC)
     WHERE failure IS NOT NULL`,
  );
}

/** Drops the columns (and with them the index). */
export async function down(knex: Knex): Promise<void> {
  await knex.raw(
    'ALTER TABLE deliveries DROP COLUMN IF EXISTS failure, DROP COLUMN IF EXISTS backend_pinned',
  );
}
