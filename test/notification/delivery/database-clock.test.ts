/**
 * The database's clock (issue 23): on PostgreSQL, leases, due times and "now" come from the database,
 * read per claim, never from a replica's own clock. Two workers on one database whose process clocks
 * differ by five minutes: the one ahead must not take leases the other still holds (a second send),
 * and a retry the provider asked to wait for must not go early on the one ahead.
 */
import type { Knex } from 'knex';
import { type Clock, systemClock } from '../../../shared/runtime/clock';
import { DatabaseDeliveryStore } from '../../../services/notification/delivery/database-store';
import type { SendOutcome } from '../../../services/notification/delivery/driver';
import { DeliveryPipeline } from '../../../services/notification/delivery/pipeline';
import { notificationMigrations } from '../../../services/notification/migrations';
import { runMigrations } from '../../../shared/storage/migrations';
import { pooledTestDatabase, type PooledTestDatabase } from '../../support/database';
import { Gate, ScriptedDriver, lookupOf, newBackend, testConfig } from './support';

const SKEW_MS = 5 * 60_000;

let db: PooledTestDatabase;
const pool = (): Promise<Knex> => db.pool();

beforeAll(async () => {
  db = await pooledTestDatabase('deliveryclock');
  await runMigrations(await pool(), notificationMigrations);
});

afterAll(async () => {
  await db?.close();
});

/** Two replicas of one backend on separate pools: `behind` on the real clock, `ahead` five minutes ahead. */
async function replicas(name: string) {
  const config = testConfig({ lease_seconds: 60, attempt_timeout_ms: 30_000 });
  const drivers = [new ScriptedDriver(name, 'sms'), new ScriptedDriver(name, 'sms')];
  const clocks: Clock[] = [systemClock, { ...systemClock, now: () => Date.now() + SKEW_MS }];
  const [behind, ahead] = await Promise.all(
    drivers.map(
      async (driver, i) =>
        new DeliveryPipeline({
          store: new DatabaseDeliveryStore(await pool()),
          lookup: lookupOf(driver),
          config,
          clock: clocks[i],
          random: () => 0.5,
          owner: `replica-${i}`,
        }),
    ),
  );
  return { behind: behind!, ahead: ahead!, drivers: drivers as [ScriptedDriver, ScriptedDriver] };
}

const sms = (pipeline: DeliveryPipeline, backend: string, i: number) =>
  pipeline.submit({
    channel: 'sms',
    backend,
    recipient: `+1555000${String(i).padStart(4, '0')}`,
    payload: { text: `message ${i}` },
    scope: 's',
  });

describe('the database clock on PostgreSQL', () => {
  it('when a replica whose clock is five minutes ahead polls, it takes none of the leases another replica holds, and each delivery is sent once', async () => {
    const name = newBackend('clock');
    const { behind, ahead, drivers } = await replicas(name);
    const ids: string[] = [];
    for (let i = 0; i < 8; i++) ids.push((await sms(behind, name, i)).delivery.id);
    // The replica behind claims them all; their attempts wait at the provider.
    const gate = new Gate<SendOutcome>();
    drivers[0].fallback = { gate };
    expect(await behind.worker.pollOnce()).toBe(8);

    // To the replica ahead, "lease until behind's now + 60 s" is minutes ago; to the database it is not.
    expect(await ahead.worker.pollOnce()).toBe(0);
    expect(drivers[1].calls).toHaveLength(0);

    gate.resolve({ class: 'sent', providerReference: 'ref' });
    await behind.worker.idle();
    expect(await ahead.worker.pollOnce()).toBe(0);
    const sends = new Map<string, number>();
    for (const d of drivers) for (const [id, n] of d.sendsById()) sends.set(id, (sends.get(id) ?? 0) + n);
    expect([...sends.entries()].sort()).toEqual(ids.map((id) => [id, 1] as const).sort());
    for (const id of ids) expect((await behind.get(id)).status).toBe('sent');
  });

  it('when a replica whose clock is behind records a Retry-After, the replica ahead does not retry early', async () => {
    const name = newBackend('retry');
    const { behind, ahead, drivers } = await replicas(name);
    const { delivery } = await sms(behind, name, 1);
    drivers[0].script({ class: 'rate_limited', reason: 'slow down', retryAfterMs: 30_000 });
    expect(await behind.worker.pollOnce()).toBe(1);
    await behind.worker.idle();
    expect((await behind.get(delivery.id)).status).toBe('retrying');

    // Due 30 s after the database's now, whatever either replica's clock says.
    const knex = db.pools[0]!;
    const [row] = (
      await knex.raw<{ rows: { wait_s: number }[] }>(
        'SELECT EXTRACT(EPOCH FROM next_attempt_at - now())::float AS wait_s FROM deliveries WHERE id = ?',
        [delivery.id],
      )
    ).rows;
    expect(row!.wait_s).toBeGreaterThan(20);
    expect(row!.wait_s).toBeLessThanOrEqual(30);
    expect(await ahead.worker.pollOnce()).toBe(0);
    expect(drivers[1].calls).toHaveLength(0);
    expect(drivers[0].calls).toHaveLength(1);
  });

  it('when a replica whose clock is five minutes ahead accepts a delivery, it is due at once, not in five minutes', async () => {
    const name = newBackend('new');
    const { behind, ahead, drivers } = await replicas(name);
    const { delivery } = await sms(ahead, name, 1);
    expect(await behind.worker.pollOnce()).toBe(1);
    await behind.worker.idle();
    expect(drivers[0].sendsById().get(delivery.id)).toBe(1);
  });
});
