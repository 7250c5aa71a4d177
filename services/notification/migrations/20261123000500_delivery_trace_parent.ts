/**
 * `trace_parent`: the W3C traceparent of the call that submitted a delivery, so the worker's attempt
 * span continues the caller's trace after the queue (and in another replica). Additive and nullable:
 * existing rows and deliveries submitted outside a trace have none.
 */
import type { Knex } from 'knex';

/** Adds the column. */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE deliveries ADD COLUMN trace_parent text NULL');
}

/** Drops the column. */
export async function down(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE deliveries DROP COLUMN IF EXISTS trace_parent');
}
