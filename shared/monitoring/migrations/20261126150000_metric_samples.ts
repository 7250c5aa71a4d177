/**
 * The table the pull-metrics backend writes samples to with `store_in_db` (`pull_metrics.metrics_table`,
 * `metric_samples` by default). It was created at run time by the backend; it is a migration now, run
 * by the composition root of the service that enables `store_in_db` (see ../README.md, "Backends").
 * The table name is configuration, so the migration is made for a name (./index.ts).
 */
import type { Knex } from 'knex';

/** The up/down pair for the samples table `table`. */
export function metricSamplesMigration(table: string): {
  up(knex: Knex): Promise<void>;
  down(knex: Knex): Promise<void>;
} {
  return {
    async up(knex) {
      await knex.schema.createTable(table, (t) => {
        t.bigIncrements('id');
        t.string('name', 255).notNullable();
        t.string('metric_type', 16).notNullable();
        t.double('value').notNullable();
        t.jsonb('labels').notNullable();
        t.timestamp('recorded_at', { useTz: true }).notNullable();
        t.index(['name', 'recorded_at']);
      });
    },
    async down(knex) {
      await knex.schema.dropTableIfExists(table);
    },
  };
}
