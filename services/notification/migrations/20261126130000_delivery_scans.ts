/**
 * Indexes for the two scans that grew with the table (issue 23, "Scans and bounds"; delivery/README.md,
 * "Retention and listing scans"):
 * - The content retention's erase asks for final rows not yet erased, oldest first. The index on
 *   `finished_at` holds every final row, so each batch walked past all the rows erased before (most
 *   of the table once retention has run a while): `deliveries_unerased_idx` holds only the rows
 *   still to erase.
 * - ListDeliveries always filters by the caller's scope (the RPC passes it) and reads newest first:
 *   `deliveries_scope_created_idx` leads with the scope, so a caller's page reads that caller's rows
 *   only; the failure-kind listing likewise (`deliveries_scope_failure_idx`). They replace the
 *   scope-less `deliveries_created_idx` and `deliveries_failure_idx`: every index is written on each
 *   insert and status change, so the count stays where it was. A listing without a scope (in-process
 *   only) sorts instead.
 */
import type { Knex } from 'knex';

/** Creates the scope-leading listing indexes and the not-yet-erased index; drops the ones they replace. */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(
    `CREATE INDEX deliveries_unerased_idx ON deliveries (finished_at)
     WHERE content_erased_at IS NULL AND finished_at IS NOT NULL`,
  );
  await knex.raw('CREATE INDEX deliveries_scope_created_idx ON deliveries (scope, created_at DESC, id DESC)');
  await knex.raw(
    `CREATE INDEX deliveries_scope_failure_idx ON deliveries (scope, failure, created_at DESC, id DESC)
     WHERE failure IS NOT NULL`,
  );
  await knex.raw('DROP INDEX IF EXISTS deliveries_created_idx');
  await knex.raw('DROP INDEX IF EXISTS deliveries_failure_idx');
}

/** Back to the indexes of before. */
export async function down(knex: Knex): Promise<void> {
  await knex.raw(
    'CREATE INDEX IF NOT EXISTS deliveries_created_idx ON deliveries (created_at DESC, id DESC)',
  );
  await knex.raw(
    `CREATE INDEX IF NOT EXISTS deliveries_failure_idx ON deliveries (failure, created_at DESC, id DESC)
     WHERE failure IS NOT NULL`,
  );
  await knex.raw('DROP INDEX IF EXISTS deliveries_scope_failure_idx');
  await knex.raw('DROP INDEX IF EXISTS deliveries_scope_created_idx');
  await knex.raw('DROP INDEX IF EXISTS deliveries_unerased_idx');
}
