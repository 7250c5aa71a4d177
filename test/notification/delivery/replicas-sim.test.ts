/**
 * The correctness half of `npm run capacity -- replicas` at small scale, so CI checks it: four
 * replicas (each its own store and owner; on PostgreSQL each its own pool) claim 2,000 due
 * deliveries from one queue through the public store API, and every delivery is claimed once and
 * completed once.
 */
import type { Knex } from 'knex';
import { DatabaseDeliveryStore } from '../../../services/notification/delivery/database-store';
import { notificationMigrations } from '../../../services/notification/migrations';
import { runMigrations } from '../../../shared/storage/migrations';
import { silentLogger } from '../../../shared/logging/logger';
import { openDatabase } from '../../../shared/storage/database';
import { pooledTestDatabase } from '../../support/database';
import { backlog, claimAllOnce, exactlyOnceProblems, seed } from '../../bench/claim-sim';
import { requireVmModules } from './support';

const BACKENDS = ['apns-a', 'apns-b', 'apns-c'];
const LIMIT = 16;

/** Seeds `count` deliveries, lets `stores` claim them all, and checks each went out exactly once. */
async function claimEachOnce(knex: Knex, stores: DatabaseDeliveryStore[], count: number): Promise<void> {
  const deliveries = backlog(count, BACKENDS);
  await seed(new DatabaseDeliveryStore(knex), deliveries);

  const result = await claimAllOnce(stores, { claimLimit: LIMIT, expected: deliveries.length });

  expect(
    exactlyOnceProblems(
      result,
      deliveries.map((d) => d.id),
    ),
  ).toEqual([]);
  const tallies = result.replicas;
  expect(tallies.reduce((n, t) => n + t.completed, 0)).toBe(count);
  expect(tallies.reduce((n, t) => n + t.lostLeases, 0)).toBe(0);
  // A claim never returns more than asked for, and the run did fill claims up to that bound.
  expect(Math.max(...tallies.map((t) => t.largestClaim))).toBe(LIMIT);
  // The owners are distinct: four replicas, not one store four times.
  expect(new Set(tallies.map((t) => t.owner)).size).toBe(stores.length);

  // What the database holds agrees: every row sent with one attempt, no lease left, and one
  // `sent` event per delivery.
  const summary = await knex.raw<{ rows: { status: string; attempts: number; leased: number; n: number }[] }>(
    `SELECT status, jsonb_array_length(attempts)::int AS attempts,
       count(*) FILTER (WHERE lease_owner IS NOT NULL)::int AS leased, count(*)::int AS n
     FROM deliveries GROUP BY 1, 2`,
  );
  expect(summary.rows).toEqual([{ status: 'sent', attempts: 1, leased: 0, n: count }]);
  const events = await knex.raw<{ rows: { n: number; ids: number }[] }>(
    `SELECT count(*)::int AS n, count(DISTINCT delivery_id)::int AS ids FROM delivery_events WHERE status = 'sent'`,
  );
  expect(events.rows).toEqual([{ n: count, ids: count }]);
}

describe('N replicas claiming from one queue', () => {
  it('on PostgreSQL: 4 replicas (own pools) claim and complete each of 2,000 deliveries exactly once', async () => {
    const db = await pooledTestDatabase('replicasim');
    try {
      const knex = await db.pool();
      await runMigrations(knex, notificationMigrations);
      const stores: DatabaseDeliveryStore[] = [];
      for (let i = 0; i < 4; i++) stores.push(new DatabaseDeliveryStore(await db.pool(3)));
      await claimEachOnce(knex, stores, 2000);
    } finally {
      await db.close();
    }
  });

  it('on PGlite: 4 stores on its one connection claim and complete each of 500 deliveries exactly once', async () => {
    requireVmModules();
    const knex = await openDatabase({ url: '', data_dir: ':memory:', pool_max: 1 }, silentLogger());
    try {
      await runMigrations(knex, notificationMigrations);
      // 500, not 2,000: PGlite runs every statement in this process, and CI's two cores are shared.
      await claimEachOnce(
        knex,
        Array.from({ length: 4 }, () => new DatabaseDeliveryStore(knex)),
        500,
      );
    } finally {
      await knex.destroy();
    }
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
