/**
 * Provider receipts: each delivery keeps what providers reported after accepting it (`receipts`, a
 * bounded JSON array, see delivery/receipt.ts); receipts find their delivery by the provider's message
 * id (`deliveries_provider_reference_idx`); the failure kinds gain the causes receipts report.
 * Additive: existing rows get an empty history.
 */
import type { Knex } from 'knex';

/**
 * Every failure kind the column accepts after this migration. `recipient_suppressed` belongs to the
 * suppression list (its own migration adds it too): listed here so the order of the two does not matter.
 */
const FAILURE_KINDS = [
  'recipient_invalid',
  'recipient_unregistered',
  'recipient_unsubscribed',
  'payload_rejected',
  'provider_auth',
  'provider_rejected',
  'retries_exhausted',
  'recipient_suppressed',
  'recipient_bounced',
  'spam_complaint',
  'provider_undelivered',
];

const BEFORE = FAILURE_KINDS.slice(0, 7);

function failureCheck(kinds: readonly string[]): string {
  return `CHECK (failure IN (${kinds.map((k) => `'${k}'`).join(', ')}))`;
}

/** Adds the history column, the provider-reference index and the new failure kinds. */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`ALTER TABLE deliveries ADD COLUMN receipts jsonb NOT NULL DEFAULT '[]'::jsonb`);
  await knex.raw(
    `CREATE INDEX deliveries_provider_reference_idx ON deliveries (provider_reference, channel)
     WHERE provider_reference IS NOT NULL`,
  );
  await knex.raw('ALTER TABLE deliveries DROP CONSTRAINT IF EXISTS deliveries_failure_check');
  await knex.raw(
    `ALTER TABLE deliveries ADD CONSTRAINT deliveries_failure_check ${failureCheck(FAILURE_KINDS)}`,
  );
}

/** Drops them again (rows with a new failure kind lose it). */
export async function down(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE deliveries DROP CONSTRAINT IF EXISTS deliveries_failure_check');
  await knex.raw(
    `UPDATE deliveries SET failure = NULL WHERE NOT (failure IN (${BEFORE.map((k) => `'${k}'`).join(', ')}))`,
  );
  await knex.raw(`ALTER TABLE deliveries ADD CONSTRAINT deliveries_failure_check ${failureCheck(BEFORE)}`);
  await knex.raw('DROP INDEX IF EXISTS deliveries_provider_reference_idx');
  await knex.raw('ALTER TABLE deliveries DROP COLUMN IF EXISTS receipts');
}
