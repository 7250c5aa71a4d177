/**
 * `deliveries` with fillfactor 80 (delivery/README.md, "Throughput (issue 10): PostgreSQL
 * statements"): a claim changes only the lease columns and `updated_at`, none of them indexed, so it
 * can be a HOT update (no new entry in any of the table's indexes) when the row's page has room for
 * the new version. At fillfactor 100 the pages a burst of inserts fills have none: on the email bench
 * 46% of claims found room; the 20% left free by inserts is for those updates. Applies to pages
 * filled from now on; existing pages keep what they have.
 */
import type { Knex } from 'knex';

/** Leaves 20% of each new page free for updates. */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE deliveries SET (fillfactor = 80)');
}

/** Back to the default (100). */
export async function down(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE deliveries RESET (fillfactor)');
}
