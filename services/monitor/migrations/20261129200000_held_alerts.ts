/**
 * The tier-aware dispatcher's held alerts (alerts/held-database-store.ts): P1 alerts held outside
 * business hours and P2 alerts waiting for the digest, kept until a batch is sent, so a crash loses
 * none. `monitor_held_alerts` has one row per alert (`seq` orders them; `owner` and `lease_until`,
 * on the database's clock, are a claim). `monitor_held_alert_tiers` has one row per tier: the count
 * of alerts dropped at the bound since the last batch, and when the last digest went out (one digest
 * per interval between replicas). Additive.
 */
import type { Knex } from 'knex';

/** Creates the tables and the two tier rows. */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`CREATE TABLE monitor_held_alerts (
    seq bigserial PRIMARY KEY,
    tier text NOT NULL,
    record jsonb NOT NULL,
    held_at timestamptz NOT NULL DEFAULT now(),
    owner text NOT NULL DEFAULT '',
    lease_until timestamptz
  )`);
  await knex.raw('CREATE INDEX monitor_held_alerts_tier_seq ON monitor_held_alerts (tier, seq)');
  await knex.raw(`CREATE TABLE monitor_held_alert_tiers (
    tier text PRIMARY KEY,
    dropped integer NOT NULL DEFAULT 0,
    last_flushed_at timestamptz
  )`);
  await knex.raw(`INSERT INTO monitor_held_alert_tiers (tier) VALUES ('P1_BUSINESS_HOURS'), ('P2_DIGEST')`);
}

/** Drops them: alerts held at that moment are lost (as they were before this migration). */
export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE IF EXISTS monitor_held_alert_tiers');
  await knex.raw('DROP TABLE IF EXISTS monitor_held_alerts');
}
