/**
 * The outbox of alerts sent at once (alerts/held-database-store.ts, the `OUTBOX` queue of the held
 * alerts' table): its queue row in `monitor_held_alert_tiers`, so claims lock it as they lock the
 * tiers'. The alerts themselves go in `monitor_held_alerts` (no new table). Additive.
 */
import type { Knex } from 'knex';

/** Adds the outbox's queue row. */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`INSERT INTO monitor_held_alert_tiers (tier) VALUES ('OUTBOX') ON CONFLICT DO NOTHING`);
}

/** Removes it with its alerts: alerts on their way at that moment are no longer kept (as before). */
export async function down(knex: Knex): Promise<void> {
  await knex.raw(`DELETE FROM monitor_held_alerts WHERE tier = 'OUTBOX'`);
  await knex.raw(`DELETE FROM monitor_held_alert_tiers WHERE tier = 'OUTBOX'`);
}
