/**
 * Held alerts on real PostgreSQL: the store contract (each store its own knex pool, as replicas have),
 * then two dispatchers on one database: each held P1 alert is sent once at opening, and one P2 digest
 * goes out per interval between them.
 */
import type { Knex } from 'knex';
import { DatabaseHeldAlertStore } from '../../../services/monitor/alerts/held-database-store';
import { MONITOR_MIGRATIONS_TABLE, monitorMigrations } from '../../../services/monitor/migrations';
import { silentLogger } from '../../../shared/logging/logger';
import type { AlertBatch, AlertChannel } from '../../../shared/monitoring/alerts/channels';
import { TierAwareDispatcher } from '../../../shared/monitoring/alerts/tier-dispatcher';
import { BusinessHours } from '../../../shared/monitoring/alerts/tiers';
import { runMigrations } from '../../../shared/storage/migrations';
import { type PooledTestDatabase, pooledTestDatabase } from '../../support/database';
import { FakeClock, FakeTimers } from '../../shared/monitoring/helpers';
import { describeHeldStoreContract } from '../../shared/monitoring/alerts/held-store-contract';
import { resetHeldAlertTables } from './support';

let db: PooledTestDatabase;
let a: Knex;
let b: Knex;
let next = 0;

beforeAll(async () => {
  db = await pooledTestDatabase('heldpg', 4);
  a = await db.pool();
  b = await db.pool();
  await runMigrations(a, monitorMigrations, { tableName: MONITOR_MIGRATIONS_TABLE });
});

afterAll(async () => {
  await db?.close();
});

describeHeldStoreContract('PostgreSQL', async () => ({
  // Alternate pools, so "two owners" are two replicas' connections.
  store: () => new DatabaseHeldAlertStore(next++ % 2 ? a : b),
  reset: () => resetHeldAlertTables(a),
  close: async () => undefined,
}));

class RecordingChannel implements AlertChannel {
  readonly batches: AlertBatch[] = [];
  constructor(readonly name: string) {}
  async send(batch: AlertBatch): Promise<void> {
    this.batches.push(batch);
  }
}

const HOUR = 3_600_000;
// Monday 2026-01-05 20:00 UTC: business hours (Mon-Fri 09:00-17:00 UTC) open Tuesday 09:00.
const MON_2000 = Date.UTC(2026, 0, 5, 20, 0);

function replica(knex: Knex, owner: string) {
  const clock = new FakeClock(0, MON_2000);
  const timers = new FakeTimers(clock);
  const p1 = new RecordingChannel('p1');
  const p2 = new RecordingChannel('p2');
  const dispatcher = new TierAwareDispatcher({
    channels: { P1_BUSINESS_HOURS: [p1], P2_DIGEST: [p2] },
    businessHours: new BusinessHours({
      time_zone: 'UTC',
      days: ['mon', 'tue', 'wed', 'thu', 'fri'],
      open: '09:00',
      close: '17:00',
    }),
    digestIntervalSeconds: 3600,
    heldStore: new DatabaseHeldAlertStore(knex),
    owner,
    clock,
    timers,
    logger: silentLogger(),
  });
  return { dispatcher, timers, p1, p2 };
}

const titles = (batches: AlertBatch[]) => batches.flatMap((x) => x.alerts.map((al) => al.title));

describe('two monitors on one PostgreSQL', () => {
  beforeEach(async () => {
    await resetHeldAlertTables(a);
  });

  it('each held P1 alert is sent once when business hours open on both', async () => {
    const r1 = replica(a, 'm1');
    const r2 = replica(b, 'm2');
    const raised = [...Array(30).keys()].map((i) => `p1-${i}`);
    await Promise.all(raised.map((t, i) => (i % 2 ? r1 : r2).dispatcher.sendAlert(t, 'm', 'high')));
    expect(await r1.dispatcher.heldCount()).toBe(30);
    // Both replicas' opening timers fire at Tuesday 09:00.
    r1.timers.advance(13 * HOUR);
    r2.timers.advance(13 * HOUR);
    await Promise.all([r1.dispatcher.settled(), r2.dispatcher.settled()]);
    const sent = [...titles(r1.p1.batches), ...titles(r2.p1.batches)];
    expect(sent.sort()).toEqual([...raised].sort());
    expect(await r1.dispatcher.heldCount()).toBe(0);
    await Promise.all([r1.dispatcher.shutdown(), r2.dispatcher.shutdown()]);
  });

  it('one P2 digest per interval between them, carrying the alerts both held', async () => {
    const r1 = replica(a, 'm1');
    const r2 = replica(b, 'm2');
    await r1.dispatcher.sendAlert('from m1', 'm', 'low', { tier: 'P2_DIGEST' });
    await r2.dispatcher.sendAlert('from m2', 'm', 'low', { tier: 'P2_DIGEST' });
    r1.timers.advance(HOUR);
    r2.timers.advance(HOUR);
    await Promise.all([r1.dispatcher.settled(), r2.dispatcher.settled()]);
    const digests = [...r1.p2.batches, ...r2.p2.batches];
    expect(digests).toHaveLength(1);
    expect(titles(digests).sort()).toEqual(['from m1', 'from m2']);

    // Within the same interval on the database's clock, neither timer gets another turn.
    await r2.dispatcher.sendAlert('later', 'm', 'low', { tier: 'P2_DIGEST' });
    r1.timers.advance(HOUR);
    r2.timers.advance(HOUR);
    await Promise.all([r1.dispatcher.settled(), r2.dispatcher.settled()]);
    expect(r1.p2.batches.length + r2.p2.batches.length).toBe(1);

    // An interval later (the turn's time moved back an hour instead of waiting one): one digest again.
    await a.raw(
      `UPDATE monitor_held_alert_tiers SET last_flushed_at = last_flushed_at - interval '1 hour' WHERE tier = 'P2_DIGEST'`,
    );
    r1.timers.advance(HOUR);
    r2.timers.advance(HOUR);
    await Promise.all([r1.dispatcher.settled(), r2.dispatcher.settled()]);
    const all = [...r1.p2.batches, ...r2.p2.batches];
    expect(all).toHaveLength(2);
    expect(titles(all).sort()).toEqual(['from m1', 'from m2', 'later']);
    await Promise.all([r1.dispatcher.shutdown(), r2.dispatcher.shutdown()]);
  });

  it('one replica stopping keeps the held alerts for the other, which sends them at opening', async () => {
    const r1 = replica(a, 'm1');
    const r2 = replica(b, 'm2');
    await r1.dispatcher.sendAlert('held by m1', 'm', 'high');
    await r1.dispatcher.shutdown();
    expect(r1.p1.batches).toEqual([]);
    r2.timers.advance(13 * HOUR);
    await r2.dispatcher.settled();
    expect(titles(r2.p1.batches)).toEqual(['held by m1']);
    await r2.dispatcher.shutdown();
  });
});
