/**
 * On-call escalation (services/monitor/oncall/escalation-database-store.ts): one row per escalated
 * alert (policy, round, step, the current step's targets, the pages so far) and the acknowledgment
 * codes (one per page, unique among live codes: an expired holder of a drawn code is replaced). Times
 * are milliseconds since the epoch (the engine's clock); both go with their alert.
 */
import type { Knex } from 'knex';

/** Creates the tables. */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE monitor_oncall_escalations (
      alert_id uuid PRIMARY KEY REFERENCES monitor_alerts (id) ON DELETE CASCADE,
      policy text NOT NULL,
      round integer NOT NULL,
      step integer NOT NULL,
      step_started_at bigint NOT NULL,
      targets jsonb NOT NULL,
      status text NOT NULL CHECK (status IN ('active', 'stopped', 'exhausted')),
      reason text NOT NULL DEFAULT '',
      pages jsonb NOT NULL DEFAULT '[]'::jsonb,
      started_at bigint NOT NULL,
      updated_at bigint NOT NULL
    )`);
  await knex.raw(
    `CREATE INDEX monitor_oncall_escalations_active_idx ON monitor_oncall_escalations (started_at) WHERE status = 'active'`,
  );
  await knex.raw(`
    CREATE TABLE monitor_oncall_ack_codes (
      code text PRIMARY KEY,
      page_key text NOT NULL UNIQUE,
      alert_id uuid NOT NULL REFERENCES monitor_alerts (id) ON DELETE CASCADE,
      user_id text NOT NULL,
      phones jsonb NOT NULL,
      expires_at bigint NOT NULL
    )`);
  await knex.raw('CREATE INDEX monitor_oncall_ack_codes_expiry_idx ON monitor_oncall_ack_codes (expires_at)');
}

/** Drops them. */
export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE IF EXISTS monitor_oncall_ack_codes');
  await knex.raw('DROP TABLE IF EXISTS monitor_oncall_escalations');
}
