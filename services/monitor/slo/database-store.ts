/**
 * The SLO area's database store (PostgreSQL and PGlite through knex): SLOs registered by RPC in
 * `monitor_slos`, samples in `monitor_slo_samples`. Time comes from the database (`now()`), so
 * replicas whose clocks differ agree on windows; tests pass a Clock instead.
 */
import type { Knex } from 'knex';
import type { Clock } from '../../../shared/runtime/clock';
import { type DeleteBatches, deleteInBatches } from '../../../shared/storage/batched-delete';
import type { SloDefinition } from './slo-area';
import type { BucketRange } from '../../../shared/monitoring/slo/ratio';
import type { RatioSloDefinition } from './ratio-definition';
import {
  hourBucketSpan,
  type SloEventCount,
  type SloEventSums,
  type SloStateStore,
  type StoredSamples,
} from './store';
import { rows } from '../../../shared/storage/database';

const MINUTE_MS = 60_000;
const HOUR_MS = 3_600_000;

/** Options of DatabaseSloStateStore. */
export interface DatabaseSloStateStoreOptions {
  /** `database` (default): the database's `now()`; a Clock: its time (tests). */
  clock?: Clock | 'database';
  /** The purges' batch size and per-pass cap (shared/storage/batched-delete). */
  purgeBatches?: DeleteBatches;
}

/** A suppression key as text PostgreSQL keeps (it holds no NUL; SLO names hold no control character). */
function dbKey(key: string): string {
  return key.split(String.fromCharCode(0)).join('\n');
}

/** SLOs and samples in the monitor's database. */
export class DatabaseSloStateStore implements SloStateStore {
  private readonly clock: Clock | 'database';
  private readonly purgeBatches: DeleteBatches;

  constructor(
    private readonly knex: Knex,
    options: DatabaseSloStateStoreOptions = {},
  ) {
    this.clock = options.clock ?? 'database';
    this.purgeBatches = options.purgeBatches ?? {};
  }

  /** "Now" as SQL: the database's, or the test clock's as a parameter. */
  private now(): Knex.Raw {
    return this.clock === 'database'
      ? this.knex.raw('now()')
      : this.knex.raw('?::timestamptz', [new Date(this.clock.now()).toISOString()]);
  }

  async addSlo(def: SloDefinition): Promise<boolean> {
    const result = await this.knex.raw(
      `INSERT INTO monitor_slos (name, metric, definition) VALUES (?, ?, ?::jsonb)
       ON CONFLICT (name) DO NOTHING RETURNING name`,
      [def.name, def.metric, JSON.stringify(def)],
    );
    return rows(result).length === 1;
  }

  async addRatioSlo(def: RatioSloDefinition): Promise<boolean> {
    // Beside the latency SLOs: one primary key, so a name is taken once whichever kind it is.
    const result = await this.knex.raw(
      `INSERT INTO monitor_slos (name, metric, definition) VALUES (?, '', ?::jsonb)
       ON CONFLICT (name) DO NOTHING RETURNING name`,
      [def.name, JSON.stringify({ ...def, kind: 'ratio' })],
    );
    return rows(result).length === 1;
  }

  async listRatioSlos(): Promise<RatioSloDefinition[]> {
    const result = await this.knex.raw(
      `SELECT definition FROM monitor_slos WHERE definition->>'kind' = 'ratio' ORDER BY name COLLATE "C"`,
    );
    return rows<{ definition: (RatioSloDefinition & { kind?: string }) | string }>(result).map((r) => {
      const { kind: _kind, ...def } = (
        typeof r.definition === 'string' ? JSON.parse(r.definition) : r.definition
      ) as RatioSloDefinition & { kind?: string };
      return def;
    });
  }

  async addSloEvents(slo: string, events: readonly SloEventCount[]): Promise<void> {
    // Summed per bucket first: one statement may not update the same row twice.
    const buckets = new Map<string, { width: number; bucket: number; good: number; total: number }>();
    for (const e of events) {
      for (const [width, ms] of [
        [60, MINUTE_MS],
        [3600, HOUR_MS],
      ] as const) {
        const bucket = Math.floor(e.atMs / ms) * ms;
        const key = `${width}:${bucket}`;
        const b = buckets.get(key);
        if (b) {
          b.good += e.good;
          b.total += e.total;
        } else buckets.set(key, { width, bucket, good: e.good, total: e.total });
      }
    }
    if (buckets.size === 0) return;
    await this.knex.raw(
      `INSERT INTO monitor_slo_events AS e (slo, width, bucket, good, total)
       SELECT ?, b.width, b.bucket, b.good, b.total
         FROM jsonb_to_recordset(?::jsonb) AS b(width integer, bucket bigint, good bigint, total bigint)
       ON CONFLICT (slo, width, bucket) DO UPDATE
         SET good = e.good + EXCLUDED.good, total = e.total + EXCLUDED.total`,
      [slo, JSON.stringify([...buckets.values()])],
    );
  }

  async sloEventSums(ranges: ReadonlyMap<string, readonly BucketRange[]>): Promise<SloEventSums> {
    const list: Array<{ slo: string; key: string; width: number; from_ms: number; to_ms: number }> = [];
    for (const [slo, rs] of ranges)
      for (const r of rs)
        list.push({ slo, key: r.key, width: r.widthSeconds, from_ms: r.fromMs, to_ms: r.toMs });
    const out: SloEventSums = new Map();
    for (const slo of ranges.keys()) out.set(slo, new Map());
    if (list.length === 0) return out;
    // Every SLO's every window in one statement: the primary key (slo, width, bucket) serves each range.
    const result = await this.knex.raw(
      `SELECT q.slo, q.key, COALESCE(SUM(e.good), 0) AS good, COALESCE(SUM(e.total), 0) AS total
         FROM jsonb_to_recordset(?::jsonb) AS q(slo text, key text, width integer, from_ms bigint, to_ms bigint)
         LEFT JOIN monitor_slo_events e
           ON e.slo = q.slo AND e.width = q.width AND e.bucket BETWEEN q.from_ms AND q.to_ms
        GROUP BY q.slo, q.key`,
      [JSON.stringify(list)],
    );
    for (const r of rows<{ slo: string; key: string; good: string | number; total: string | number }>(result))
      out.get(r.slo)?.set(r.key, { good: Number(r.good), total: Number(r.total) });
    return out;
  }

  async sloHourBuckets(slo: string, fromMs: number, toMs: number): Promise<SloEventCount[]> {
    const { firstMs, lastMs } = hourBucketSpan(fromMs, toMs);
    // The primary key (slo, width, bucket) serves the range; at most MAX_HOUR_BUCKETS_READ rows.
    const result = await this.knex.raw(
      `SELECT bucket, good, total FROM monitor_slo_events
        WHERE slo = ? AND width = 3600 AND bucket BETWEEN ? AND ? AND (good <> 0 OR total <> 0)
        ORDER BY bucket`,
      [slo, firstMs, lastMs],
    );
    return rows<{ bucket: string | number; good: string | number; total: string | number }>(result).map(
      (r) => ({
        atMs: Number(r.bucket),
        good: Number(r.good),
        total: Number(r.total),
      }),
    );
  }

  async purgeSloEvents(
    minuteKeepFromMs: number,
    hourKeepFromMs: ReadonlyMap<string, number>,
  ): Promise<number> {
    const minutes = await deleteInBatches(
      this.knex,
      'monitor_slo_events',
      'width = 60 AND bucket < ?',
      [minuteKeepFromMs],
      this.purgeBatches,
    );
    const keep = [...hourKeepFromMs].map(([slo, from_ms]) => ({ slo, from_ms }));
    const hours = await deleteInBatches(
      this.knex,
      'monitor_slo_events e',
      `e.width = 3600 AND EXISTS (
         SELECT 1 FROM jsonb_to_recordset(?::jsonb) AS k(slo text, from_ms bigint)
          WHERE e.slo = k.slo AND e.bucket < k.from_ms)`,
      [JSON.stringify(keep)],
      this.purgeBatches,
    );
    return minutes + hours;
  }

  async listSlos(): Promise<SloDefinition[]> {
    const result = await this.knex.raw(
      `SELECT definition FROM monitor_slos WHERE definition->>'kind' IS DISTINCT FROM 'ratio' ORDER BY name COLLATE "C"`,
    );
    return rows<{ definition: SloDefinition | string }>(result).map((r) =>
      typeof r.definition === 'string' ? (JSON.parse(r.definition) as SloDefinition) : r.definition,
    );
  }

  async addSamples(metric: string, valuesMs: ArrayLike<number>, maxPerMetric: number): Promise<void> {
    if (valuesMs.length === 0) return;
    await this.knex.transaction(async (trx) => {
      // One statement for the batch (at most 10,000 values), in order, so ids follow the values.
      await trx.raw(
        `INSERT INTO monitor_slo_samples (metric, value_ms, recorded_at)
         SELECT ?, v.value::float8, ? FROM jsonb_array_elements_text(?::jsonb) WITH ORDINALITY AS v(value, n)
          ORDER BY v.n`,
        [metric, this.now(), JSON.stringify(Array.from(valuesMs))],
      );
      // The bound per metric: every sample older than the newest `maxPerMetric` goes.
      await trx.raw(
        `DELETE FROM monitor_slo_samples WHERE metric = ? AND id <= (
           SELECT id FROM monitor_slo_samples WHERE metric = ? ORDER BY id DESC OFFSET ? LIMIT 1)`,
        [metric, metric, maxPerMetric],
      );
    });
  }

  async windowSamples(metric: string, windowSeconds: number, limit: number): Promise<StoredSamples> {
    const now = this.now();
    const result = await this.knex.raw(
      `SELECT value_ms, age_ms FROM (
         SELECT id, value_ms, extract(epoch FROM (? - recorded_at)) * 1000 AS age_ms
           FROM monitor_slo_samples
          WHERE metric = ? AND recorded_at >= ? - (? * interval '1 second')
          ORDER BY id DESC LIMIT ?) newest
       ORDER BY id`,
      [now, metric, now, windowSeconds, limit],
    );
    const list = rows<{ value_ms: number | string; age_ms: number | string }>(result);
    return {
      valuesMs: Float64Array.from(list, (r) => Number(r.value_ms)),
      agesMs: Float64Array.from(list, (r) => Math.max(0, Number(r.age_ms))),
    };
  }

  async reserve(key: string, windowMs: number): Promise<boolean> {
    const now = this.now();
    const result = await this.knex.raw(
      `INSERT INTO monitor_slo_alerts AS a (key, last_sent_at) VALUES (?, ?)
       ON CONFLICT (key) DO UPDATE SET previous_sent_at = a.last_sent_at, last_sent_at = EXCLUDED.last_sent_at
        WHERE a.last_sent_at <= EXCLUDED.last_sent_at - (? * interval '1 millisecond')
       RETURNING key`,
      [dbKey(key), now, windowMs],
    );
    return rows(result).length === 1;
  }

  async release(key: string): Promise<void> {
    await this.knex.transaction(async (trx) => {
      await trx.raw('DELETE FROM monitor_slo_alerts WHERE key = ? AND previous_sent_at IS NULL', [
        dbKey(key),
      ]);
      await trx.raw(
        'UPDATE monitor_slo_alerts SET last_sent_at = previous_sent_at, previous_sent_at = NULL WHERE key = ?',
        [dbKey(key)],
      );
    });
  }

  async purgeSamples(windows: ReadonlyMap<string, number>): Promise<number> {
    const list = [...windows].map(([metric, seconds]) => ({ metric, seconds }));
    return deleteInBatches(
      this.knex,
      'monitor_slo_samples s',
      `NOT EXISTS (
         SELECT 1 FROM jsonb_to_recordset(?::jsonb) AS w(metric text, seconds float8)
          WHERE w.metric = s.metric AND s.recorded_at >= ? - (w.seconds * interval '1 second'))`,
      [JSON.stringify(list), this.now()],
      this.purgeBatches,
    );
  }
}
