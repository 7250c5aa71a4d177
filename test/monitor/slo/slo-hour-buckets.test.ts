/**
 * sloHourBuckets (issue 29, the budget burn-down) on memory, PGlite and PostgreSQL: the hour buckets
 * of one SLO in a range, oldest first, empty hours left out, another SLO's never, and the read bounded
 * at MAX_HOUR_BUCKETS_READ hours (at and past the bound).
 */
import type { Knex } from 'knex';
import {
  MAX_HOUR_BUCKETS_READ,
  MemorySloStateStore,
  type SloStateStore,
} from '../../../services/monitor/slo/store';
import { DatabaseSloStateStore } from '../../../services/monitor/slo/database-store';
import { monitorMigrations, MONITOR_MIGRATIONS_TABLE } from '../../../services/monitor/migrations';
import { silentLogger } from '../../../shared/logging/logger';
import { openDatabase } from '../../../shared/storage/database';
import { runMigrations } from '../../../shared/storage/migrations';
import { createTestDatabase, migratedPglite } from '../../support/database';
import { ManualClock } from '../../support/manual-clock';

const HOUR = 3_600_000;
const T0 = Date.parse('2026-11-20T00:00:00Z');
let unique = 0;
const sloName = (label: string) =>
  `budget ${label} 📉 预算 ميزانية ${++unique}.${Math.random().toString(36).slice(2, 7)}`;

function describeHourBuckets(
  label: string,
  open: (clock: ManualClock) => Promise<{ store: SloStateStore; close?: () => Promise<void> }>,
) {
  describe(`${label}: sloHourBuckets`, () => {
    const clock = new ManualClock(new Date(T0 + 100 * 24 * HOUR));
    let store: SloStateStore;
    let close: (() => Promise<void>) | undefined;
    beforeAll(async () => {
      ({ store, close } = await open(clock));
    }, 120_000);
    afterAll(async () => {
      await close?.();
    });

    it('returns the hours of the range with events, oldest first, summed per hour, none of another SLO', async () => {
      const slo = sloName('a');
      const other = sloName('b');
      await store.addSloEvents(slo, [
        { atMs: T0 + 5 * HOUR + 10 * 60_000, good: 9, total: 10 },
        { atMs: T0 + 5 * HOUR + 50 * 60_000, good: 1, total: 3 },
        { atMs: T0 + 2 * HOUR, good: 4, total: 4 },
        { atMs: T0 + 9 * HOUR + 1, good: 0, total: 2 },
        // Outside the range read below.
        { atMs: T0 + 12 * HOUR, good: 7, total: 7 },
      ]);
      await store.addSloEvents(other, [{ atMs: T0 + 3 * HOUR, good: 1, total: 1 }]);
      // From inside hour 1 (counted whole) to inside hour 9.
      expect(await store.sloHourBuckets(slo, T0 + HOUR + 1, T0 + 9 * HOUR + 30 * 60_000)).toEqual([
        { atMs: T0 + 2 * HOUR, good: 4, total: 4 },
        { atMs: T0 + 5 * HOUR, good: 10, total: 13 },
        { atMs: T0 + 9 * HOUR, good: 0, total: 2 },
      ]);
      expect(await store.sloHourBuckets(sloName('none'), T0, T0 + 24 * HOUR)).toEqual([]);
    });

    it(`reads at most ${MAX_HOUR_BUCKETS_READ} hours: the newest, at the bound and past it`, async () => {
      const slo = sloName('bound');
      const last = T0 + 95 * 24 * HOUR;
      const first = last - (MAX_HOUR_BUCKETS_READ - 1) * HOUR;
      await store.addSloEvents(slo, [
        { atMs: first - HOUR, good: 1, total: 1 },
        { atMs: first, good: 2, total: 2 },
        { atMs: last, good: 3, total: 3 },
      ]);
      // Exactly the bound: both ends in.
      expect(await store.sloHourBuckets(slo, first, last)).toEqual([
        { atMs: first, good: 2, total: 2 },
        { atMs: last, good: 3, total: 3 },
      ]);
      // One hour past it: the oldest hour is not read.
      expect(await store.sloHourBuckets(slo, first - HOUR, last)).toEqual([
        { atMs: first, good: 2, total: 2 },
        { atMs: last, good: 3, total: 3 },
      ]);
    });
  });
}

describeHourBuckets('memory', async (clock) => ({ store: new MemorySloStateStore(clock) }));

describeHourBuckets('PostgreSQL', async (clock) => {
  const db = await createTestDatabase('mon_slo_hours');
  const knex: Knex = await openDatabase({ url: db.url, data_dir: '', pool_max: 2 }, silentLogger());
  await runMigrations(knex, monitorMigrations, { tableName: MONITOR_MIGRATIONS_TABLE });
  return {
    store: new DatabaseSloStateStore(knex, { clock }),
    close: async () => {
      await knex.destroy();
      await db.drop();
    },
  };
});

describeHourBuckets('PGlite', async (clock) => {
  const knex: Knex = await migratedPglite('monitor');
  return { store: new DatabaseSloStateStore(knex, { clock }), close: () => knex.destroy() };
});
