/** The suppression contract on real PostgreSQL, plus what only a database shows: concurrent adds agree. */
import type { Knex } from 'knex';
import { DatabaseDeliveryStore } from '../../../services/notification/delivery/database-store';
import { Suppressions } from '../../../services/notification/delivery/suppression';
import { DatabaseSuppressionStore } from '../../../services/notification/delivery/suppression-database-store';
import { notificationMigrations } from '../../../services/notification/migrations';
import { silentLogger } from '../../../shared/logging/logger';
import { openDatabase } from '../../../shared/storage/database';
import { runMigrations } from '../../../shared/storage/migrations';
import { createTestDatabase } from '../../support/database';
import { describeSuppressionContract } from './suppression-contract';

let db: { url: string; drop(): Promise<void> };
const pools: Knex[] = [];

async function pool(): Promise<Knex> {
  const knex = await openDatabase({ url: db.url, data_dir: '', pool_max: 4 }, silentLogger());
  pools.push(knex);
  return knex;
}

beforeAll(async () => {
  db = await createTestDatabase('suppg');
  await runMigrations(await pool(), notificationMigrations);
});

afterAll(async () => {
  for (const knex of pools) await knex.destroy();
  await db?.drop();
});

describeSuppressionContract('DatabaseSuppressionStore on PostgreSQL', async () => {
  const knex = await pool();
  return {
    suppressions: new DatabaseSuppressionStore(knex),
    deliveries: new DatabaseDeliveryStore(knex),
    close: async () => {},
  };
});

describe('DatabaseSuppressionStore on PostgreSQL, two replicas', () => {
  it('when two replicas add the same recipient at once, exactly one entry is created and both see it', async () => {
    const lists = [
      new Suppressions({ store: new DatabaseSuppressionStore(await pool()) }),
      new Suppressions({ store: new DatabaseSuppressionStore(await pool()) }),
    ];
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        lists[i % 2]!.add({
          channel: 'email',
          recipient: 'Race@Example.com',
          reason: 'hard_bounce',
          source: `receipt:r${i % 2}`,
        }),
      ),
    );
    expect(results.filter(Boolean)).toHaveLength(1);
    for (const l of lists) expect(await l.isSuppressed('email', 'race@example.com')).toBe(true);
    const knex = await pool();
    const { rows } = (await knex.raw(
      `SELECT count(*)::int AS n FROM suppressions WHERE recipient = 'race@example.com'`,
    )) as {
      rows: { n: number }[];
    };
    expect(rows[0]!.n).toBe(1);
  });
});
