/** The TargetStateStore contract on memory, PGlite (one in-memory instance) and PostgreSQL. */
import type { Knex } from 'knex';
import {
  DatabaseTargetStateStore,
  MAX_STORED_ERROR_CHARS,
  MemoryTargetStateStore,
  type TargetStateStore,
} from '../../../services/monitor/targets/store';
import type { StoredTargetState } from '../../../services/monitor/targets/target-state';
import { monitorMigrations, MONITOR_MIGRATIONS_TABLE } from '../../../services/monitor/migrations';
import { silentLogger } from '../../../shared/logging/logger';
import { openDatabase } from '../../../shared/storage/database';
import { runMigrations } from '../../../shared/storage/migrations';
import { createTestDatabase, migratedPglite } from '../../support/database';

const DOWN: StoredTargetState = {
  up: false,
  lastProbeAt: new Date('2026-11-01T12:00:05.123Z'),
  lastLatencyMs: 12.5,
  consecutiveFailures: 3,
  lastError: 'HTTP 503 — 服务不可用 خدمة 🔥',
  lastChangeAt: new Date('2026-11-01T12:00:00.000Z'),
};

function describeContract(
  label: string,
  open: () => Promise<{ store: TargetStateStore; close?(): Promise<void> }>,
) {
  describe(`${label}: the TargetStateStore contract`, () => {
    let h: { store: TargetStateStore; close?(): Promise<void> };
    beforeAll(async () => {
      h = await open();
    }, 120_000);
    afterAll(async () => {
      await h?.close?.();
    });

    it('knows nothing of a target it never kept', async () => {
      expect(await h.store.load('never')).toBeNull();
    });

    it('keeps a target state as given (CJK, RTL and emoji in the error) and replaces it on the next save', async () => {
      await h.store.save('search', DOWN);
      expect(await h.store.load('search')).toEqual(DOWN);
      const up: StoredTargetState = {
        ...DOWN,
        up: true,
        consecutiveFailures: 0,
        lastChangeAt: new Date('2026-11-01T12:01:00Z'),
      };
      await h.store.save('search', up);
      expect(await h.store.load('search')).toEqual(up);
      expect(await h.store.load('other')).toBeNull();
    });

    it('keeps an unknown state (nothing probed yet) with its nulls', async () => {
      const unknown: StoredTargetState = {
        up: null,
        lastProbeAt: null,
        lastLatencyMs: null,
        consecutiveFailures: 1,
        lastError: 'timeout',
        lastChangeAt: null,
      };
      await h.store.save('fresh', unknown);
      expect(await h.store.load('fresh')).toEqual(unknown);
    });

    it('cuts a longer error at the bound on a code point, never inside a surrogate pair', async () => {
      const long = '😀'.repeat(MAX_STORED_ERROR_CHARS + 10);
      await h.store.save('long', { ...DOWN, lastError: long });
      const kept = (await h.store.load('long'))!.lastError!;
      expect([...kept]).toHaveLength(MAX_STORED_ERROR_CHARS);
      expect(kept.endsWith('…')).toBe(true);
      // No lone surrogate: every code point of the kept text is whole.
      expect([...kept.slice(0, -1)].every((c) => c === '😀')).toBe(true);
      const exact = '😀'.repeat(MAX_STORED_ERROR_CHARS);
      await h.store.save('exact', { ...DOWN, lastError: exact });
      expect((await h.store.load('exact'))!.lastError).toBe(exact);
    });
  });
}

describeContract('memory', async () => ({ store: new MemoryTargetStateStore() }));

describeContract('PostgreSQL', async () => {
  const db = await createTestDatabase('mon_targets');
  const knex: Knex = await openDatabase({ url: db.url, data_dir: '', pool_max: 2 }, silentLogger());
  await runMigrations(knex, monitorMigrations, { tableName: MONITOR_MIGRATIONS_TABLE });
  return {
    store: new DatabaseTargetStateStore(knex),
    close: async () => {
      await knex.destroy();
      await db.drop();
    },
  };
});

describeContract('PGlite', async () => {
  const knex: Knex = await migratedPglite('monitor');
  return { store: new DatabaseTargetStateStore(knex), close: () => knex.destroy() };
});
