/**
 * PgNotificationListener on real PostgreSQL: it catches up after every connect (the first included),
 * reconnects after its backend is terminated, and keeps delivering notifications.
 */
import { Client } from 'pg';
import { silentLogger } from '../../../shared/logging/logger';
import { PgNotificationListener } from '../../../shared/storage/pg-listener';
import { createTestDatabase } from '../../support/database';
import { waitFor } from '../../support/wait';

let db: { url: string; drop(): Promise<void> };

beforeAll(async () => {
  db = await createTestDatabase('listen');
});
afterAll(async () => {
  await db?.drop();
});

async function sql(query: string): Promise<void> {
  const client = new Client({ connectionString: db.url });
  await client.connect();
  try {
    await client.query(query);
  } finally {
    await client.end();
  }
}

it('calls onConnect after the first connect and after each reconnect, and delivers notifications after a terminated backend', async () => {
  const payloads: string[] = [];
  let connects = 0;
  const listener = new PgNotificationListener({
    url: db.url,
    channel: 'test_events',
    logger: silentLogger(),
    applicationName: 'listener-under-test',
    minBackoffMs: 10,
    pingIntervalMs: 50,
    onNotification: (payload) => payloads.push(payload),
    onConnect: () => connects++,
  });
  await listener.start();
  try {
    // The first connect counts: the owner catches up on what happened before it listened.
    expect(connects).toBe(1);
    await sql("NOTIFY test_events, 'one'");
    await waitFor(() => payloads.includes('one'), 'the first notification');

    await sql(
      "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'listener-under-test'",
    );
    await waitFor(() => connects === 2 && listener.listening, 'the listener to reconnect and catch up');
    await sql("NOTIFY test_events, 'two'");
    await waitFor(() => payloads.includes('two'), 'a notification after the reconnect');
  } finally {
    await listener.stop();
  }
  expect(listener.listening).toBe(false);
});
