/**
 * Held alerts in the monitor's database over embedded PGlite: the store contract, then the tier-aware
 * dispatcher on it with a fake clock and timers: a P1 alert held outside business hours goes out at
 * opening, P2 at the digest, a new dispatcher on the same database (a restart after a crash) finds
 * and sends them, and a clean shutdown keeps them.
 */
import type { Knex } from 'knex';
import { DatabaseHeldAlertStore } from '../../../services/monitor/alerts/held-database-store';
import { silentLogger } from '../../../shared/logging/logger';
import type { AlertBatch, AlertChannel } from '../../../shared/monitoring/alerts/channels';
import { TierAwareDispatcher } from '../../../shared/monitoring/alerts/tier-dispatcher';
import { BusinessHours } from '../../../shared/monitoring/alerts/tiers';
import { requireVmModules } from '../../notification/inbox/support';
import { FakeClock, FakeTimers } from '../../shared/monitoring/helpers';
import { describeHeldStoreContract } from '../../shared/monitoring/alerts/held-store-contract';
import { resetHeldAlertTables } from './support';
import { migratedPglite } from '../../support/database';

// One in-memory PGlite for the whole file: each instance costs seconds and hundreds of MB.
let knex: Knex;

beforeAll(async () => {
  requireVmModules();
  knex = await migratedPglite('monitor');
});

afterAll(async () => {
  await knex?.destroy();
});

describeHeldStoreContract('PGlite', async () => ({
  store: () => new DatabaseHeldAlertStore(knex),
  reset: () => resetHeldAlertTables(knex),
  close: async () => undefined,
}));

class RecordingChannel implements AlertChannel {
  readonly batches: AlertBatch[] = [];
  constructor(readonly name: string) {}
  async send(batch: AlertBatch): Promise<void> {
    this.batches.push(batch);
  }
  sent(): Array<[string, string[]]> {
    return this.batches.map((b) => [b.reason, b.alerts.map((a) => a.title)]);
  }
}

const HOUR = 3_600_000;
// Monday 2026-01-05 20:00 UTC: business hours (Mon-Fri 09:00-17:00 UTC) are closed until 09:00 Tuesday.
const MON_2000 = Date.UTC(2026, 0, 5, 20, 0);

function dispatcherAt(wall: number, owner: string) {
  const clock = new FakeClock(0, wall);
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
    maxHeld: 3,
    heldStore: new DatabaseHeldAlertStore(knex),
    owner,
    clock,
    timers,
    logger: silentLogger(),
  });
  return { dispatcher, timers, p1, p2 };
}

describe('TierAwareDispatcher on the database store', () => {
  beforeEach(async () => {
    await resetHeldAlertTables(knex);
  });

  it('a P1 alert held outside business hours is in the database once route resolves, and goes out at opening', async () => {
    const { dispatcher, timers, p1 } = dispatcherAt(MON_2000, 'm1');
    await dispatcher.sendAlert('tomorrow', 'm', 'high', { tier: 'P1_BUSINESS_HOURS' });
    expect(await dispatcher.heldCount()).toBe(1);
    timers.advance(13 * HOUR - 1); // Tuesday 08:59:59.999
    await dispatcher.settled();
    expect(p1.batches).toEqual([]);
    timers.advance(1); // 09:00
    await dispatcher.settled();
    expect(p1.sent()).toEqual([['business_hours_opened', ['tomorrow']]]);
    expect(await dispatcher.heldCount()).toBe(0);
    await dispatcher.shutdown();
  });

  it('P2 alerts go out as one digest at the interval and leave the database', async () => {
    const { dispatcher, timers, p2 } = dispatcherAt(MON_2000, 'm1');
    await dispatcher.sendAlert('x', 'm', 'low', { tier: 'P2_DIGEST' });
    await dispatcher.sendAlert('y', 'm', 'low', { tier: 'P2_DIGEST' });
    expect(await dispatcher.pendingDigestCount()).toBe(2);
    timers.advance(HOUR - 1);
    await dispatcher.settled();
    expect(p2.batches).toEqual([]);
    timers.advance(1);
    await dispatcher.settled();
    expect(p2.sent()).toEqual([['digest', ['x', 'y']]]);
    expect(await dispatcher.pendingDigestCount()).toBe(0);
    await dispatcher.shutdown();
  });

  it('the bound and its dropped count hold across the database', async () => {
    const { dispatcher, timers, p1 } = dispatcherAt(MON_2000, 'm1');
    for (const t of ['a', 'b', 'c', 'd']) await dispatcher.sendAlert(t, 'm', 'high');
    timers.advance(13 * HOUR);
    await dispatcher.settled();
    expect(p1.sent()).toEqual([['business_hours_opened', ['b', 'c', 'd']]]);
    expect(p1.batches[0]!.dropped).toBe(1);
    await dispatcher.shutdown();
  });

  it('after a crash, a new dispatcher on the same database sends the held P1 at once when business hours are open, and the P2 digest at its interval', async () => {
    const crashed = dispatcherAt(MON_2000, 'm1');
    await crashed.dispatcher.sendAlert('held', 'm', 'high', { tier: 'P1_BUSINESS_HOURS' });
    await crashed.dispatcher.sendAlert('digested', 'm', 'low', { tier: 'P2_DIGEST' });
    // m1 is killed: no shutdown, its timers never fire again.
    const restarted = dispatcherAt(Date.UTC(2026, 0, 6, 10, 0), 'm2'); // Tuesday 10:00: open
    restarted.timers.advance(0);
    await restarted.dispatcher.settled();
    expect(restarted.p1.sent()).toEqual([['business_hours_opened', ['held']]]);
    expect(restarted.p2.batches).toEqual([]);
    restarted.timers.advance(HOUR);
    await restarted.dispatcher.settled();
    expect(restarted.p2.sent()).toEqual([['digest', ['digested']]]);
    expect(crashed.p1.batches.length + crashed.p2.batches.length).toBe(0);
    await restarted.dispatcher.shutdown();
  });

  it('after a crash outside business hours, the new dispatcher waits for the opening', async () => {
    const crashed = dispatcherAt(MON_2000, 'm1');
    await crashed.dispatcher.sendAlert('held', 'm', 'high');
    const restarted = dispatcherAt(MON_2000 + HOUR, 'm2'); // 21:00: still closed
    restarted.timers.advance(12 * HOUR - 1);
    await restarted.dispatcher.settled();
    expect(restarted.p1.batches).toEqual([]);
    restarted.timers.advance(1); // Tuesday 09:00
    await restarted.dispatcher.settled();
    expect(restarted.p1.sent()).toEqual([['business_hours_opened', ['held']]]);
    await restarted.dispatcher.shutdown();
  });

  it('a replica that was running before another held alerts and died releases them at every opening', async () => {
    const survivor = dispatcherAt(MON_2000 - HOUR, 'm2'); // started Monday 19:00, nothing held yet
    const gone = dispatcherAt(MON_2000, 'm1');
    await gone.dispatcher.sendAlert('monday night', 'm', 'high');
    survivor.timers.advance(14 * HOUR); // Tuesday 09:00
    await survivor.dispatcher.settled();
    expect(survivor.p1.sent()).toEqual([['business_hours_opened', ['monday night']]]);
    // Tuesday night another replica holds one more, then dies; the survivor's timer is armed again.
    const gone2 = dispatcherAt(Date.UTC(2026, 0, 6, 20, 0), 'm3');
    await gone2.dispatcher.sendAlert('tuesday night', 'm', 'high');
    survivor.timers.advance(24 * HOUR); // Wednesday 09:00
    await survivor.dispatcher.settled();
    expect(survivor.p1.sent()).toEqual([
      ['business_hours_opened', ['monday night']],
      ['business_hours_opened', ['tuesday night']],
    ]);
    expect(gone.p1.batches.length + gone2.p1.batches.length).toBe(0);
    await survivor.dispatcher.shutdown();
  });

  it('a clean shutdown keeps the held alerts in the database (nothing sent); the next run sends them', async () => {
    const first = dispatcherAt(MON_2000, 'm1');
    await first.dispatcher.sendAlert('held', 'm', 'high');
    await first.dispatcher.sendAlert('digested', 'm', 'low', { tier: 'P2_DIGEST' });
    await first.dispatcher.shutdown();
    expect(first.p1.batches.length + first.p2.batches.length).toBe(0);
    // Raised after the shutdown (a late lifecycle notification): kept as well, not sent outside hours.
    await first.dispatcher.sendAlert('late', 'm', 'high');
    expect(first.p1.batches).toEqual([]);
    expect(await first.dispatcher.heldCount()).toBe(2);
    const next = dispatcherAt(Date.UTC(2026, 0, 6, 9, 0), 'm2');
    next.timers.advance(0);
    await next.dispatcher.settled();
    expect(next.p1.sent()).toEqual([['business_hours_opened', ['held', 'late']]]);
    await next.dispatcher.shutdown();
  });

  it('a P1 alert within business hours goes after the held ones, in order', async () => {
    const crashed = dispatcherAt(MON_2000, 'm1');
    await crashed.dispatcher.sendAlert('old', 'm', 'high');
    const open = dispatcherAt(Date.UTC(2026, 0, 6, 10, 0), 'm2');
    await open.dispatcher.sendAlert('new', 'm', 'high');
    expect(open.p1.sent()).toEqual([
      ['business_hours_opened', ['old']],
      ['immediate', ['new']],
    ]);
    await open.dispatcher.settled();
    await open.dispatcher.shutdown();
  });
});

describe('DatabaseHeldAlertStore digest turns', () => {
  beforeEach(async () => {
    await resetHeldAlertTables(knex);
  });

  it('grants one turn per interval, on the database clock', async () => {
    const s1 = new DatabaseHeldAlertStore(knex);
    const s2 = new DatabaseHeldAlertStore(knex);
    expect(await s1.takeFlushTurn('P2_DIGEST', HOUR)).toBe(true);
    expect(await s2.takeFlushTurn('P2_DIGEST', HOUR)).toBe(false);
    // The other tier's turn is its own.
    expect(await s2.takeFlushTurn('P1_BUSINESS_HOURS', HOUR)).toBe(true);
    // An hour later (the row's time moved back instead of waiting): the next turn.
    await knex.raw(
      `UPDATE monitor_held_alert_tiers SET last_flushed_at = now() - interval '1 hour' WHERE tier = 'P2_DIGEST'`,
    );
    expect(await s2.takeFlushTurn('P2_DIGEST', HOUR)).toBe(true);
    expect(await s1.takeFlushTurn('P2_DIGEST', HOUR)).toBe(false);
  });
});
