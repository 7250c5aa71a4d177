/**
 * The alert lifecycle's tables (services/monitor/alerts/database-store.ts): alerts with their state
 * and labels (one open alert per dedup key: a unique partial index), their timeline, silences, and
 * the notification log (a unique row per group key, receiver and step, written before the send).
 * Alert times are milliseconds since the epoch (the monitor's clock); the notification log's lease is
 * the database's clock.
 */
import type { Knex } from 'knex';

/** Creates the tables. */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE monitor_alerts (
      id uuid PRIMARY KEY,
      dedup_key text NOT NULL,
      state text NOT NULL CHECK (state IN ('triggered', 'acknowledged', 'resolved')),
      alert jsonb NOT NULL,
      labels jsonb NOT NULL,
      severity text NOT NULL,
      count integer NOT NULL DEFAULT 1,
      fired_at bigint NOT NULL,
      last_seen_at bigint NOT NULL,
      silenced_by text NOT NULL DEFAULT '',
      inhibited_by text NOT NULL DEFAULT '',
      notified boolean NOT NULL DEFAULT false,
      acknowledged_by text NOT NULL DEFAULT '',
      resolved_by text NOT NULL DEFAULT '',
      resolved_at bigint NOT NULL DEFAULT 0
    )`);
  await knex.raw(
    `CREATE UNIQUE INDEX monitor_alerts_open_key_idx ON monitor_alerts (dedup_key) WHERE state <> 'resolved'`,
  );
  await knex.raw('CREATE INDEX monitor_alerts_fired_idx ON monitor_alerts (fired_at DESC, id DESC)');
  await knex.raw(
    `CREATE INDEX monitor_alerts_open_idx ON monitor_alerts (fired_at DESC, id DESC) WHERE state <> 'resolved'`,
  );
  await knex.raw(`
    CREATE TABLE monitor_alert_timeline (
      seq bigserial PRIMARY KEY,
      alert_id uuid NOT NULL REFERENCES monitor_alerts (id) ON DELETE CASCADE,
      at bigint NOT NULL,
      kind text NOT NULL,
      actor text NOT NULL,
      detail text NOT NULL
    )`);
  await knex.raw('CREATE INDEX monitor_alert_timeline_alert_idx ON monitor_alert_timeline (alert_id, seq)');
  await knex.raw(`
    CREATE TABLE monitor_silences (
      id uuid PRIMARY KEY,
      matchers jsonb NOT NULL,
      starts_at bigint NOT NULL,
      ends_at bigint NOT NULL,
      created_by text NOT NULL,
      comment text NOT NULL,
      recurrence jsonb,
      created_at bigint NOT NULL,
      expired_at bigint NOT NULL DEFAULT 0,
      reminded jsonb NOT NULL DEFAULT '[]'::jsonb
    )`);
  await knex.raw('CREATE INDEX monitor_silences_created_idx ON monitor_silences (created_at DESC, id DESC)');
  await knex.raw(
    'CREATE INDEX monitor_silences_active_idx ON monitor_silences (ends_at) WHERE expired_at = 0',
  );
  await knex.raw(`
    CREATE TABLE monitor_notification_log (
      group_key text NOT NULL,
      receiver text NOT NULL,
      step text NOT NULL,
      state text NOT NULL CHECK (state IN ('sending', 'sent')),
      owner text NOT NULL,
      lease_until timestamptz NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (group_key, receiver, step)
    )`);
  await knex.raw(
    'CREATE INDEX monitor_notification_log_created_idx ON monitor_notification_log (created_at)',
  );
}

/** Drops them. */
export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE IF EXISTS monitor_notification_log');
  await knex.raw('DROP TABLE IF EXISTS monitor_silences');
  await knex.raw('DROP TABLE IF EXISTS monitor_alert_timeline');
  await knex.raw('DROP TABLE IF EXISTS monitor_alerts');
}
