/**
 * On call (issue 28, O3): the cursor of the monitor's consumer of the notification service's inbound
 * SMS stream (oncall/inbound-sms-cursor.ts): the id of the last message handled, shared by the
 * replicas, so a restart neither loses nor repeats an `ACK <code>` reply. Additive.
 */
import type { Knex } from 'knex';

/** Creates the table. */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`CREATE TABLE oncall_inbound_sms_cursor (
    consumer text PRIMARY KEY,
    after_id bigint NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now()
  )`);
}

/** Drops the table: the next start reads the stream from its live end. */
export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE IF EXISTS oncall_inbound_sms_cursor');
}
