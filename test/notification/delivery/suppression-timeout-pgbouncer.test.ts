/**
 * The suppression lookup bound behind a transaction pooler (pgbouncer, `database.session_url` set):
 * knex's cancel there would be `pg_cancel_backend(<the pooler's made-up process id>)`, which cancels
 * nothing (or, by chance, another session's query), and the connection would go back to the pool with
 * the blocked query still on it: every later statement on it waits behind the lock. Behind a pooler
 * the store does not cancel; knex then drops the timed-out connection, and the pool stays usable.
 */
import type { Knex } from 'knex';
import { SuppressionLookupError } from '../../../services/notification/delivery/suppression';
import { DatabaseSuppressionStore } from '../../../services/notification/delivery/suppression-database-store';
import { notificationMigrations } from '../../../services/notification/migrations';
import { silentLogger } from '../../../shared/logging/logger';
import { openDatabase } from '../../../shared/storage/database';
import { runMigrations } from '../../../shared/storage/migrations';
import { pooledTestDatabase, type PooledTestDatabase } from '../../support/database';
import { startPgbouncer, type Pgbouncer } from '../../support/pgbouncer';
import { notHung } from '../../support/wait';

const BOUND_MS = 250;

let db: PooledTestDatabase;
let bouncer: Pgbouncer;
let direct: Knex;
let pooled: Knex;

beforeAll(async () => {
  db = await pooledTestDatabase('suppgb');
  direct = await db.pool(2);
  await runMigrations(direct, notificationMigrations);
  bouncer = await startPgbouncer(db.url, 4);
  // One connection in the pool: a poisoned one would be the one every later statement gets.
  pooled = await openDatabase(
    { url: bouncer.pooledUrl, session_url: db.url, data_dir: '', pool_max: 1 },
    silentLogger(),
  );
}, 60_000);

afterAll(async () => {
  await pooled?.destroy();
  await bouncer?.stop();
  await db?.close();
});

test('a lookup past its bound behind pgbouncer leaves the pool usable while the lock is still held', async () => {
  const store = new DatabaseSuppressionStore(pooled, { lookupTimeoutMs: BOUND_MS });
  await store.add({
    id: '00000000-0000-4000-8000-000000000001',
    channel: 'sms',
    recipient: '+15550001234',
    reason: 'stop_keyword',
    source: 'inbound:twilio',
    createdAt: new Date(),
  });
  const trx = await direct.transaction();
  try {
    await trx.raw('LOCK TABLE suppressions IN ACCESS EXCLUSIVE MODE');
    const err = await notHung(
      store.findSuppressed('sms', ['+15550001234', '+15550009999']).catch((e: unknown) => e),
      'the lookup',
    );
    expect(err).toBeInstanceOf(SuppressionLookupError);
    expect(err).toMatchObject({ reason: 'timeout' });
    // The lock is still held: the pool's one connection must not be the one stuck behind it.
    const { rows } = (await notHung(pooled.raw('SELECT 41 + 1 AS n'), 'the next statement')) as {
      rows: { n: number }[];
    };
    expect(rows[0]!.n).toBe(42);
  } finally {
    await trx.commit();
  }
  // Once the lock is gone, lookups through the pooler answer again.
  expect(await store.findSuppressed('sms', ['+15550001234', '+15550009999'])).toEqual(
    new Set(['+15550001234']),
  );
}, 60_000);

test.each([
  [
    'add',
    (s: DatabaseSuppressionStore) =>
      s.add({
        id: '00000000-0000-4000-8000-000000000002',
        channel: 'sms',
        recipient: '+15550005678',
        reason: 'hard_bounce',
        source: 'receipt:twilio',
        createdAt: new Date(),
      }),
  ],
  ['remove', (s: DatabaseSuppressionStore) => s.remove('sms', '+15550001234')],
  ['reasonsOf', (s: DatabaseSuppressionStore) => s.reasonsOf('sms', ['+15550001234'])],
] as const)(
  'behind pgbouncer, %s past its bound also leaves the pool usable while the lock is held',
  async (_name, call) => {
    const store = new DatabaseSuppressionStore(pooled, { lookupTimeoutMs: BOUND_MS });
    const trx = await direct.transaction();
    try {
      await trx.raw('LOCK TABLE suppressions IN ACCESS EXCLUSIVE MODE');
      const err = await notHung(
        call(store).then(
          () => new Error('answered under the lock'),
          (e: unknown) => e,
        ),
        'the call',
      );
      expect(err).toBeInstanceOf(SuppressionLookupError);
      expect(err).toMatchObject({ reason: 'timeout' });
      const { rows } = (await notHung(pooled.raw('SELECT 41 + 1 AS n'), 'the next statement')) as {
        rows: { n: number }[];
      };
      expect(rows[0]!.n).toBe(42);
    } finally {
      await trx.commit();
    }
    expect((await store.findSuppressed('sms', ['+15550009999'])).size).toBe(0);
  },
  60_000,
);
