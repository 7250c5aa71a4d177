/**
 * The bound on the suppression lookup on real PostgreSQL (delivery/README.md, "Suppression lookup
 * bound"): another connection holds `LOCK TABLE suppressions IN ACCESS EXCLUSIVE MODE` in an open
 * transaction, as a migration or a manual lock would. A submit is still acknowledged (accepted
 * unchecked), the blocked query is cancelled in the server, and the claim-time check, which defers
 * rather than sends unchecked, still stops a suppressed recipient once the lock is gone. The bound is
 * real time (a small value); no test asserts a duration.
 */
import type { Knex } from 'knex';
import { Registry } from 'prom-client';
import { DatabaseDeliveryStore } from '../../../services/notification/delivery/database-store';
import { DeliveryPipeline } from '../../../services/notification/delivery/pipeline';
import { SuppressionLookupError, Suppressions } from '../../../services/notification/delivery/suppression';
import { DatabaseSuppressionStore } from '../../../services/notification/delivery/suppression-database-store';
import { notificationMigrations } from '../../../services/notification/migrations';
import { createLogger } from '../../../shared/logging/logger';
import { runMigrations } from '../../../shared/storage/migrations';
import {
  activeStatements,
  lockTable,
  pooledTestDatabase,
  type PooledTestDatabase,
} from '../../support/database';
import { ManualClock, ScriptedDriver, lookupOf, newBackend, pollAndSettle, testConfig } from './support';
import { notHung, until } from '../../support/wait';

/** Small, so the tests do not wait long; real, since PostgreSQL's cancel is what is tested. */
const BOUND_MS = 250;
/** The test's own deadline for a call that must not hang (far beyond the bound). */
const HANG_DEADLINE_MS = 15_000;

let db: PooledTestDatabase;
let knex: Knex;
/** The other connection, the one that takes the lock. */
let locker: Knex;
/** A third connection, that watches pg_stat_activity. */
let observer: Knex;

beforeAll(async () => {
  db = await pooledTestDatabase('suptmo');
  knex = await db.pool();
  locker = await db.pool(1);
  observer = await db.pool(1);
  await runMigrations(knex, notificationMigrations);
});

afterAll(async () => {
  await db?.close();
});

let seq = Math.floor(Math.random() * 1_000_000);
/** A number no other test of this file uses. */
function uniqueNumber(): string {
  return `+1555${String(++seq).padStart(7, '0')}`;
}

/** Holds ACCESS EXCLUSIVE on the suppressions table from the other connection until `release`. */
const lockSuppressions = () => lockTable(locker, 'suppressions');

/** Our lookups still in the server (running or waiting for the lock). */
const lookupsInServer = () => activeStatements(observer, 'SELECT recipient FROM suppressions%');

/** Our lookups waiting for a lock in the server. */
async function lookupsWaitingForLock(): Promise<number> {
  const { rows } = (await observer.raw(
    `SELECT count(*)::int AS n FROM pg_stat_activity
     WHERE datname = current_database() AND wait_event_type = 'Lock'
       AND query LIKE 'SELECT recipient FROM suppressions%'`,
  )) as { rows: { n: number }[] };
  return rows[0]!.n;
}

function setup() {
  const clock = new ManualClock();
  const registry = new Registry();
  const lines: string[] = [];
  const logger = createLogger({
    name: 'test',
    level: 'debug',
    destination: { write: (l: string) => void lines.push(l) },
  });
  const list = new Suppressions({
    store: new DatabaseSuppressionStore(knex, { lookupTimeoutMs: BOUND_MS }),
    lookupTimeoutMs: BOUND_MS,
    clock,
    registry,
    logger,
  });
  const driver = new ScriptedDriver(newBackend('sms'), 'sms');
  const pipeline = new DeliveryPipeline({
    store: new DatabaseDeliveryStore(knex, { clock: 'caller' }),
    lookup: lookupOf(driver),
    config: testConfig(),
    clock,
    random: () => 0.5,
    suppression: list,
    logger,
  });
  /** Timeouts counted on sms at `stage` (any stage when not given). */
  const timeouts = async (stage?: string): Promise<number> => {
    const m = await registry.getSingleMetric('notification_suppression_lookup_timeouts_total')!.get();
    return m.values
      .filter((v) => v.labels.channel === 'sms' && (stage === undefined || v.labels.stage === stage))
      .reduce((sum, v) => sum + v.value, 0);
  };
  return { clock, list, driver, pipeline, lines, timeouts };
}

describe('the suppression lookup bound on PostgreSQL, the suppressions table locked', () => {
  it('a lookup of the store past the bound is cancelled in the server, while the lock is still held', async () => {
    // Long enough for the test to see the query waiting in the server before it is cancelled.
    const store = new DatabaseSuppressionStore(knex, { lookupTimeoutMs: 2000 });
    const number = uniqueNumber();
    const lock = await lockSuppressions();
    try {
      const lookup = store.findSuppressed('sms', [number]);
      // It reached the server and waits for the lock there...
      await until(
        async () => (await lookupsWaitingForLock()) === 1,
        'the lookup to wait for the lock',
        HANG_DEADLINE_MS,
      );
      const err = await notHung(
        lookup.then(
          () => new Error('answered under the lock'),
          (e: unknown) => e,
        ),
        'the lookup',
      );
      expect(err).toBeInstanceOf(SuppressionLookupError);
      expect(err).toMatchObject({ reason: 'timeout' });
      // ...and is gone from it although the lock is still held: cancelled, not left waiting.
      expect(await lookupsInServer()).toBe(0);
      // The message names neither the recipient nor the statement.
      expect((err as Error).message).not.toContain(number);
      expect((err as Error).message).not.toMatch(/select/i);
    } finally {
      await lock.release();
    }
    // The connection went back to the pool usable.
    expect(await store.findSuppressed('sms', [number])).toEqual(new Set());
  });

  it('a submit is acknowledged, accepted unchecked; after the lock is released the claim stops the suppressed recipient, and nobody is sent to it', async () => {
    const { list, driver, pipeline, lines, timeouts } = setup();
    const [stopped, clear] = [uniqueNumber(), uniqueNumber()];
    await list.add({ channel: 'sms', recipient: stopped, reason: 'stop_keyword', source: 'inbound:t' });
    const lock = await lockSuppressions();
    let results;
    try {
      results = await notHung(
        Promise.all([
          pipeline.submit({ channel: 'sms', recipient: stopped, payload: { n: 1 }, scope: 's' }),
          pipeline.submit({ channel: 'sms', recipient: clear, payload: { n: 2 }, scope: 's' }),
        ]),
        'the submits',
      );
      for (const r of results) {
        expect(r.created).toBe(true);
        expect(r.delivery).toMatchObject({ status: 'pending', suppressedRecipients: [] });
      }
      // Counted where it happened: at submit, not at claim.
      expect(await timeouts('submit')).toBeGreaterThanOrEqual(1);
      expect(await timeouts('claim')).toBe(0);
      // The blocked query does not stay in the server, the lock still held.
      await until(
        async () => (await lookupsInServer()) === 0,
        'the lookup to be cancelled',
        HANG_DEADLINE_MS,
      );
    } finally {
      await lock.release();
    }
    await pollAndSettle(pipeline);
    expect(driver.calls.map((c) => c.payload)).toEqual([{ n: 2 }]);
    expect(await pipeline.get(results[0].delivery.id)).toMatchObject({
      status: 'failed',
      failure: 'recipient_suppressed',
      attempts: [],
    });
    expect((await pipeline.get(results[1].delivery.id)).status).toBe('sent');
    const log = lines.join('\n');
    expect(log).toContain('suppression check at submit timed out: accepted unchecked, checked at claim');
    // Personal data: no recipient in any log line.
    for (const n of [stopped, clear]) expect(log).not.toContain(n);
  });

  it('at claim, a lookup past the bound defers the attempt: nothing is sent while the lock is held, the rule applies after', async () => {
    const { clock, list, driver, pipeline, lines, timeouts } = setup();
    const [stopped, clear] = [uniqueNumber(), uniqueNumber()];
    const a = await pipeline.submit({ channel: 'sms', recipient: stopped, payload: { n: 1 }, scope: 's' });
    const b = await pipeline.submit({ channel: 'sms', recipient: clear, payload: { n: 2 }, scope: 's' });
    // Suppressed after acceptance (a STOP while it waited).
    await list.add({ channel: 'sms', recipient: stopped, reason: 'stop_keyword', source: 'inbound:t' });
    const lock = await lockSuppressions();
    try {
      await notHung(pollAndSettle(pipeline), 'the claim');
      expect(driver.calls).toEqual([]);
      for (const id of [a.delivery.id, b.delivery.id]) {
        const r = await pipeline.get(id);
        expect(r).toMatchObject({ status: 'pending', attempts: [] });
        // Deferred to later, not retried on the same poll.
        expect(r.nextAttemptAt!.getTime()).toBeGreaterThan(clock.date().getTime());
      }
      expect(await timeouts('claim')).toBeGreaterThanOrEqual(1);
      expect(await timeouts('submit')).toBe(0);
      // Due again under the lock: still nothing sent.
      clock.advance(10 * 60_000);
      await notHung(pollAndSettle(pipeline), 'the second claim');
      expect(driver.calls).toEqual([]);
    } finally {
      await lock.release();
    }
    clock.advance(10 * 60_000);
    await pollAndSettle(pipeline);
    expect(driver.calls.map((c) => c.payload)).toEqual([{ n: 2 }]);
    expect(await pipeline.get(a.delivery.id)).toMatchObject({
      status: 'failed',
      failure: 'recipient_suppressed',
      attempts: [],
    });
    const log = lines.join('\n');
    expect(log).toContain('suppression lookup before the attempt timed out: deferred, not sent');
    for (const n of [stopped, clear]) expect(log).not.toContain(n);
  });

  it('a lookup answered in time behaves as before: the suppressed send is stopped at submit, nothing timed out', async () => {
    const { list, driver, pipeline, timeouts } = setup();
    const [stopped, clear] = [uniqueNumber(), uniqueNumber()];
    await list.add({ channel: 'sms', recipient: stopped, reason: 'stop_keyword', source: 'inbound:t' });
    const [s, c] = await Promise.all([
      pipeline.submit({ channel: 'sms', recipient: stopped, payload: { n: 1 }, scope: 's' }),
      pipeline.submit({ channel: 'sms', recipient: clear, payload: { n: 2 }, scope: 's' }),
    ]);
    expect(s.delivery).toMatchObject({ status: 'failed', failure: 'recipient_suppressed' });
    expect(c.delivery.status).toBe('pending');
    await pollAndSettle(pipeline);
    expect(driver.calls.map((x) => x.payload)).toEqual([{ n: 2 }]);
    expect(await timeouts()).toBe(0);
  });
});
