/**
 * The escalation rules on real PostgreSQL, then what only replicas on one database show: two engines
 * (two pools) page each step once, and a page claimed by a replica that died before sending is taken
 * over after the claim's lease and sent once (Notify's idempotency key).
 */
import type { Knex } from 'knex';
import { DatabaseAlertStore } from '../../../services/monitor/alerts/database-store';
import { MONITOR_MIGRATIONS_TABLE, monitorMigrations } from '../../../services/monitor/migrations';
import { DatabaseEscalationStore } from '../../../services/monitor/oncall/escalation-database-store';
import { runMigrations } from '../../../shared/storage/migrations';
import { type PooledTestDatabase, pooledTestDatabase } from '../../support/database';
import { ManualClock } from '../../support/manual-clock';
import { until } from '../../support/wait';
import { truncateAlertTables } from '../alerts/support';
import { describeEscalationContract, FakePager, MIN, replica } from './escalation-contract';

let db: PooledTestDatabase;
let a: Knex;
let b: Knex;

beforeAll(async () => {
  db = await pooledTestDatabase('escalpg', 4);
  a = await db.pool();
  b = await db.pool();
  await runMigrations(a, monitorMigrations, { tableName: MONITOR_MIGRATIONS_TABLE });
});

afterAll(async () => {
  await db?.close();
});

async function reset(): Promise<void> {
  await truncateAlertTables(a);
}

describeEscalationContract('PostgreSQL', async () => {
  await reset();
  return { alerts: new DatabaseAlertStore(a), store: new DatabaseEscalationStore(a) };
});

describe('two monitors on one PostgreSQL', () => {
  beforeEach(reset);
  const stores = (k: Knex) => ({ alerts: new DatabaseAlertStore(k), store: new DatabaseEscalationStore(k) });

  it('racing on every tick, they page each person of each step once', async () => {
    const clock = new ManualClock();
    const pager = new FakePager();
    const r1 = replica(stores(a), { clock, pager, owner: 'm1' });
    const r2 = replica(stores(b), { clock, pager, owner: 'm2' });
    await Promise.all([r1.raise('db down'), r2.raise('cache down')]);
    for (let i = 0; i < 6; i++) {
      await Promise.all([r1.engine.tick(), r2.engine.tick(), r1.engine.tick(), r2.engine.tick()]);
      clock.advance(5 * MIN);
    }
    // Two alerts x two rounds x (alice; bob and carol): 12 pages, no Notify call twice.
    expect(pager.calls).toHaveLength(12);
    expect(new Set(pager.calls.map((c) => c.idempotencyKey)).size).toBe(12);
  });

  it('a page claimed by a replica that died before sending is sent by the other after the lease, once (same Notify key)', async () => {
    const clock = new ManualClock();
    const pager = new FakePager();
    const r1 = replica(stores(a), { clock, pager, owner: 'm1', leaseMs: 60_000 });
    const r2 = replica(stores(b), { clock, pager, owner: 'm2', leaseMs: 60_000 });
    const id = await r1.raise('db down');
    // m1 starts the escalation and claims alice's page, then "dies" (its send never happens).
    const dying = new Promise<never>(() => undefined);
    let claimedAndSending = false;
    pager.page = () => {
      claimedAndSending = true;
      return dying;
    };
    void r1.engine.tick();
    await until(async () => claimedAndSending, 'm1 sending its claimed page', 15_000);
    pager.page = FakePager.prototype.page.bind(pager);
    await r2.engine.tick();
    expect(pager.sent).toHaveLength(0); // the lease still holds
    // The lease runs out on the database's clock (moved by hand: no waiting on real time).
    await a.raw(`UPDATE monitor_notification_log SET lease_until = now() - interval '1 second'`);
    await r2.engine.tick();
    await r2.engine.tick();
    expect(pager.sent.map((p) => p.userId)).toEqual(['alice']);
    expect((await r2.engine.states([id]))[0]!.pages.map((p) => p.userId)).toEqual(['alice']);
  });

  it('a page sent by a replica that died before recording it is retried later by the other as the same request (Notify: the first notification, no error)', async () => {
    const clock = new ManualClock();
    const pager = new FakePager();
    const r1 = replica(stores(a), { clock, pager, owner: 'm1', leaseMs: 60_000 });
    const r2 = replica(stores(b), { clock, pager, owner: 'm2', leaseMs: 60_000 });
    const id = await r1.raise('db down');
    // m1's Notify reaches the service, then m1 dies before recording the page.
    let sentThenDied = false;
    pager.page = async (request) => {
      await FakePager.prototype.page.call(pager, request);
      sentThenDied = true;
      return new Promise<never>(() => undefined);
    };
    void r1.engine.tick();
    await until(async () => sentThenDied, 'm1 sending its claimed page', 15_000);
    pager.page = FakePager.prototype.page.bind(pager);
    // m2 takes over minutes later (its clock is later: the page's link and code times must not move).
    clock.advance(2 * MIN);
    await a.raw(`UPDATE monitor_notification_log SET lease_until = now() - interval '1 second'`);
    await r2.engine.tick();
    expect(pager.calls).toHaveLength(2);
    expect(pager.sent).toHaveLength(1);
    const pages = (await r2.engine.states([id]))[0]!.pages;
    expect(pages).toEqual([
      expect.objectContaining({ userId: 'alice', channels: ['inbox', 'email', 'sms'] }),
    ]);
    expect(pages[0]!.error).toBeUndefined();
  });
});
