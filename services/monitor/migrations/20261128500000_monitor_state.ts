/**
 * The monitor's own state (issue 27, first half): SLOs registered by RPC and their recent samples,
 * the state of each watched target, and the bookkeeping row of each periodic job (SLO evaluation,
 * probe rounds) that replicas share through DatabaseJobLease (shared/storage/periodic-job.ts).
 */
import type { Knex } from 'knex';
import { createJobTable } from '../../../shared/storage/periodic-job';

/** The job table of the monitor's periodic jobs: the last run of each, on the database's clock. */
export const MONITOR_JOBS_TABLE = 'monitor_jobs';

/** Creates the tables. */
export async function up(knex: Knex): Promise<void> {
  // One row per SLO registered by RPC (config objectives stay config). `definition` is the SLO as
  // registered, defaults applied; its name and metric are columns for the unique key and the lookup.
  await knex.raw(`CREATE TABLE monitor_slos (
    name text PRIMARY KEY,
    metric text NOT NULL,
    definition jsonb NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
  )`);
  await knex.raw('CREATE INDEX monitor_slos_metric ON monitor_slos (metric)');
  // Latency samples of the metrics some SLO reads, on the database's clock; bounded per metric by
  // slo.max_samples_per_metric and by the longest window of the SLOs that read it.
  await knex.raw(`CREATE TABLE monitor_slo_samples (
    id bigserial PRIMARY KEY,
    metric text NOT NULL,
    value_ms double precision NOT NULL,
    recorded_at timestamptz NOT NULL DEFAULT now()
  )`);
  await knex.raw('CREATE INDEX monitor_slo_samples_metric_time ON monitor_slo_samples (metric, recorded_at)');
  await knex.raw('CREATE INDEX monitor_slo_samples_metric_id ON monitor_slo_samples (metric, id)');
  // The last alert per SLO suppression key (an SLO's name, or its name and rule), shared by the
  // replicas so a violation is sent once per suppression window between them; `previous_sent_at` is
  // what a failed send restores.
  await knex.raw(`CREATE TABLE monitor_slo_alerts (
    key text PRIMARY KEY,
    last_sent_at timestamptz NOT NULL,
    previous_sent_at timestamptz
  )`);
  // The last known state of each watched target, by the target's configured name.
  await knex.raw(`CREATE TABLE monitor_target_states (
    name text PRIMARY KEY,
    up boolean,
    last_probe_at timestamptz,
    last_latency_ms double precision,
    consecutive_failures integer NOT NULL DEFAULT 0,
    last_error text,
    last_change_at timestamptz,
    updated_at timestamptz NOT NULL DEFAULT now()
  )`);
  await createJobTable(knex, MONITOR_JOBS_TABLE);
}

/** Drops them. */
export async function down(knex: Knex): Promise<void> {
  for (const table of [
    MONITOR_JOBS_TABLE,
    'monitor_target_states',
    'monitor_slo_alerts',
    'monitor_slo_samples',
    'monitor_slos',
  ])
    await knex.schema.dropTableIfExists(table);
}
