/**
 * Issue 29: each watched target's probe results in one-minute buckets (targets/history.ts), kept 30
 * days, and the time of a target's last error beside its kept state (so the page can say "last error
 * 12 min ago, recovered"). `bucket` is the bucket's start (epoch ms); `last_error_at` epoch ms.
 * Additive.
 */
import type { Knex } from 'knex';

/** Creates the table and the column. */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`CREATE TABLE monitor_target_history (
    target text NOT NULL,
    bucket bigint NOT NULL,
    up integer NOT NULL DEFAULT 0,
    down integer NOT NULL DEFAULT 0,
    latency_sum double precision NOT NULL DEFAULT 0,
    latency_max double precision NOT NULL DEFAULT 0,
    last_error text,
    last_error_at bigint,
    PRIMARY KEY (target, bucket)
  )`);
  await knex.raw('CREATE INDEX monitor_target_history_bucket ON monitor_target_history (bucket)');
  await knex.raw('ALTER TABLE monitor_target_states ADD COLUMN last_error_at timestamptz');
}

/** Drops them: the history starts again empty. */
export async function down(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE monitor_target_states DROP COLUMN IF EXISTS last_error_at');
  await knex.raw('DROP TABLE IF EXISTS monitor_target_history');
}
