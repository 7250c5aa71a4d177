/**
 * The alert lifecycle on real PostgreSQL: the contract, then what only several replicas on one
 * database show: two stores (two knex pools) racing the same group notification, the same dedup key
 * and the same claim, and a sender that crashed between its notification-log row and the send.
 */
import type { Knex } from 'knex';
import { AlertHub, type AlertRouter } from '../../../services/monitor/alerts/alert-hub';
import { DatabaseAlertStore } from '../../../services/monitor/alerts/database-store';
import { MONITOR_MIGRATIONS_TABLE, monitorMigrations } from '../../../services/monitor/migrations';
import type { AlertRecord } from '../../../shared/monitoring/alerts/channels';
import { runMigrations } from '../../../shared/storage/migrations';
import { type PooledTestDatabase, pooledTestDatabase } from '../../support/database';
import { ManualClock } from '../../support/manual-clock';
import { describeLifecycleContract } from './lifecycle-contract';
import { truncateAlertTables } from './support';

let db: PooledTestDatabase;
let a: Knex;
let b: Knex;

beforeAll(async () => {
  db = await pooledTestDatabase('alertspg', 4);
  a = await db.pool();
  b = await db.pool();
  await runMigrations(a, monitorMigrations, { tableName: MONITOR_MIGRATIONS_TABLE });
});

afterAll(async () => {
  await db?.close();
});

describeLifecycleContract('PostgreSQL', async () => ({
  store: () => new DatabaseAlertStore(a),
  reset: () => truncateAlertTables(a),
  close: async () => undefined,
}));

class RecordingRouter implements AlertRouter {
  readonly records: AlertRecord[] = [];
  async dispatch(record: AlertRecord): Promise<void> {
    this.records.push(record);
  }
  async shutdown(): Promise<void> {}
}

describe('two monitors on one PostgreSQL', () => {
  beforeEach(async () => {
    await truncateAlertTables(a);
  });

  function replica(knex: Knex, clock: ManualClock, name: string) {
    const router = new RecordingRouter();
    const hub = new AlertHub({
      router,
      recentSize: 10,
      maxWatchers: 1,
      watchBufferSize: 16,
      defaultSource: 'monitor',
      clock,
      lifecycle: {
        store: new DatabaseAlertStore(knex),
        owner: name,
        grouping: {
          groupBy: ['cluster'],
          groupWaitMs: 30_000,
          groupIntervalMs: 300_000,
          repeatIntervalMs: 3_600_000,
        },
      },
    });
    return { hub, router };
  }

  it('when both flush the same group at once, one notification goes out, listing the alerts of both', async () => {
    const clock = new ManualClock();
    const r1 = replica(a, clock, 'm1');
    const r2 = replica(b, clock, 'm2');
    const raise = (r: typeof r1, i: number) =>
      r.hub.raise({ kind: 'generic', title: `pod ${i}`, severity: 'high', context: { cluster: 'eu-1' } });
    await Promise.all([...Array(20).keys()].map((i) => raise(i % 2 ? r1 : r2, i)));
    clock.advance(30_000);
    for (let round = 0; round < 5; round++) {
      await Promise.all([r1.hub.lifecycle.tick(), r2.hub.lifecycle.tick()]);
      clock.advance(300_000);
    }
    await Promise.all([r1.hub.settled(), r2.hub.settled()]);
    const sent = [...r1.router.records, ...r2.router.records];
    expect(sent).toHaveLength(1);
    expect(sent[0]!.context.alert_count).toBe('20');
  });

  it('when both trigger one dedup key at once, one alert is open and it counts every trigger', async () => {
    const clock = new ManualClock();
    const r1 = replica(a, clock, 'm1');
    const r2 = replica(b, clock, 'm2');
    const ids = await Promise.all(
      [...Array(30).keys()].map((i) =>
        (i % 2 ? r1 : r2).hub.raise({
          kind: 'generic',
          title: 'db down',
          severity: 'critical',
          dedupKey: 'db-1',
        }),
      ),
    );
    expect(new Set(ids.map((x) => x.id)).size).toBe(1);
    const entry = await r1.hub.lifecycle.store.openByKey('db-1');
    expect(entry?.count).toBe(30);
  });

  it('retention: an old resolved alert, an ended silence and old log rows go at the hourly tick; open alerts stay', async () => {
    const clock = new ManualClock(new Date());
    const router = new RecordingRouter();
    const hub = new AlertHub({
      router,
      recentSize: 10,
      maxWatchers: 1,
      watchBufferSize: 16,
      defaultSource: 'monitor',
      clock,
      lifecycle: { store: new DatabaseAlertStore(a), retentionMs: 30 * 86_400_000 },
    });
    const lc = hub.lifecycle;
    const old = await hub.raise({ kind: 'generic', title: 'old', severity: 'high' });
    const open = await hub.raise({ kind: 'generic', title: 'still firing', severity: 'high' });
    await lc.resolve(old.id, 'ann');
    await lc.createSilence({
      matchers: [{ name: 'a', op: '=', value: 'b' }],
      startsAt: 0,
      endsAt: clock.now() + 60_000,
      createdBy: 'ann',
      comment: '',
    });
    await lc.tick();
    expect((await lc.get(old.id)).entry.state).toBe('resolved');
    clock.advance(31 * 86_400_000);
    await lc.tick();
    await expect(lc.get(old.id)).rejects.toThrow(/not found/);
    expect((await lc.get(open.id)).entry.state).toBe('triggered');
    expect(await lc.listSilences(undefined, 10)).toEqual([]);
    const log = await a.raw('SELECT count(*)::int AS n FROM monitor_notification_log');
    expect((log as { rows: { n: number }[] }).rows[0]!.n).toBe(0);
    await hub.settled();
  });

  it('50 claims of one notification from two pools: exactly one wins', async () => {
    const s1 = new DatabaseAlertStore(a);
    const s2 = new DatabaseAlertStore(b);
    const key = { groupKey: 'g', receiver: 'channels', step: 'x' };
    const wins = await Promise.all(
      [...Array(50).keys()].map((i) => (i % 2 ? s1 : s2).claimNotification(key, `o${i}`, 60_000)),
    );
    expect(wins.filter(Boolean)).toHaveLength(1);
  });

  it('a sender that crashed after its row and before the send: nobody sends during its lease, the next attempt after it does, once', async () => {
    const s1 = new DatabaseAlertStore(a);
    const s2 = new DatabaseAlertStore(b);
    const key = { groupKey: 'g', receiver: 'channels', step: 'crash' };
    expect(await s1.claimNotification(key, 'dead', 200)).toBe(true);
    // m1 dies here: no completeNotification.
    expect(await s2.claimNotification(key, 'm2', 60_000)).toBe(false);
    await new Promise((r) => setTimeout(r, 300));
    const retries = await Promise.all([
      s2.claimNotification(key, 'm2', 60_000),
      s1.claimNotification(key, 'm3', 60_000),
    ]);
    expect(retries.filter(Boolean)).toHaveLength(1);
    await s2.completeNotification(key, retries[0] ? 'm2' : 'm3');
    await new Promise((r) => setTimeout(r, 50));
    expect(await s1.claimNotification(key, 'm4', 1)).toBe(false);
  });
});
