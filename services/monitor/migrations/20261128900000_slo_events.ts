/**
 * Issue 31: the events of ratio SLOs, in the buckets the library's EventCounts keeps in memory
 * (shared/monitoring/slo/ratio.ts): one-minute buckets for windows up to 6 hours, one-hour buckets
 * beyond. `bucket` is the bucket's start (epoch ms); a batch adds to its buckets (upsert), so
 * replicas recording at once sum, and an evaluation reads every SLO's window sums in one query.
 * Ratio SLO definitions live in `monitor_slos` beside the latency ones (one name space), marked
 * `definition->>'kind' = 'ratio'`. Additive.
 */
import type { Knex } from 'knex';

/** Creates the table. */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`CREATE TABLE monitor_slo_events (
    slo text NOT NULL,
    width integer NOT NULL,
    bucket bigint NOT NULL,
    good bigint NOT NULL DEFAULT 0,
    total bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (slo, width, bucket)
  )`);
}

/** Drops the table: ratio SLOs start again with no events. */
export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE IF EXISTS monitor_slo_events');
}
