/**
 * The bookkeeping table of the delivery area's periodic jobs (the retention pass): the last run of
 * each job, so replicas run it once per interval between them (shared/storage/periodic-job.ts).
 */
import type { Knex } from 'knex';
import { createJobTable } from '../../../shared/storage/periodic-job';

/** The table's name; DatabaseJobLease of the delivery area reads and writes it. */
export const DELIVERY_MAINTENANCE_TABLE = 'delivery_maintenance';

/** Creates the table. */
export async function up(knex: Knex): Promise<void> {
  await createJobTable(knex, DELIVERY_MAINTENANCE_TABLE);
}

/** Drops it. */
export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists(DELIVERY_MAINTENANCE_TABLE);
}
