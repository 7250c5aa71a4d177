/**
 * isDatabaseUnavailable against real PostgreSQL errors: a server that refuses connections and a
 * session the server ends are outages (the RPC layer answers UNAVAILABLE), a wrong query is not
 * (INTERNAL). Found by the faults suite: with PostgreSQL halted every call answered INTERNAL.
 */

import { Code } from '@connectrpc/connect';
import knexFactory from 'knex';
import { Client } from 'pg';

import { toConnectError } from '../../../shared/rpc/errors';
import { DATABASE_UNAVAILABLE_MESSAGE, isDatabaseUnavailable } from '../../../shared/storage/unavailable';
import { serverUrl } from '../../support/database';
import { refusedPort } from '../../support/ports';

async function errorOf(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (err) {
    return err;
  }
  throw new Error('expected a failure');
}

test('a query through knex to a server that refuses connections is an outage, answered UNAVAILABLE', async () => {
  const knex = knexFactory({
    client: 'pg',
    connection: `postgres://postgres@127.0.0.1:${await refusedPort()}/postgres`,
    pool: { min: 0, max: 1 },
    acquireConnectionTimeout: 10_000,
  });
  try {
    const err = await errorOf(knex.raw('select 1'));
    expect(isDatabaseUnavailable(err)).toBe(true);
    const mapped = toConnectError(err);
    expect(mapped.code).toBe(Code.Unavailable);
    expect(mapped.rawMessage).toBe(DATABASE_UNAVAILABLE_MESSAGE);
  } finally {
    await knex.destroy();
  }
});

test('a session the server terminates (57P01) is an outage', async () => {
  const victim = new Client({ connectionString: serverUrl() });
  const killer = new Client({ connectionString: serverUrl() });
  await victim.connect();
  await killer.connect();
  victim.on('error', () => undefined);
  try {
    const { rows } = await victim.query<{ pid: number }>('select pg_backend_pid() as pid');
    const pending = errorOf(victim.query('select pg_sleep(30)'));
    await killer.query('select pg_terminate_backend($1)', [rows[0]!.pid]);
    expect(isDatabaseUnavailable(await pending)).toBe(true);
  } finally {
    await killer.end();
    await victim.end().catch(() => undefined);
  }
});

test('a transaction the server ended for sitting idle (25P03) is an outage: the same work may pass on a retry', async () => {
  const client = new Client({ connectionString: serverUrl(), idle_in_transaction_session_timeout: 50 });
  const ended = new Promise<unknown>((resolve) => client.on('error', resolve));
  await client.connect();
  try {
    await client.query('BEGIN');
    // The server's FATAL arrives while no query runs: pg reports it on the client.
    const err = await ended;
    expect((err as { code?: string }).code).toBe('25P03');
    expect(isDatabaseUnavailable(err)).toBe(true);
    expect(toConnectError(err).code).toBe(Code.Unavailable);
    // The caller's next statement meets the dead session: an outage too.
    expect(isDatabaseUnavailable(await errorOf(client.query('select 1')))).toBe(true);
  } finally {
    await client.end().catch(() => undefined);
  }
});

test('a wrong query is not an outage: it stays INTERNAL', async () => {
  const client = new Client({ connectionString: serverUrl() });
  await client.connect();
  try {
    const err = await errorOf(client.query('select * from no_such_table_here'));
    expect(isDatabaseUnavailable(err)).toBe(false);
    expect(toConnectError(err).code).toBe(Code.Internal);
    expect(isDatabaseUnavailable(new Error('boom'))).toBe(false);
    // knex puts the SQL in front of pg's words for a session that broke inside a transaction.
    expect(
      isDatabaseUnavailable(
        new Error('COMMIT; - Client has encountered a connection error and is not queryable'),
      ),
    ).toBe(true);
    expect(isDatabaseUnavailable(undefined)).toBe(false);
  } finally {
    await client.end();
  }
});
