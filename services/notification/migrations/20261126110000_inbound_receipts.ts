/**
 * The inbound replay ids (delivery/inbound-replay.ts): one row per provider callback taken, per
 * backend, so a replayed signed callback (Twilio signs no timestamp) is refused on every replica.
 * Rows are deleted after `webhooks.replay_retention_hours` (the index on seen_at serves that prune).
 * Additive.
 */
import type { Knex } from 'knex';

/** Creates the table and its retention index. */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE inbound_receipts (
      backend text NOT NULL,
      receipt_id text NOT NULL,
      seen_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (backend, receipt_id)
    )`);
  await knex.raw('CREATE INDEX inbound_receipts_seen_at_idx ON inbound_receipts (seen_at)');
}

/** Drops the table: replays are recognised again only from the next callbacks on. */
export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE IF EXISTS inbound_receipts');
}
