/**
 * The monitoring library's migrations, in order: the samples table of the pull-metrics backend's
 * `store_in_db`. shared/ knows no service, so the library only lists them; the composition root of a
 * service that enables `store_in_db` runs them with its migration runner before the backend starts:
 *
 *   const table = config.pull_metrics.metrics_table;
 *   await runMigrations(knex, pullMetricsMigrations(table), {
 *     tableName: pullMetricsMigrationsTable(table),
 *   });
 *
 * Listed explicitly (not globbed) so the same list runs from TypeScript sources and from dist;
 * append new migrations at the end.
 */
import { createHash } from 'node:crypto';
import type { NamedMigration } from '../../storage/migrations';
import { metricSamplesMigration } from './20261126150000_metric_samples';

/** Default of `pull_metrics.metrics_table`. */
export const DEFAULT_METRICS_TABLE = 'metric_samples';

/** Every pull-metrics migration for the samples table `table`, oldest first. */
export function pullMetricsMigrations(table: string = DEFAULT_METRICS_TABLE): readonly NamedMigration[] {
  return [{ name: '20261126150000_metric_samples', ...metricSamplesMigration(table) }];
}

/** Longest PostgreSQL identifier, less the `_lock` knex appends for its lock table. */
const MAX_MIGRATIONS_TABLE = 63 - '_lock'.length;

/**
 * The knex table that records which pull-metrics migrations ran for the samples table `table`: one
 * per samples table (apart from the service's own), so a renamed `metrics_table` is migrated afresh
 * instead of being taken for done. `pull_metrics_migrations_<table>`, or for a name too long for
 * PostgreSQL its start and a hash of the whole.
 */
export function pullMetricsMigrationsTable(table: string = DEFAULT_METRICS_TABLE): string {
  const name = `pull_metrics_migrations_${table}`;
  if (name.length <= MAX_MIGRATIONS_TABLE) return name;
  const hash = createHash('sha256').update(table).digest('hex').slice(0, 8);
  return `${name.slice(0, MAX_MIGRATIONS_TABLE - 9)}_${hash}`;
}
