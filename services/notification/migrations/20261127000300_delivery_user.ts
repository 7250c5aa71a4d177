/**
 * Delivery records know their user (issue 25): a delivery a `Notify` fan-out submitted carries the
 * user id, so DeleteUser can erase the content and full recipients of that user's records
 * (`DeliveryStore.eraseUser`). Null for deliveries sent by SendEmail / SendSms / SendPush directly.
 */
import type { Knex } from 'knex';

/** Adds the nullable user id and its (partial) index. */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE deliveries ADD COLUMN user_id text NULL');
  await knex.raw('CREATE INDEX deliveries_user_idx ON deliveries (user_id) WHERE user_id IS NOT NULL');
}

/** Drops the column (and its index with it). */
export async function down(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE deliveries DROP COLUMN IF EXISTS user_id');
}
