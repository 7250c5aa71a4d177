/** The TargetHistoryStore contract on memory, PGlite and PostgreSQL, and readHistory's points. */
import type { Knex } from 'knex';
import {
  DatabaseTargetHistoryStore,
  HISTORY_RETENTION_MS,
  MAX_HISTORY_ERROR_CHARS,
  MAX_HISTORY_POINTS,
  MemoryTargetHistoryStore,
  readHistory,
  type TargetHistoryStore,
} from '../../../services/monitor/targets/history';
import { monitorMigrations, MONITOR_MIGRATIONS_TABLE } from '../../../services/monitor/migrations';
import { silentLogger } from '../../../shared/logging/logger';
import { openDatabase } from '../../../shared/storage/database';
import { runMigrations } from '../../../shared/storage/migrations';
import { createTestDatabase, migratedPglite } from '../../support/database';

const NOW = Date.parse('2026-11-29T12:07:30Z');
const MIN = 60_000;
const NAME = 'search 🔍 搜索 بحث';

function describeContract(
  label: string,
  open: () => Promise<{ store: TargetHistoryStore; close?(): Promise<void> }>,
) {
  describe(`${label}: the TargetHistoryStore contract`, () => {
    let h: { store: TargetHistoryStore; close?(): Promise<void> };
    beforeAll(async () => {
      h = await open();
    }, 120_000);
    afterAll(async () => {
      await h?.close?.();
    });

    it('adds probes of one minute into one bucket (counts, latency sum and max, the newest error)', async () => {
      const s = h.store;
      const m = Math.floor(NOW / MIN) * MIN;
      await s.record(NAME, { atMs: m + 1000, ok: true, latencyMs: 10 });
      await s.record(NAME, { atMs: m + 3000, ok: false, latencyMs: 30, error: 'HTTP 503 — 服务 🔥' });
      await s.record(NAME, { atMs: m + 2000, ok: false, latencyMs: 5, error: 'older' });
      await s.record(NAME, { atMs: m + 4000, ok: true, latencyMs: 20 });
      await s.record('other', { atMs: m, ok: false, latencyMs: 1, error: 'x' });
      const [b, ...rest] = await s.read(NAME, m, MIN, 1);
      expect(rest).toEqual([]);
      expect(b).toEqual({
        startMs: m,
        up: 2,
        down: 2,
        latencySumMs: 65,
        latencyMaxMs: 30,
        lastError: 'HTTP 503 — 服务 🔥',
        lastErrorAtMs: m + 3000,
      });
    });

    it('aggregates minutes into steps, absent steps left out, never more than the bound', async () => {
      const s = h.store;
      const from = Date.parse('2026-11-20T00:00:00Z');
      for (let i = 0; i < 30; i++)
        await s.record('agg', { atMs: from + i * MIN, ok: i % 3 !== 0, latencyMs: i });
      const points = await s.read('agg', from, 10 * MIN, 5);
      expect(points.map((p) => [p.startMs - from, p.up, p.down])).toEqual([
        [0, 6, 4],
        [10 * MIN, 7, 3],
        [20 * MIN, 7, 3],
      ]);
      expect(points[2]!.latencyMaxMs).toBe(29);
      expect(points[2]!.lastError).toBe('failed');
      // Outside the asked span: not read.
      expect(await s.read('agg', from + 30 * MIN, 10 * MIN, MAX_HISTORY_POINTS)).toEqual([]);
      await expect(s.read('agg', from, MIN, MAX_HISTORY_POINTS + 1)).rejects.toThrow(RangeError);
      expect(await s.read('agg', from, MIN, MAX_HISTORY_POINTS)).toHaveLength(30);
    });

    it('cuts a long error on a code point', async () => {
      await h.store.record('long', {
        atMs: NOW,
        ok: false,
        latencyMs: 1,
        error: '😀'.repeat(MAX_HISTORY_ERROR_CHARS + 5),
      });
      const [b] = await h.store.read('long', Math.floor(NOW / MIN) * MIN, MIN, 1);
      expect([...b!.lastError!]).toHaveLength(MAX_HISTORY_ERROR_CHARS);
      expect(b!.lastError!.endsWith('…')).toBe(true);
    });

    it('purges the buckets before the retention', async () => {
      const from = Date.parse('2026-10-01T00:00:00Z');
      await h.store.record('old', { atMs: from, ok: true, latencyMs: 1 });
      await h.store.record('old', { atMs: from + MIN, ok: true, latencyMs: 1 });
      expect(await h.store.purge(from + MIN)).toBeGreaterThanOrEqual(1);
      const left = await h.store.read('old', from, MIN, 2);
      expect(left.map((p) => p.startMs)).toEqual([from + MIN]);
    });
  });
}

describeContract('memory', async () => ({ store: new MemoryTargetHistoryStore() }));

describeContract('PGlite', async () => {
  const knex: Knex = await migratedPglite('monitor');
  return { store: new DatabaseTargetHistoryStore(knex), close: () => knex.destroy() };
});

describeContract('PostgreSQL', async () => {
  const db = await createTestDatabase('mon_history');
  const knex: Knex = await openDatabase({ url: db.url, data_dir: '', pool_max: 2 }, silentLogger());
  await runMigrations(knex, monitorMigrations, { tableName: MONITOR_MIGRATIONS_TABLE });
  return {
    store: new DatabaseTargetHistoryStore(knex),
    close: async () => {
      await knex.destroy();
      await db.drop();
    },
  };
});

describe('readHistory', () => {
  it('answers 96 points of 15 minutes for 24h, the last holding now; ratio null without probes', async () => {
    const store = new MemoryTargetHistoryStore();
    await store.record('t', { atMs: NOW, ok: true, latencyMs: 10 });
    await store.record('t', { atMs: NOW - 1000, ok: false, latencyMs: 30, error: 'timeout' });
    await store.record('t', { atMs: NOW - 24 * 3_600_000, ok: true, latencyMs: 1 }); // one step too old
    const h = await readHistory(store, 't', '24h', NOW);
    expect(h.points).toHaveLength(96);
    expect(h.step_seconds).toBe(900);
    const last = h.points[95]!;
    expect(last.start).toBe('2026-11-29T12:00:00.000Z');
    expect(last).toMatchObject({
      probes: 2,
      up_ratio: 0.5,
      latency_avg_ms: 20,
      latency_max_ms: 30,
      last_error: 'timeout',
    });
    expect(h.points.slice(0, 95).every((p) => p.up_ratio === null && p.probes === 0)).toBe(true);
  });

  it('answers 90 points of 8 hours for 30d', async () => {
    const store = new MemoryTargetHistoryStore();
    await store.record('t', { atMs: NOW - HISTORY_RETENTION_MS + 8 * 3_600_000, ok: true, latencyMs: 1 });
    const h = await readHistory(store, 't', '30d', NOW);
    expect(h.points).toHaveLength(90);
    expect(h.step_seconds).toBe(8 * 3600);
    expect(h.points.filter((p) => p.probes > 0)).toHaveLength(1);
  });
});
