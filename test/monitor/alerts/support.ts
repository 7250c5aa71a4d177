/** Helpers of the alert lifecycle's database tests. */
import type { Knex } from 'knex';

/** Empties the lifecycle's tables (between contract tests: time rules read every open alert). */
export async function truncateAlertTables(knex: Knex): Promise<void> {
  await knex.raw(
    'TRUNCATE monitor_oncall_ack_codes, monitor_oncall_escalations, monitor_alert_timeline, monitor_alerts, monitor_silences, monitor_notification_log',
  );
}

/** Empties the held alerts (../../../services/monitor/alerts/held-database-store.ts) and their tier rows. */
export async function resetHeldAlertTables(knex: Knex): Promise<void> {
  await knex.raw('TRUNCATE monitor_held_alerts');
  await knex.raw('UPDATE monitor_held_alert_tiers SET dropped = 0, last_flushed_at = NULL');
}
