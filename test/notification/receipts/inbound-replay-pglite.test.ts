/**
 * The database inbound replay store on the embedded default (PGlite, PostgreSQL 18, one connection):
 * the same SQL as on PostgreSQL 15 (the migration, ON CONFLICT with a retention condition,
 * make_interval, the bounded prune).
 */
import type { Knex } from 'knex';
import { DatabaseInboundReplayStore } from '../../../services/notification/delivery/inbound-replay-database-store';
import { requireVmModules } from '../delivery/support';
import { migratedPglite } from '../../support/database';

let knex: Knex;

beforeAll(async () => {
  requireVmModules();
  knex = await migratedPglite('notification');
}, 60_000);

afterAll(async () => {
  await knex?.destroy();
});

it('on PGlite, an id is new once, a forgotten id is new again, and one past the retention is taken over and pruned', async () => {
  const store = new DatabaseInboundReplayStore(knex, { retentionHours: 24 });
  expect(await store.remember('twilio', 'inbound:SM1')).toBe(true);
  expect(await store.remember('twilio', 'inbound:SM1')).toBe(false);
  await store.forget('twilio', 'inbound:SM1');
  expect(await store.remember('twilio', 'inbound:SM1')).toBe(true);
  await store.settled();

  await knex.raw(`UPDATE inbound_receipts SET seen_at = now() - interval '25 hours'`);
  expect(await store.remember('twilio', 'inbound:SM1')).toBe(true);
  expect(await store.remember('twilio', 'inbound:SM1')).toBe(false);
  await knex.raw(
    `INSERT INTO inbound_receipts (backend, receipt_id, seen_at)
     SELECT 'twilio', 'old:' || g, now() - interval '48 hours' FROM generate_series(1, 1500) g`,
  );
  expect(await store.prune()).toBe(1500);
  const left = (await knex.raw('SELECT receipt_id FROM inbound_receipts')) as {
    rows: { receipt_id: string }[];
  };
  expect(left.rows.map((r) => r.receipt_id)).toEqual(['inbound:SM1']);
});
