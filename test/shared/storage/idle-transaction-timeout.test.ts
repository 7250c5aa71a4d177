/**
 * `database.idle_in_transaction_timeout_ms`: a transaction of the pool left idle by a stuck caller is
 * ended by the server itself (PostgreSQL's idle_in_transaction_session_timeout, sent when the
 * connection starts), so its locks are released; the pool replaces the dead connection and the
 * error, when the caller comes back to it, answers UNAVAILABLE. Session connections run without it.
 */
import { Code } from '@connectrpc/connect';
import type { Knex } from 'knex';
import { Client } from 'pg';
import { databaseSectionSchema, DEFAULT_IDLE_IN_TRANSACTION_TIMEOUT_MS } from '../../../shared/config/server';
import { silentLogger } from '../../../shared/logging/logger';
import { toConnectError } from '../../../shared/rpc/errors';
import { sleepMs } from '../../../shared/runtime/backoff';
import { openDatabase } from '../../../shared/storage/database';
import { sessionConnection } from '../../../shared/storage/session';
import { isDatabaseUnavailable } from '../../../shared/storage/unavailable';
import { createTestDatabase } from '../../support/database';

let db: { url: string; drop(): Promise<void> };
let admin: Client;
const pools: Knex[] = [];

async function pool(extra: { idle_in_transaction_timeout_ms?: number } = {}) {
  const knex = await openDatabase({ url: db.url, data_dir: '', pool_max: 1, ...extra }, silentLogger());
  pools.push(knex);
  return knex;
}

async function shown(knex: Knex): Promise<string> {
  const result = (await knex.raw('SHOW idle_in_transaction_session_timeout')) as {
    rows: { idle_in_transaction_session_timeout: string }[];
  };
  return result.rows[0]!.idle_in_transaction_session_timeout;
}

/** Waits (deadline: the test's) until the server has no session `pid` any more. */
async function sessionEnded(pid: number): Promise<void> {
  for (;;) {
    const { rows } = await admin.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM pg_stat_activity WHERE pid = $1',
      [pid],
    );
    if (rows[0]!.n === 0) return;
    await sleepMs(20);
  }
}

beforeAll(async () => {
  db = await createTestDatabase('idle_trx');
  admin = new Client({ connectionString: db.url });
  await admin.connect();
  await admin.query('CREATE TABLE held_here (n int)');
  await admin.query('INSERT INTO held_here VALUES (1), (2)');
});

afterAll(async () => {
  for (const knex of pools.splice(0)) await knex.destroy();
  await admin?.end();
  await db?.drop();
});

describe('database.idle_in_transaction_timeout_ms', () => {
  it('defaults to one minute, accepts 0 (no bound) and refuses what is out of range', () => {
    const schema = databaseSectionSchema('svc');
    expect(DEFAULT_IDLE_IN_TRANSACTION_TIMEOUT_MS).toBe(60_000);
    expect(schema.parse({}).idle_in_transaction_timeout_ms).toBe(60_000);
    expect(schema.parse({ idle_in_transaction_timeout_ms: 0 }).idle_in_transaction_timeout_ms).toBe(0);
    expect(schema.parse({ idle_in_transaction_timeout_ms: 86_400_000 }).idle_in_transaction_timeout_ms).toBe(
      86_400_000,
    );
    expect(() => schema.parse({ idle_in_transaction_timeout_ms: -1 })).toThrow(/0 or more/);
    expect(() => schema.parse({ idle_in_transaction_timeout_ms: 86_400_001 })).toThrow(/at most 86400000/);
    expect(() => schema.parse({ idle_in_transaction_timeout_ms: 1.5 })).toThrow(/integer/);
  });

  it('is set on every connection of the pool: the default when absent, the configured value, none at 0', async () => {
    expect(await shown(await pool())).toBe('1min');
    expect(await shown(await pool({ idle_in_transaction_timeout_ms: 1500 }))).toBe('1500ms');
    expect(await shown(await pool({ idle_in_transaction_timeout_ms: 0 }))).toBe('0');
  });

  it('ends a transaction its caller left idle: its lock is released, the error is UNAVAILABLE, the pool recovers', async () => {
    const knex = await pool({ idle_in_transaction_timeout_ms: 200 });
    let resume!: () => void;
    const stuck = new Promise<void>((resolve) => (resume = resolve));
    let pidSeen!: (pid: number) => void;
    const pid = new Promise<number>((resolve) => (pidSeen = resolve));
    const transaction = knex.transaction(async (trx) => {
      await trx.raw('LOCK TABLE held_here IN ACCESS EXCLUSIVE MODE');
      const result = (await trx.raw('SELECT pg_backend_pid() AS pid')) as { rows: { pid: number }[] };
      pidSeen(result.rows[0]!.pid);
      // A caller stuck on something else (a network call that never answers) with the lock held.
      await stuck;
      await trx.raw('INSERT INTO held_here VALUES (3)');
    });
    const outcome = transaction.then(
      () => undefined,
      (e: unknown) => e,
    );

    await sessionEnded(await pid);
    // The lock went with the session: another client takes it at once (NOWAIT fails if it is held).
    await admin.query('BEGIN');
    await admin.query('LOCK TABLE held_here IN ACCESS EXCLUSIVE MODE NOWAIT');
    await admin.query('ROLLBACK');

    resume();
    const err = await outcome;
    expect(err).toBeDefined();
    expect(isDatabaseUnavailable(err)).toBe(true);
    const wire = toConnectError(err);
    expect(wire.code).toBe(Code.Unavailable);
    expect(wire.rawMessage).not.toMatch(/held_here|idle|INSERT/);
    // Nothing of the transaction stayed; the pool's one connection was replaced and works.
    const result = (await knex.raw('SELECT count(*) AS n FROM held_here')) as { rows: { n: number }[] };
    expect(result.rows[0]!.n).toBe(2);
  });

  it('does not end a transaction that is busy: a statement longer than the bound runs to its end', async () => {
    const knex = await pool({ idle_in_transaction_timeout_ms: 100 });
    await expect(
      knex.transaction(async (trx) => {
        await trx.raw('SELECT pg_sleep(0.3)');
        return trx.raw('SELECT count(*) AS n FROM held_here');
      }),
    ).resolves.toMatchObject({ rows: [{ n: 2 }] });
  });

  it('does not bound session connections (job leases, the migration lock, LISTEN)', async () => {
    const knex = await pool({ idle_in_transaction_timeout_ms: 100 });
    const client = new Client(sessionConnection(knex));
    await client.connect();
    try {
      const result = await client.query<{ idle_in_transaction_session_timeout: string }>(
        'SHOW idle_in_transaction_session_timeout',
      );
      expect(result.rows[0]!.idle_in_transaction_session_timeout).toBe('0');
    } finally {
      await client.end();
    }
  });
});
