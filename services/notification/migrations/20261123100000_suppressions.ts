/**
 * The suppression list (delivery/suppression.ts): one row per (channel, normalised recipient), and
 * what deliveries need for it: the failure kind `recipient_suppressed` and `suppressed_recipients`
 * (the masked addresses an email left out because they are suppressed). Additive.
 */
import type { Knex } from 'knex';

/** Every failure kind after this migration (the CHECK constraint on deliveries.failure). */
const FAILURES = [
  'recipient_invalid',
  'recipient_unregistered',
  'recipient_unsubscribed',
  'recipient_suppressed',
  'payload_rejected',
  'provider_auth',
  'provider_rejected',
  'retries_exhausted',
];

/** Creates the table, widens the failure check, adds the column. */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE suppressions (
      id uuid PRIMARY KEY,
      channel text NOT NULL CHECK (channel IN ('email', 'sms', 'push')),
      recipient text NOT NULL,
      reason text NOT NULL,
      source text NOT NULL,
      created_at timestamptz NOT NULL,
      UNIQUE (channel, recipient)
    )`);
  // Newest-first keyset listing (per channel goes through the same index, filtered).
  await knex.raw('CREATE INDEX suppressions_created_idx ON suppressions (created_at DESC, id DESC)');
  // The CHECK added with the column in 20261123000400 got PostgreSQL's default name.
  await knex.raw(`
    ALTER TABLE deliveries
      DROP CONSTRAINT IF EXISTS deliveries_failure_check,
      ADD CONSTRAINT deliveries_failure_check CHECK (failure IN (${FAILURES.map((f) => `'${f}'`).join(', ')})),
      ADD COLUMN suppressed_recipients jsonb NULL`);
}

/** Drops the table and the column; suppressed deliveries lose their failure kind. */
export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE IF EXISTS suppressions');
  await knex.raw(
    `UPDATE deliveries SET failure = 'provider_rejected' WHERE failure = 'recipient_suppressed'`,
  );
  await knex.raw(`
    ALTER TABLE deliveries
      DROP COLUMN IF EXISTS suppressed_recipients,
      DROP CONSTRAINT IF EXISTS deliveries_failure_check,
      ADD CONSTRAINT deliveries_failure_check CHECK (failure IN (${FAILURES.filter(
        (f) => f !== 'recipient_suppressed',
      )
        .map((f) => `'${f}'`)
        .join(', ')}))`);
}
