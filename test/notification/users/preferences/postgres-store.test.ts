import type { Knex } from 'knex';
import { Client } from 'pg';
import { notificationMigrations } from '../../../../services/notification/migrations';
import { DatabasePreferenceStore, Preferences } from '../../../../services/notification/users/preferences';
import { silentLogger } from '../../../../shared/logging/logger';
import { openDatabase } from '../../../../shared/storage/database';
import { runMigrations } from '../../../../shared/storage/migrations';
import { createTestDatabase } from '../../../support/database';
import { describePreferenceContract } from './preference-contract';
import { TEST_CATEGORIES, newUser } from './support';

describePreferenceContract('DatabasePreferenceStore on PostgreSQL', async () => {
  const db = await createTestDatabase('prefs');
  const knex: Knex = await openDatabase({ url: db.url, data_dir: '', pool_max: 4 }, silentLogger());
  await runMigrations(knex, notificationMigrations);
  return {
    store: new DatabasePreferenceStore(knex),
    close: async () => {
      await knex.destroy();
      await db.drop();
    },
  };
});

describe('DatabasePreferenceStore: what only PostgreSQL shows', () => {
  let db: { url: string; drop(): Promise<void> };
  let knex: Knex;

  beforeAll(async () => {
    db = await createTestDatabase('prefsplan');
    knex = await openDatabase({ url: db.url, data_dir: '', pool_max: 8 }, silentLogger());
    await runMigrations(knex, notificationMigrations);
  });

  afterAll(async () => {
    await knex?.destroy();
    await db?.drop();
  });

  it('when many users have choices, reading one user uses the primary key, not a scan', async () => {
    await knex.raw(`
      INSERT INTO user_preferences (user_id, category, channel, enabled, updated_at)
      SELECT 'plan-user-' || g, c.category, 'email', g % 2 = 0, now()
      FROM generate_series(1, 20000) AS g, (VALUES ('news'), ('comments')) AS c(category)`);
    await knex.raw('ANALYZE user_preferences');
    const captured: { sql: string; bindings: unknown[] }[] = [];
    const listen = (q: { sql: string; bindings?: unknown[] }): void => {
      captured.push({ sql: q.sql, bindings: q.bindings ?? [] });
    };
    knex.on('query', listen);
    await new DatabasePreferenceStore(knex).read('plan-user-7');
    knex.off('query', listen);
    const client = new Client({ connectionString: db.url });
    await client.connect();
    try {
      const { rows } = await client.query<{ 'QUERY PLAN': string }>(
        `EXPLAIN ${captured[0]!.sql}`,
        captured[0]!.bindings,
      );
      const plan = rows.map((r) => r['QUERY PLAN']).join('\n');
      expect(plan).toContain('user_preferences_pkey');
      expect(plan).not.toMatch(/Seq Scan/);
    } finally {
      await client.end();
    }
  });

  it('when one user updates the same choices concurrently, every update succeeds and one value wins', async () => {
    const book = new Preferences({
      store: new DatabasePreferenceStore(knex),
      categories: TEST_CATEGORIES,
      userExists: async () => true,
    });
    const user = newUser();
    const results = await Promise.allSettled(
      Array.from({ length: 20 }, (_, i) =>
        book.update(user, [
          { category: 'news', channel: 'email', enabled: i % 2 === 0 },
          { category: 'comments', channel: 'push', enabled: i % 2 === 1 },
        ]),
      ),
    );
    expect(results.filter((r) => r.status === 'rejected')).toEqual([]);
    const { rows } = (await knex.raw('SELECT count(*)::int AS n FROM user_preferences WHERE user_id = ?', [
      user,
    ])) as { rows: { n: number }[] };
    expect(rows[0]!.n).toBe(2);
    // Each update wrote both rows in one statement: they always disagree.
    expect(await book.isEnabled(user, 'news', 'email')).toBe(
      !(await book.isEnabled(user, 'comments', 'push')),
    );
  });
});
