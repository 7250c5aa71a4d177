/**
 * The correctness half of `npm run capacity -- replicas` at small scale, so CI checks it: four
 * replicas (each its own pool, store and owner) claim 2,000 due deliveries from one PostgreSQL queue
 * through the public store API, and every delivery is claimed once and completed once.
 */
import type { Knex } from 'knex';
import { DatabaseDeliveryStore } from '../../../services/notification/delivery/database-store';
import { notificationMigrations } from '../../../services/notification/migrations';
import { runMigrations } from '../../../shared/storage/migrations';
import { pooledTestDatabase, type PooledTestDatabase } from '../../support/database';
import { backlog, claimAllOnce, exactlyOnceProblems, seed } from '../../bench/claim-sim';

let db: PooledTestDatabase;

beforeAll(async () => {
  db = await pooledTestDatabase('replicasim');
  await runMigrations(await db.pool(), notificationMigrations);
});

afterAll(async () => {
  await db?.close();
});

const BACKENDS = ['apns-a', 'apns-b', 'apns-c'];
const LIMIT = 16;

describe('N replicas claiming from one PostgreSQL queue', () => {
  it('claims and completes each of 2,000 deliveries exactly once with 4 replicas', async () => {
    const seeder = new DatabaseDeliveryStore(db.pools[0]!);
    const deliveries = backlog(2000, BACKENDS);
    await seed(seeder, deliveries);
    const pools: Knex[] = [];
    for (let i = 0; i < 4; i++) pools.push(await db.pool(3));
    const stores = pools.map((knex) => new DatabaseDeliveryStore(knex));

    const result = await claimAllOnce(stores, { claimLimit: LIMIT, expected: deliveries.length });

    expect(
      exactlyOnceProblems(
        result,
        deliveries.map((d) => d.id),
      ),
    ).toEqual([]);
    const tallies = result.replicas;
    expect(tallies.reduce((n, t) => n + t.completed, 0)).toBe(2000);
    expect(tallies.reduce((n, t) => n + t.lostLeases, 0)).toBe(0);
    // A claim never returns more than asked for, and the run did fill claims up to that bound.
    expect(Math.max(...tallies.map((t) => t.largestClaim))).toBe(LIMIT);
    // The owners are distinct: four replicas, not one store four times.
    expect(new Set(tallies.map((t) => t.owner)).size).toBe(4);

    // What the database holds agrees: every row sent with one attempt, no lease left, and one
    // `sent` event per delivery.
    const knex = db.pools[0]!;
    const summary = await knex.raw<{
      rows: { status: string; attempts: number; leased: number; n: number }[];
    }>(
      `SELECT status, jsonb_array_length(attempts)::int AS attempts,
         count(*) FILTER (WHERE lease_owner IS NOT NULL)::int AS leased, count(*)::int AS n
       FROM deliveries GROUP BY 1, 2`,
    );
    expect(summary.rows).toEqual([{ status: 'sent', attempts: 1, leased: 0, n: 2000 }]);
    const events = await knex.raw<{ rows: { n: number; ids: number }[] }>(
      `SELECT count(*)::int AS n, count(DISTINCT delivery_id)::int AS ids FROM delivery_events WHERE status = 'sent'`,
    );
    expect(events.rows).toEqual([{ n: 2000, ids: 2000 }]);
  });

  it('reports a delivery claimed twice or never completed (the check itself can fail)', () => {
    const ids = ['a', 'b', 'c'];
    const problems = exactlyOnceProblems(
      {
        replicas: [],
        claimedTimes: new Map([
          ['a', 1],
          ['b', 2],
          ['x', 1],
        ]),
        completedTimes: new Map([
          ['a', 1],
          ['b', 1],
        ]),
        seconds: 0,
      },
      ids,
    );
    expect(problems).toEqual([
      'b claimed 2 times',
      'c claimed 0 times',
      'c completed 0 times',
      'x claimed but never seeded',
    ]);
  });
});
