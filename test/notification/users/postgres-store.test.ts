/**
 * The user directory on real PostgreSQL: the contract suite, and the plan of a topic page (the
 * primary key (topic, user_id) delivers the keyset order, no sort).
 */
import type { Knex } from 'knex';
import { Client } from 'pg';
import { DatabaseUserStore } from '../../../services/notification/users/database-store';
import { notificationMigrations } from '../../../services/notification/migrations';
import { silentLogger } from '../../../shared/logging/logger';
import { openDatabase } from '../../../shared/storage/database';
import { runMigrations } from '../../../shared/storage/migrations';
import { createTestDatabase } from '../../support/database';
import { describeUsersContract } from './users-contract';

let db: { url: string; drop(): Promise<void> };
const opened: Knex[] = [];

async function open(): Promise<Knex> {
  if (!db) {
    db = await createTestDatabase('userspg');
    const knex = await openDatabase({ url: db.url, data_dir: '', pool_max: 1 }, silentLogger());
    await runMigrations(knex, notificationMigrations);
    await knex.destroy();
  }
  const knex = await openDatabase({ url: db.url, data_dir: '', pool_max: 4 }, silentLogger());
  opened.push(knex);
  return knex;
}

afterAll(async () => {
  for (const k of opened) await k.destroy();
  await db?.drop();
});

describeUsersContract('DatabaseUserStore on PostgreSQL', async () => ({
  store: new DatabaseUserStore(await open()),
  close: async () => {},
}));

interface PlanNode {
  'Node Type': string;
  'Index Name'?: string;
  Plans?: PlanNode[];
}

function nodesOf(plan: PlanNode): PlanNode[] {
  return [plan, ...(plan.Plans ?? []).flatMap(nodesOf)];
}

describe('topic pages on PostgreSQL', () => {
  it('when a page after a user id is read, the primary key index gives the order: no sort, no scan of other topics', async () => {
    const knex = await open();
    // 200 topics x 200 members: a sequential scan is clearly the worse plan.
    await knex.raw(`INSERT INTO users (user_id, emails, phones, locale, time_zone, attributes, created_at, updated_at)
      SELECT 'plan-' || g, '[]', '[]', '', '', '{}', now(), now() FROM generate_series(1, 200) g`);
    await knex.raw(`INSERT INTO topic_members (topic, user_id, created_at)
      SELECT 'plan-topic-' || t, 'plan-' || g, now() FROM generate_series(1, 200) t, generate_series(1, 200) g`);
    await knex.raw('ANALYZE users; ANALYZE topic_members');
    const captured: { sql: string; bindings: unknown[] }[] = [];
    knex.on('query', (q: { sql: string; bindings?: unknown[] }) =>
      captured.push({ sql: q.sql, bindings: q.bindings ?? [] }),
    );
    await new DatabaseUserStore(knex).listTopic('plan-topic-7', 20, 'plan-150');
    const query = captured.find((q) => /FROM topic_members/.test(q.sql))!;
    const client = new Client({ connectionString: db.url });
    await client.connect();
    try {
      const result = await client.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(
        `EXPLAIN (FORMAT JSON) ${query.sql}`,
        query.bindings,
      );
      const nodes = nodesOf(result.rows[0]!['QUERY PLAN'][0].Plan);
      expect(nodes.flatMap((n) => (n['Index Name'] ? [n['Index Name']] : []))).toContain(
        'topic_members_pkey',
      );
      expect(nodes.map((n) => n['Node Type'])).not.toContain('Sort');
    } finally {
      await client.end();
    }
  });
});
