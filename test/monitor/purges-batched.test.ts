/**
 * The monitor's purges delete in batches (shared/storage/batched-delete): a backlog of several
 * batches goes fully, a statement per batch, in every table they purge (target history, resolved
 * alerts with their timelines and escalations, ended silences, the notification log, ack codes, SLO
 * events and samples). Before, each was one DELETE of the whole backlog, which past the statement
 * timeout was rolled back on every pass and never caught up. On PGlite and PostgreSQL.
 */
import type { Knex } from 'knex';
import { DatabaseAlertStore } from '../../services/monitor/alerts/database-store';
import { MONITOR_MIGRATIONS_TABLE, monitorMigrations } from '../../services/monitor/migrations';
import { DatabaseEscalationStore } from '../../services/monitor/oncall/escalation-database-store';
import { DatabaseSloStateStore } from '../../services/monitor/slo/database-store';
import { DatabaseTargetHistoryStore } from '../../services/monitor/targets/history';
import { runMigrations } from '../../shared/storage/migrations';
import { type TestEngine, testEngines } from '../support/database';

const engines = testEngines('mon_purges');

const BATCHES = { batchSize: 4 };
/** Old rows of each table: 4 + 4 + 4 + 2, several batches. */
const BACKLOG = 14;

describe.each(engines)('monitor purges on %s', (_name, open) => {
  let engine: TestEngine;
  let knex: Knex;
  /** DELETE statements run, by the table they name. */
  const deletes = new Map<string, number>();

  beforeAll(async () => {
    engine = await open();
    knex = engine.knex;
    await runMigrations(knex, monitorMigrations, { tableName: MONITOR_MIGRATIONS_TABLE });
    knex.on('query', (q: { sql: string }) => {
      const table = /^DELETE FROM (\w+)/i.exec(q.sql)?.[1];
      if (table) deletes.set(table, (deletes.get(table) ?? 0) + 1);
    });
  });
  afterAll(() => engine?.close());
  beforeEach(() => deletes.clear());

  const count = async (sql: string): Promise<number> =>
    ((await knex.raw(`SELECT count(*)::int AS n FROM ${sql}`)) as { rows: { n: number }[] }).rows[0]!.n;

  it('target history: every bucket before the retention goes, batch by batch', async () => {
    await knex.raw(
      `INSERT INTO monitor_target_history (target, bucket, up)
       SELECT 'api', n, 1 FROM generate_series(0, ? - 1) AS n
       UNION ALL SELECT 'api', 1000 + n, 1 FROM generate_series(0, 2) AS n`,
      [BACKLOG],
    );
    expect(await new DatabaseTargetHistoryStore(knex, BATCHES).purge(1000)).toBe(BACKLOG);
    expect(deletes.get('monitor_target_history')).toBe(4);
    expect(await count('monitor_target_history')).toBe(3);
  });

  it('alerts: resolved alerts (with timelines and escalations), ended silences and old log rows go in batches', async () => {
    const alertRows = `SELECT md5('alert ' || n)::uuid AS id, 'key ' || n AS dedup_key, ?::text AS state,
         '{}'::jsonb AS alert, '{}'::jsonb AS labels, 'critical' AS severity, 1 AS fired_at,
         1 AS last_seen_at, ?::bigint AS resolved_at
       FROM generate_series(?::int, ?::int) AS n`;
    const insertAlerts = (state: string, resolvedAt: number, from: number, to: number) =>
      knex.raw(
        `INSERT INTO monitor_alerts (id, dedup_key, state, alert, labels, severity, fired_at, last_seen_at, resolved_at)
         ${alertRows}`,
        [state, resolvedAt, from, to],
      );
    await insertAlerts('resolved', 10, 0, BACKLOG - 1); // purged
    await insertAlerts('resolved', 5000, 100, 101); // resolved after the horizon: kept
    await insertAlerts('triggered', 0, 200, 200); // open: kept
    await knex.raw(
      `INSERT INTO monitor_alert_timeline (alert_id, at, kind, actor, detail)
       SELECT id, 1, 'triggered', 'monitor', '警報 🚨 تنبيه' FROM monitor_alerts`,
    );
    await knex.raw(
      `INSERT INTO monitor_oncall_escalations
         (alert_id, policy, round, step, step_started_at, targets, status, started_at, updated_at)
       SELECT id, 'primary', 0, 0, 1, '[]'::jsonb, 'stopped', 1, 1 FROM monitor_alerts`,
    );
    await knex.raw(
      `INSERT INTO monitor_silences (id, matchers, starts_at, ends_at, created_by, comment, created_at)
       SELECT md5('silence ' || n)::uuid, '[]'::jsonb, 0, CASE WHEN n < 9 THEN 10 ELSE 5000 END,
              'ops', 'メンテ 🛠', 0
       FROM generate_series(0, 10) AS n`,
    );
    await knex.raw(
      `INSERT INTO monitor_notification_log (group_key, receiver, step, state, owner, lease_until, created_at)
       SELECT 'g' || n, 'pager', 'firing', 'sent', 'r1', now(),
              CASE WHEN n < 5 THEN to_timestamp(0) ELSE now() END
       FROM generate_series(0, 6) AS n`,
    );

    // 14 alerts + 9 silences + 5 log rows, before the horizon (1 s after the epoch).
    expect(await new DatabaseAlertStore(knex, BATCHES).purge(1000)).toBe(BACKLOG + 9 + 5);
    expect(deletes.get('monitor_alerts')).toBe(4);
    expect(deletes.get('monitor_silences')).toBe(3);
    expect(deletes.get('monitor_notification_log')).toBe(2);
    expect(await count('monitor_alerts')).toBe(3);
    // What hangs off a purged alert went with it; the kept alerts keep theirs.
    expect(await count('monitor_alert_timeline')).toBe(3);
    expect(await count('monitor_oncall_escalations')).toBe(3);
    expect(await count('monitor_silences')).toBe(2);
    expect(await count('monitor_notification_log')).toBe(2);
  });

  it('ack codes: every expired code goes, batch by batch', async () => {
    await knex.raw(
      `INSERT INTO monitor_oncall_ack_codes (code, page_key, alert_id, user_id, phones, expires_at)
       SELECT 'c' || n, 'page ' || n, (SELECT id FROM monitor_alerts LIMIT 1), 'u', '[]'::jsonb,
              CASE WHEN n < ? THEN 10 ELSE 5000 END
       FROM generate_series(0, ? + 1) AS n`,
      [BACKLOG, BACKLOG],
    );
    expect(await new DatabaseEscalationStore(knex, BATCHES).purgeCodes(1000)).toBe(BACKLOG);
    expect(deletes.get('monitor_oncall_ack_codes')).toBe(4);
    expect(await count('monitor_oncall_ack_codes')).toBe(2);
  });

  it('SLO events and samples: what is past the windows goes, batch by batch', async () => {
    await knex.raw(
      `INSERT INTO monitor_slo_events (slo, width, bucket, good, total)
       SELECT 'checkout', 60, n * 60000, 1, 1 FROM generate_series(0, ? - 1) AS n
       UNION ALL SELECT 'checkout', 60, 10000000 + n, 1, 1 FROM generate_series(0, 1) AS n
       UNION ALL SELECT 'checkout', 3600, n * 3600000, 1, 1 FROM generate_series(0, 8) AS n
       UNION ALL SELECT 'checkout', 3600, 100000000, 1, 1`,
      [BACKLOG],
    );
    const store = new DatabaseSloStateStore(knex, { purgeBatches: BATCHES });
    // 14 minute buckets (4 statements) and 9 hour buckets (3 statements).
    expect(await store.purgeSloEvents(10000000, new Map([['checkout', 100000000]]))).toBe(BACKLOG + 9);
    expect(deletes.get('monitor_slo_events')).toBe(7);
    expect(await count('monitor_slo_events')).toBe(3);

    await knex.raw(
      `INSERT INTO monitor_slo_samples (metric, value_ms, recorded_at)
       SELECT 'latency', n, now() - interval '2 hours' FROM generate_series(1, ?) AS n
       UNION ALL SELECT 'latency', 1, now()`,
      [BACKLOG],
    );
    expect(await store.purgeSamples(new Map([['latency', 3600]]))).toBe(BACKLOG);
    expect(deletes.get('monitor_slo_samples')).toBe(4);
    expect(await count('monitor_slo_samples')).toBe(1);
  });
});
