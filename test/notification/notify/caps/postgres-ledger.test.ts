/**
 * DatabaseCapLedger on real PostgreSQL: the contract suite, 50 concurrent takes from two replicas'
 * pools against one cap, and the database's clock (no override) deciding the windows.
 */
import { notificationMigrations } from '../../../../services/notification/migrations';
import { DatabaseCapLedger } from '../../../../services/notification/notify/caps/database-ledger';
import { runMigrations } from '../../../../shared/storage/migrations';
import { pooledTestDatabase, type PooledTestDatabase } from '../../../support/database';
import { capUserId, describeCapLedgerContract } from './cap-ledger-contract';

let db: Promise<PooledTestDatabase> | undefined;
function database(): Promise<PooledTestDatabase> {
  db ??= (async () => {
    const d = await pooledTestDatabase('capspg', 4);
    await runMigrations(await d.pool(1), notificationMigrations);
    return d;
  })();
  return db;
}

afterAll(async () => {
  await (await db)?.close();
});

describeCapLedgerContract('DatabaseCapLedger on PostgreSQL', async (caps, clock) => {
  const d = await database();
  return new DatabaseCapLedger(d.pools[0]!, { caps, now: () => clock.date() });
});

describe('DatabaseCapLedger across replicas on PostgreSQL', () => {
  it('50 concurrent takes from two replicas (two pools) for a cap of 3 per hour: exactly 3 are taken', async () => {
    const d = await database();
    const caps = [{ channel: 'sms' as const, limit: 3, per: 3600 }];
    const replicas = [
      new DatabaseCapLedger(await d.pool(8), { caps }),
      new DatabaseCapLedger(await d.pool(8), { caps }),
    ];
    const user = capUserId('race');
    const decisions = await Promise.all(
      Array.from({ length: 50 }, (_, i) => replicas[i % 2]!.take(user, 'sms')),
    );
    expect(decisions.filter((dec) => dec.taken)).toHaveLength(3);
    const refused = decisions.filter((dec) => !dec.taken);
    expect(refused).toHaveLength(47);
    for (const r of refused) expect(r).toMatchObject({ cap: 'sms 3/1h' });
    const [{ count }] = (
      await d.pools[0]!.raw('SELECT count(*)::int AS count FROM notify_cap_takes WHERE user_id = ?', [user])
    ).rows as [{ count: number }];
    expect(count).toBe(3);
  });

  it('the database clock decides the window: a take 2 hours old no longer counts and is purged, one 30 minutes old counts', async () => {
    const d = await database();
    const knex = d.pools[0]!;
    const ledger = new DatabaseCapLedger(knex, { caps: [{ channel: 'push', limit: 2, per: 3600 }] });
    const user = capUserId('clock');
    await knex.raw(
      `INSERT INTO notify_cap_takes (user_id, channel, taken_at) VALUES
         (?, 'push', now() - interval '2 hours'), (?, 'push', now() - interval '30 minutes')`,
      [user, user],
    );
    const [{ at }] = (
      await knex.raw(
        `SELECT (extract(epoch FROM taken_at) * 1000)::bigint AS at FROM notify_cap_takes
       WHERE user_id = ? ORDER BY taken_at DESC LIMIT 1`,
        [user],
      )
    ).rows as [{ at: string }];
    expect((await ledger.take(user, 'push')).taken).toBe(true);
    const refused = await ledger.take(user, 'push');
    expect(refused).toMatchObject({ taken: false, cap: 'push 2/1h' });
    // Free when the 30-minute-old take leaves the hour (rounded up to the millisecond).
    const freeAt = (refused as { nextFreeAt: Date }).nextFreeAt.getTime();
    expect(freeAt - (Number(at) + 3600_000)).toBeGreaterThanOrEqual(0);
    expect(freeAt - (Number(at) + 3600_000)).toBeLessThanOrEqual(1);
    const [{ count }] = (
      await knex.raw('SELECT count(*)::int AS count FROM notify_cap_takes WHERE user_id = ?', [user])
    ).rows as [{ count: number }];
    expect(count).toBe(2);
  });
});
