/**
 * PgNotificationListener on real PostgreSQL: it catches up after every connect (the first included),
 * reconnects after its backend is terminated, and keeps delivering notifications.
 */
import { createServer, connect, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
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

/**
 * A TCP proxy to the test server that can go silent: `freeze()` stops forwarding on the connections
 * open now without closing them (a half-open connection, as when a NAT forgets it); later
 * connections are forwarded normally.
 */
async function silentableProxy(
  target: URL,
): Promise<{ url: string; freeze(): void; close(): Promise<void> }> {
  const pairs: [Socket, Socket][] = [];
  const server: Server = createServer((client) => {
    const upstream = connect(Number(target.port), target.hostname);
    client.pipe(upstream);
    upstream.pipe(client);
    client.on('error', () => undefined);
    upstream.on('error', () => undefined);
    pairs.push([client, upstream]);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = new URL(target.toString());
  url.port = String((server.address() as AddressInfo).port);
  return {
    url: url.toString(),
    freeze() {
      for (const [client, upstream] of pairs.splice(0)) {
        client.unpipe(upstream);
        upstream.unpipe(client);
        client.pause();
        upstream.pause();
        // Kept open, never answered: only a ping can tell.
        client.on('end', () => undefined);
      }
    },
    async close() {
      for (const [client, upstream] of pairs) {
        client.destroy();
        upstream.destroy();
      }
      server.close();
    },
  };
}

it('when the connection goes silent without an error, the ping notices, and it reconnects and catches up', async () => {
  const proxy = await silentableProxy(new URL(db.url));
  const payloads: string[] = [];
  let connects = 0;
  const listener = new PgNotificationListener({
    url: proxy.url,
    channel: 'quiet_events',
    logger: silentLogger(),
    minBackoffMs: 10,
    pingIntervalMs: 50,
    onNotification: (payload) => payloads.push(payload),
    onConnect: () => connects++,
  });
  await listener.start();
  try {
    expect(connects).toBe(1);
    proxy.freeze();
    await waitFor(() => connects === 2 && listener.listening, 'the ping to find the silent connection');
    await sql("NOTIFY quiet_events, 'after'");
    await waitFor(() => payloads.includes('after'), 'a notification on the new connection');
  } finally {
    await listener.stop();
    await proxy.close();
  }
});
