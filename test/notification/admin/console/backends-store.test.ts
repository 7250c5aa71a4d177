/**
 * What the console's backends table reads below the HTTP route: the queue depth per backend
 * (`queueDepths`, on the memory store, PGlite and PostgreSQL) and the last hour's attempt outcomes
 * (`RecentOutcomes`, fed through the circuit breakers), on a manual clock.
 */
import type { Knex } from 'knex';
import { CircuitBreakers } from '../../../../services/notification/delivery/circuit-breaker';
import { DatabaseDeliveryStore } from '../../../../services/notification/delivery/database-store';
import { InMemoryDeliveryStore } from '../../../../services/notification/delivery/memory-store';
import {
  RECENT_OUTCOMES_WINDOW_MS,
  RecentOutcomes,
} from '../../../../services/notification/delivery/recent-outcomes';
import type { DeliveryStore } from '../../../../services/notification/delivery/store';
import { notificationMigrations } from '../../../../services/notification/migrations';
import { runMigrations } from '../../../../shared/storage/migrations';
import { pooledTestDatabase, type PooledTestDatabase, migratedPglite } from '../../../support/database';
import {
  ManualClock,
  ScriptedDriver,
  buildPipeline,
  newBackend,
  pollAndSettle,
  requireVmModules,
} from '../../delivery/support';

describe('RecentOutcomes', () => {
  it('counts sent, failed and retried attempts per backend', () => {
    const clock = new ManualClock();
    const recent = new RecentOutcomes(clock);
    recent.add('email', 'a', 'sent');
    recent.add('email', 'a', 'sent');
    recent.add('email', 'a', 'permanent');
    recent.add('email', 'a', 'recipient_failure');
    recent.add('email', 'a', 'retryable');
    recent.add('email', 'a', 'rate_limited');
    recent.add('sms', 'a', 'sent');
    expect(recent.counts('email', 'a')).toEqual({ sent: 2, failed: 2, retried: 2 });
    expect(recent.counts('sms', 'a')).toEqual({ sent: 1, failed: 0, retried: 0 });
    expect(recent.counts('push', 'a')).toEqual({ sent: 0, failed: 0, retried: 0 });
  });

  it('keeps an hour in whole minutes: a bucket counts until 60 minutes after its minute ends', () => {
    const clock = new ManualClock(new Date('2026-11-01T12:00:30.000Z'));
    const recent = new RecentOutcomes(clock);
    recent.add('email', 'a', 'sent'); // the 12:00 bucket
    clock.current = new Date('2026-11-01T12:30:00.000Z');
    recent.add('email', 'a', 'retryable'); // the 12:30 bucket
    expect(recent.counts('email', 'a')).toEqual({ sent: 1, failed: 0, retried: 1 });
    // At the bound: 12:00 is still within the hour of the 13:00 minute.
    clock.current = new Date('2026-11-01T13:00:59.999Z');
    expect(recent.counts('email', 'a')).toEqual({ sent: 1, failed: 0, retried: 1 });
    // Past it: the 12:00 bucket is gone, the 12:30 one stays.
    clock.current = new Date('2026-11-01T13:01:00.000Z');
    expect(recent.counts('email', 'a')).toEqual({ sent: 0, failed: 0, retried: 1 });
    clock.advance(RECENT_OUTCOMES_WINDOW_MS);
    expect(recent.counts('email', 'a')).toEqual({ sent: 0, failed: 0, retried: 0 });
    // A new outcome after a long quiet starts again from nothing.
    recent.add('email', 'a', 'permanent');
    expect(recent.counts('email', 'a')).toEqual({ sent: 0, failed: 1, retried: 0 });
  });

  it('is fed by the circuit breakers with every outcome they count', () => {
    const clock = new ManualClock();
    const breakers = new CircuitBreakers({ failure_threshold: 2, cooldown_seconds: 60 }, clock);
    breakers.record('sms', 'gw', 'retryable');
    breakers.record('sms', 'gw', 'retryable');
    breakers.record('sms', 'gw', 'sent');
    expect(breakers.recent.counts('sms', 'gw')).toEqual({ sent: 1, failed: 0, retried: 2 });
  });
});

/** The queue-depth checks, for one store. */
function describeQueueDepths(
  name: string,
  open: () => Promise<{ store: DeliveryStore; close(): Promise<void> }>,
) {
  describe(`queue depth on ${name}`, () => {
    let store: DeliveryStore;
    let close: () => Promise<void>;
    beforeAll(async () => {
      ({ store, close } = await open());
    });
    afterAll(() => close?.());

    it('counts queued records (pending and retrying) per channel and backend, not final ones', async () => {
      const a = new ScriptedDriver(newBackend('a'), 'email').script(
        { class: 'sent', providerReference: 'r1' },
        { class: 'retryable', reason: 'busy' },
        { class: 'permanent', reason: 'no' },
      );
      const b = new ScriptedDriver(newBackend('b'), 'sms');
      b.fallback = { class: 'retryable', reason: 'down' };
      const { pipeline } = buildPipeline(store, [a, b], {
        config: { circuit_breaker: { failure_threshold: 100, cooldown_seconds: 60 } },
      });
      const submit = (driver: ScriptedDriver, i: number) =>
        pipeline.submit({
          channel: driver.channel,
          backend: driver.name,
          recipient: driver.channel === 'sms' ? `+1555000000${i}` : `u${i}@example.com`,
          payload: { text: `hi ${i}` },
          scope: 's',
        });
      for (let i = 0; i < 3; i++) await submit(a, i);
      for (let i = 0; i < 2; i++) await submit(b, i);
      const mine = async () =>
        (await pipeline.queueDepths())
          .filter((d) => d.backend === a.name || d.backend === b.name)
          .sort((x, y) => x.backend.localeCompare(y.backend));
      expect(await mine()).toEqual([
        { channel: 'email', backend: a.name, queued: 3 },
        { channel: 'sms', backend: b.name, queued: 2 },
      ]);
      await pollAndSettle(pipeline);
      // a: one sent, one failed for good, one retrying; b: both retrying.
      expect(await mine()).toEqual([
        { channel: 'email', backend: a.name, queued: 1 },
        { channel: 'sms', backend: b.name, queued: 2 },
      ]);
      expect(pipeline.breakers.recent.counts('email', a.name)).toEqual({ sent: 1, failed: 1, retried: 1 });
      expect(pipeline.breakers.recent.counts('sms', b.name)).toEqual({ sent: 0, failed: 0, retried: 2 });
    });
  });
}

describeQueueDepths('the memory store', async () => ({
  store: new InMemoryDeliveryStore(),
  close: async () => undefined,
}));

describeQueueDepths('PGlite', async () => {
  requireVmModules();
  const knex: Knex = await migratedPglite('notification');
  return { store: new DatabaseDeliveryStore(knex, { clock: 'caller' }), close: () => knex.destroy() };
});

describeQueueDepths('PostgreSQL', async () => {
  const db: PooledTestDatabase = await pooledTestDatabase('consolebackends');
  const knex = await db.pool();
  await runMigrations(knex, notificationMigrations);
  return { store: new DatabaseDeliveryStore(knex, { clock: 'caller' }), close: () => db.close() };
});
