/** The suppression contract on real PostgreSQL, plus what only a database shows: concurrent adds agree. */
import type { Knex } from 'knex';
import type { Channel } from '../../../services/notification/delivery/driver';
import { DatabaseDeliveryStore } from '../../../services/notification/delivery/database-store';
import {
  MAX_SUPPRESSION_LOOKUP_KEYS,
  Suppressions,
} from '../../../services/notification/delivery/suppression';
import { DatabaseSuppressionStore } from '../../../services/notification/delivery/suppression-database-store';
import { notificationMigrations } from '../../../services/notification/migrations';
import { runMigrations } from '../../../shared/storage/migrations';
import { pooledTestDatabase, type PooledTestDatabase } from '../../support/database';
import { describeSuppressionContract } from './suppression-contract';

let db: PooledTestDatabase;
const pool = (): Promise<Knex> => db.pool();

beforeAll(async () => {
  db = await pooledTestDatabase('suppg');
  await runMigrations(await pool(), notificationMigrations);
});

afterAll(async () => {
  await db?.close();
});

describeSuppressionContract('DatabaseSuppressionStore on PostgreSQL', async () => {
  const knex = await pool();
  return {
    suppressions: new DatabaseSuppressionStore(knex),
    // The contract drives time by hand: the store takes the caller's clock.
    deliveries: new DatabaseDeliveryStore(knex, { clock: 'caller' }),
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

/** The database store, counting its lookups and failing them on demand. */
class CountingStore extends DatabaseSuppressionStore {
  lookups: number[] = [];
  fail = false;
  override async findSuppressed(channel: Channel, recipients: readonly string[]): Promise<Set<string>> {
    this.lookups.push(recipients.length);
    if (this.fail) throw new Error('suppression store down');
    return super.findSuppressed(channel, recipients);
  }
}

/** The counting store whose next query waits for `release` (while `hold`). */
class GatedStore extends CountingStore {
  hold = false;
  private opened!: () => void;
  private entering!: () => void;
  entered = new Promise<void>((resolve) => (this.entering = resolve));
  private readonly gate = new Promise<void>((resolve) => (this.opened = resolve));
  release(): void {
    this.hold = false;
    this.opened();
  }
  override async findSuppressed(channel: Channel, recipients: readonly string[]): Promise<Set<string>> {
    if (this.hold) {
      this.lookups.push(recipients.length);
      this.entering();
      await this.gate;
      return DatabaseSuppressionStore.prototype.findSuppressed.call(this, channel, recipients);
    }
    return super.findSuppressed(channel, recipients);
  }
}

describe('Suppressions.findSuppressed on PostgreSQL, grouped per turn', () => {
  it('answers the lookups of one turn with one query, each caller only its own recipients', async () => {
    const store = new CountingStore(await pool());
    const list = new Suppressions({ store });
    await list.add({
      channel: 'email',
      recipient: 'gone1@example.com',
      reason: 'hard_bounce',
      source: 'api',
    });
    await list.add({
      channel: 'email',
      recipient: 'gone2@example.com',
      reason: 'spam_complaint',
      source: 'api',
    });
    await list.add({ channel: 'sms', recipient: '+15550001111', reason: 'unsubscribed', source: 'api' });
    store.lookups = [];
    const [a, b, c, sms] = await Promise.all([
      list.findSuppressed('email', ['gone1@example.com', 'ok1@example.com']),
      list.findSuppressed('email', ['gone2@example.com']),
      list.findSuppressed('email', ['ok2@example.com']),
      list.findSuppressed('sms', ['+15550001111', '+15550002222']),
    ]);
    expect([...a]).toEqual(['gone1@example.com']);
    expect([...b]).toEqual(['gone2@example.com']);
    expect([...c]).toEqual([]);
    expect([...sms]).toEqual(['+15550001111']);
    // One query for the three email lookups (4 distinct recipients), one for the SMS one.
    expect(store.lookups.sort()).toEqual([2, 4]);
  });

  it(`splits a turn's lookups at ${MAX_SUPPRESSION_LOOKUP_KEYS} recipients per query`, async () => {
    const store = new CountingStore(await pool());
    const list = new Suppressions({ store });
    await list.add({ channel: 'email', recipient: 'last@example.com', reason: 'hard_bounce', source: 'api' });
    store.lookups = [];
    const calls = Array.from({ length: 15 }, (_, i) =>
      list.findSuppressed(
        'email',
        Array.from({ length: 100 }, (_, j) =>
          i === 14 && j === 99 ? 'last@example.com' : `r${i}-${j}@example.com`,
        ),
      ),
    );
    const results = await Promise.all(calls);
    expect(store.lookups).toEqual([MAX_SUPPRESSION_LOOKUP_KEYS, 1500 - MAX_SUPPRESSION_LOOKUP_KEYS]);
    expect(results.slice(0, 14).every((r) => r.size === 0)).toBe(true);
    expect([...results[14]!]).toEqual(['last@example.com']);
  });

  it('lookups that arrive while a query runs wait for it and share the next query', async () => {
    const store = new GatedStore(await pool());
    const list = new Suppressions({ store });
    await list.add({ channel: 'email', recipient: 'held@example.com', reason: 'hard_bounce', source: 'api' });
    store.lookups = [];
    store.hold = true;
    const first = list.findSuppressed('email', ['held@example.com']);
    await store.entered;
    // Three later turns while the first query is held: no query of their own yet.
    const later: Promise<Set<string>>[] = [];
    for (const r of ['a@example.com', 'held@example.com', 'b@example.com']) {
      later.push(list.findSuppressed('email', [r]));
      await new Promise((resolve) => setImmediate(resolve));
    }
    expect(store.lookups).toEqual([1]);
    store.release();
    expect([...(await first)]).toEqual(['held@example.com']);
    const answers = await Promise.all(later);
    expect(answers.map((a) => [...a])).toEqual([[], ['held@example.com'], []]);
    expect(store.lookups).toEqual([1, 3]);
  });

  it('a failing lookup rejects every caller of its group, and the next turn queries again', async () => {
    const store = new CountingStore(await pool());
    const list = new Suppressions({ store });
    store.fail = true;
    const failed = await Promise.allSettled([
      list.findSuppressed('email', ['x@example.com']),
      list.findSuppressed('email', ['y@example.com']),
    ]);
    expect(failed.map((r) => r.status)).toEqual(['rejected', 'rejected']);
    expect(store.lookups).toEqual([2]);
    store.fail = false;
    expect([...(await list.findSuppressed('email', ['x@example.com']))]).toEqual([]);
    expect(store.lookups).toEqual([2, 1]);
  });
});
