/**
 * The inbound SMS log (channels/sms/inbound-log.ts): the messages people send to our numbers, for
 * WatchInboundSms. `inbound_sms_state` is one row: the last id given (appends take its row lock, so
 * ids are committed in order) and the horizon (the highest id the cap or the retention removed).
 * `inbound_sms_jobs` is the retention purge's lease table (shared/storage/periodic-job.ts). Additive.
 */
import type { Knex } from 'knex';
import { createJobTable } from '../../../shared/storage/periodic-job';

/** The lease table of the inbound SMS retention purge. */
export const INBOUND_SMS_JOBS_TABLE = 'inbound_sms_jobs';

/** Creates the tables. */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE inbound_sms (
      id bigint PRIMARY KEY,
      backend text NOT NULL,
      provider_id text NOT NULL,
      from_number text NOT NULL,
      to_number text NOT NULL,
      body text NOT NULL,
      received_at timestamptz NOT NULL DEFAULT now(),
      UNIQUE (backend, provider_id)
    )`);
  // DeleteUser erases by sender; the retention finds the newest expired message by time.
  await knex.raw('CREATE INDEX inbound_sms_from_idx ON inbound_sms (from_number)');
  await knex.raw('CREATE INDEX inbound_sms_received_at_idx ON inbound_sms (received_at)');
  await knex.raw(`
    CREATE TABLE inbound_sms_state (
      id smallint PRIMARY KEY CHECK (id = 1),
      last_id bigint NOT NULL,
      purged_through bigint NOT NULL
    )`);
  await knex.raw('INSERT INTO inbound_sms_state (id, last_id, purged_through) VALUES (1, 0, 0)');
  await createJobTable(knex, INBOUND_SMS_JOBS_TABLE);
}

/** Drops the tables: the kept messages are gone. */
export async function down(knex: Knex): Promise<void> {
  await knex.raw(`DROP TABLE IF EXISTS ${INBOUND_SMS_JOBS_TABLE}`);
  await knex.raw('DROP TABLE IF EXISTS inbound_sms_state');
  await knex.raw('DROP TABLE IF EXISTS inbound_sms');
}
