/**
 * Every call of the suppression list bounded on real PostgreSQL (delivery/README.md, "Every
 * suppression list call bounded"): another connection holds `LOCK TABLE suppressions IN ACCESS
 * EXCLUSIVE MODE`, as a migration would. Each of add, addEntry, remove, removeByHand, isSuppressed,
 * reasonsOf and list answers SuppressionLookupError `timeout` instead of hanging, its statement is
 * cancelled in the server while the lock is still held, the pool's one connection stays usable, and
 * once the lock is gone the next call works. The bound is real time (a small value: PostgreSQL's
 * cancel is what is tested); no test asserts a duration.
 */
import type { Knex } from 'knex';
import { Registry } from 'prom-client';
import { SuppressionLookupError, Suppressions } from '../../../services/notification/delivery/suppression';
import { DatabaseSuppressionStore } from '../../../services/notification/delivery/suppression-database-store';
import { notificationMigrations } from '../../../services/notification/migrations';
import { runMigrations } from '../../../shared/storage/migrations';
import {
  activeStatements,
  lockTable,
  pooledTestDatabase,
  type PooledTestDatabase,
} from '../../support/database';
import { notHung, until } from '../../support/wait';

const BOUND_MS = 250;
const HANG_DEADLINE_MS = 15_000;

let db: PooledTestDatabase;
/** The list's pool: one connection, so a connection left behind the lock would block the next call. */
let knex: Knex;
let locker: Knex;
let observer: Knex;

beforeAll(async () => {
  db = await pooledTestDatabase('supbnd');
  knex = await db.pool(1);
  locker = await db.pool(1);
  observer = await db.pool(1);
  await runMigrations(knex, notificationMigrations);
});

afterAll(async () => {
  await db?.close();
});

let seq = Math.floor(Math.random() * 1_000_000);
function uniqueNumber(): string {
  return `+1556${String(++seq).padStart(7, '0')}`;
}

const lockSuppressions = () => lockTable(locker, 'suppressions');

/** Statements on `suppressions` still running in the server (the locker's LOCK is idle in its transaction). */
const statementsInServer = () => activeStatements(observer, '%suppressions%');

function setup() {
  const registry = new Registry();
  const list = new Suppressions({
    store: new DatabaseSuppressionStore(knex, { lookupTimeoutMs: BOUND_MS }),
    lookupTimeoutMs: BOUND_MS,
    registry,
  });
  const timeouts = async (): Promise<number> => {
    const m = await registry.getSingleMetric('notification_suppression_lookup_timeouts_total')!.get();
    return m.values.find((v) => v.labels.stage === 'api')?.value ?? 0;
  };
  return { list, timeouts };
}

const CALLS: [string, (list: Suppressions, number: string) => Promise<unknown>][] = [
  ['add', (l, n) => l.add({ channel: 'sms', recipient: n, reason: 'stop_keyword', source: 'inbound:t' })],
  ['addEntry', (l, n) => l.addEntry({ channel: 'sms', recipient: n, reason: 'manual', source: 'api:c' })],
  ['remove', (l, n) => l.remove('sms', n)],
  ['removeByHand', (l, n) => l.removeByHand('sms', n, 'api:c')],
  ['isSuppressed', (l, n) => l.isSuppressed('sms', n)],
  ['reasonsOf', (l, n) => l.reasonsOf('sms', [n])],
  ['list', (l) => l.list('sms')],
];

describe('every suppression list call on PostgreSQL, the suppressions table locked', () => {
  it.each(CALLS)(
    '%s answers a timeout instead of hanging, its statement cancelled while the lock is held; the pool stays usable and the next call works',
    async (_name, call) => {
      const { list, timeouts } = setup();
      const number = uniqueNumber();
      const lock = await lockSuppressions();
      try {
        const err = await notHung(
          call(list, number).then(
            () => new Error('answered under the lock'),
            (e: unknown) => e,
          ),
          'the call',
        );
        expect(err).toBeInstanceOf(SuppressionLookupError);
        expect(err).toMatchObject({ reason: 'timeout', code: 'UNAVAILABLE' });
        expect((err as Error).message).not.toContain(number);
        expect((err as Error).message).not.toMatch(/select|insert|delete/i);
        expect(await timeouts()).toBe(1);
        // Cancelled in the server although the lock is still held...
        await until(
          async () => (await statementsInServer()) === 0,
          'the statement to be cancelled',
          HANG_DEADLINE_MS,
        );
        // ...and the pool's one connection is not stuck behind it.
        const { rows } = (await notHung(knex.raw('SELECT 41 + 1 AS n'), 'the next statement')) as {
          rows: { n: number }[];
        };
        expect(rows[0]!.n).toBe(42);
      } finally {
        await lock.release();
      }
      // A cancelled add did not happen (its INSERT rolled back): the caller's retry adds it.
      expect(await list.isSuppressed('sms', number)).toBe(false);
      expect(await list.add({ channel: 'sms', recipient: number, reason: 'manual', source: 'api:c' })).toBe(
        true,
      );
      expect(await list.reasonsOf('sms', [number])).toEqual(new Map([[number, 'manual']]));
      await list.removeByHand('sms', number, 'api:c');
      expect(await list.isSuppressed('sms', number)).toBe(false);
    },
  );
});
